"""tensormem.BfcAllocator: the BFC allocator as an object."""

import pytest

import tensormem


def test_alloc_free_and_stats():
    bfc = tensormem.BfcAllocator("64MiB", allow_growth=False)
    first = bfc.alloc(1000)
    second = bfc.alloc(5000, alignment=4096)
    assert first != second and second % 4096 == 0
    stats = bfc.stats()
    assert stats["num_allocs"] == 2
    assert stats["bytes_in_use"] == bfc.allocated_size(first) + bfc.allocated_size(second)
    assert bfc.allocated_size(first) == 1024  # rounded up to 256-byte multiples
    assert stats["bytes_limit"] == 64 << 20
    bfc.free(first)
    bfc.free(second)
    assert bfc.stats()["bytes_in_use"] == 0
    assert bfc.stats()["peak_bytes_in_use"] >= 1024 + 5120
    assert bfc.allocated_size(first) is None


def test_freed_space_is_reused_best_fit():
    bfc = tensormem.BfcAllocator(1 << 20, allow_growth=False)
    blocks = [bfc.alloc(4096) for _ in range(4)]
    bfc.free(blocks[1])
    assert bfc.alloc(4096) == blocks[1]


def test_dump_shows_regions_and_chunks():
    bfc = tensormem.BfcAllocator("16MiB", allow_growth=False)
    block = bfc.alloc(300)
    dump = bfc.dump()
    assert len(dump["regions"]) == 1
    assert sum(bin_["total_chunks_in_use"] for bin_ in dump["bins"]) == 1
    assert sum(bin_["total_requested_bytes_in_use"] for bin_ in dump["bins"]) == 300
    assert "16.00MiB" in bfc.dump_text() or "16777216" in bfc.dump_text()
    bfc.free(block)


def test_out_of_memory_raises_memory_error_with_the_explanation():
    bfc = tensormem.BfcAllocator("1MiB", allow_growth=False)
    bfc.alloc(600 << 10)
    with pytest.raises(MemoryError, match="out of memory.*largest free block"):
        bfc.alloc(600 << 10)
    assert bfc.stats()["num_allocs"] == 1


def test_misuse_raises_value_error():
    bfc = tensormem.BfcAllocator("1MiB")
    block = bfc.alloc(256)
    bfc.free(block)
    with pytest.raises(ValueError, match="free"):
        bfc.free(block)  # double free
    with pytest.raises(ValueError, match="power of two"):
        bfc.alloc(256, alignment=48)
    with pytest.raises(ValueError, match="bytes must be > 0"):
        bfc.alloc(0)


def test_bad_construction_raises_value_error():
    with pytest.raises(ValueError, match="memory_limit"):
        tensormem.BfcAllocator(0)
    with pytest.raises(ValueError, match="cuda"):
        tensormem.BfcAllocator("1MiB", sub_allocator="cuda")
    with pytest.raises(ValueError):
        tensormem.BfcAllocator("lots")


def test_host_memory_blocks_are_addresses():
    bfc = tensormem.BfcAllocator("4MiB", sub_allocator="host")
    block = bfc.alloc(4096)
    assert block > 4 << 20 and block % 256 == 0
    bfc.free(block)


def test_parse_bytes():
    assert tensormem.parse_bytes("2GiB") == 2 << 30
    assert tensormem.parse_bytes(4096) == 4096


def test_policies_and_streams_through_the_allocator_specification():
    bfc = tensormem.BfcAllocator("1GiB", policy="pytorch")
    assert bfc.policy == "pytorch"
    first = bfc.alloc(1000, stream=1)
    assert bfc.allocated_size(first) == 1024  # PyTorch rounds to 512 bytes
    bfc.free(first)
    # A block freed on stream 1 is never reused by stream 2.
    other = bfc.alloc(1000, stream=2)
    assert other != first
    assert bfc.alloc(1000, stream=1) == first
    assert bfc.stats()["pool_bytes"] == 4 << 20  # one 2 MiB segment per stream

    tf = tensormem.BfcAllocator("64MiB")
    assert tf.policy == "tf"
    block = tf.alloc(1000, stream=1)
    tf.free(block)
    assert tf.alloc(1000, stream=2) == block

    expandable = tensormem.BfcAllocator(
        "1GiB", policy="pytorch", config="expandable_segments:True", coalescing=True
    )
    assert "expandable_segments:True" in expandable.policy


def test_bad_allocator_options_name_the_key():
    with pytest.raises(ValueError, match="nosuch"):
        tensormem.BfcAllocator("1GiB", policy="nosuch")
    with pytest.raises(ValueError, match="max_split_size_mb"):
        tensormem.BfcAllocator("1GiB", policy="pytorch", config="max_split_size_mb:-3")
    with pytest.raises(ValueError, match="colour"):
        tensormem.BfcAllocator("1GiB", colour="blue")
    with pytest.raises(ValueError, match="memory_limit"):
        tensormem.BfcAllocator(0)


def test_planned_policy_serves_a_marked_loop_from_its_plan():
    allocator = tensormem.BfcAllocator(
        "1GiB", policy="planned", config="planning:inline")
    weights = allocator.alloc(8 << 20)
    for _ in range(6):
        allocator.mark_iteration()
        kept = [allocator.alloc(size) for size in (3 << 20, 5 << 20, 1 << 20)]
        scratch = allocator.alloc(2 << 20)
        allocator.free(scratch)
        for block in reversed(kept):
            allocator.free(block)
    allocator.mark_iteration()
    stats = allocator.stats()
    # Marks 1-3 compare two iterations, the fourth is followed, 4-6 served.
    assert stats["planned_iterations"] == 3
    assert stats["steady_peak_bytes_requested"] == (8 + 3 + 5 + 1 + 2) << 20
    assert stats["loop_plans"] == {"found": 1, "taken_over": 1,
                                   "without_room": 0, "not_repeated": 0,
                                   "waiting": 0}
    assert stats["bytes_in_use"] == 8 << 20
    allocator.free(weights)
