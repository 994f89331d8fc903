"""Traces: reading every format, building and converting, replay and its report."""

import gzip

import pytest

import tensormem


def test_every_format_reads_as_its_converted_trace(trace_data):
    pairs = [
        ("rmm_log.csv", "rmm_log.trace", "rmm"),
        ("snapshot_protocol4.pickle", "snapshot_device0.trace", "pytorch"),
        ("legacy_segments.pickle", "legacy_segments.trace", "pytorch"),
        ("buffers_half_open.csv", "buffers.trace", "buffers"),
    ]
    for source, expected, format in pairs:
        trace, details = tensormem.read_trace(trace_data / source, details=True)
        assert details["format"] == format, source
        assert trace.text() == tensormem.read_trace(trace_data / expected).text(), source


def test_snapshot_details_and_device(trace_data):
    snapshot = trace_data / "snapshot_protocol4.pickle"
    trace, details = tensormem.read_trace(snapshot, details=True)
    assert details["devices"] == 2 and details["blocks_live_at_start"] >= 0
    device1 = tensormem.read_trace(snapshot, "pytorch", device=1)
    assert device1.text() == tensormem.read_trace(trace_data / "snapshot_device1.trace").text()
    assert device1.text() != trace.text()


def test_missing_file_and_bad_content(tmp_path, trace_data):
    with pytest.raises(FileNotFoundError, match="missing.trace"):
        tensormem.read_trace(tmp_path / "missing.trace")
    bad = tmp_path / "bad.trace"
    bad.write_text("# tensormem-trace v1\na 1 12\nf 2\n")
    with pytest.raises(ValueError, match="bad.trace:3"):
        tensormem.read_trace(bad)
    with pytest.raises(ValueError, match="unknown trace format 'onnx'"):
        tensormem.read_trace(trace_data / "rmm_log.csv", "onnx")


def test_built_trace_summary_write_and_read_back(tmp_path):
    trace = tensormem.Trace()
    trace.alloc(1, 1000)
    trace.alloc(2, 3000, alignment=512)
    trace.free(1)
    trace.alloc(3, 500)
    assert len(trace) == 4
    summary = trace.summary()
    assert summary == {
        "events": 4, "allocs": 3, "frees": 1, "failed_allocs": 0,
        "live_at_end": 2, "peak_live_bytes": 4000,
    }
    for name in ("built.trace", "built.trace.gz"):
        trace.write(tmp_path / name)
        assert tensormem.read_trace(tmp_path / name).text() == trace.text()
    assert gzip.open(tmp_path / "built.trace.gz").read().decode() == trace.text()


def test_summary_refuses_a_free_of_a_block_that_is_not_live():
    trace = tensormem.Trace()
    trace.alloc(1, 10)
    trace.free(7)
    with pytest.raises(ValueError, match="event 1"):
        trace.summary()


def test_buffers_round_trip():
    sizes, starts, ends = [100, 200, 300], [0, 1, 1], [2, 3, 2]
    trace = tensormem.trace_from_buffers(sizes, starts, ends)
    assert trace.summary()["peak_live_bytes"] == 600
    buffers = trace.to_buffers()
    assert sorted(buffers["sizes"]) == sizes
    for key in ("ids", "starts", "ends"):
        assert len(buffers[key]) == 3
    closed = trace.to_buffers(closed=True)
    assert [e - 1 for e in buffers["ends"]] == closed["ends"]


def test_replay_metrics_agree_with_the_summary(source_dir):
    path = source_dir / "data" / "models" / "efficientnet_b0.infer_b1.trace.gz"
    trace = tensormem.read_trace(path)
    metrics = tensormem.replay(trace, memory_limit="1GiB")
    summary = trace.summary()
    assert metrics["peak_live_bytes"] == summary["peak_live_bytes"]
    assert metrics["allocs"] == summary["allocs"] and metrics["failed_allocs"] == 0
    assert metrics["peak_pool_bytes"] >= metrics["peak_in_use_bytes"] >= metrics["peak_live_bytes"]
    assert metrics["fragmentation"] == pytest.approx(
        metrics["peak_pool_bytes"] / metrics["peak_live_bytes"])
    assert "limit 1.00GiB" in metrics["allocator_config"]
    assert metrics["seconds"] == 0
    timed = tensormem.replay(path, "system", timing=True)
    assert timed["seconds"] > 0 and timed["ns_per_op"] > 0


def test_replay_under_a_small_limit_counts_failures():
    trace = tensormem.trace_from_buffers([600 << 10] * 2, [0, 0], [1, 1])
    metrics = tensormem.replay(trace, memory_limit="1MiB", growth=False)
    assert metrics["failed_allocs"] == 1 and metrics["allocs"] == 1


def test_replay_refuses_unknown_allocators_and_options():
    trace = tensormem.trace_from_buffers([64], [0], [1])
    with pytest.raises(ValueError, match="buddy"):
        tensormem.replay(trace, "buddy")
    with pytest.raises(ValueError, match="unknown allocator option 'limit'"):
        tensormem.replay(trace, limit=5)
    with pytest.raises(ValueError, match="fragmentation"):
        tensormem.replay(trace, fragmentation_fraction=2.0)


def test_replay_report_is_written(tmp_path, trace_data):
    page = tmp_path / "replay.html"
    metrics = tensormem.write_replay_report(
        trace_data / "rmm_log.trace", page, memory_limit="1GiB", title="rmm log")
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and "rmm log" in text
    assert metrics["events"] == len(tensormem.read_trace(trace_data / "rmm_log.trace"))


def test_replay_options_take_their_aliases():
    trace = tensormem.trace_from_buffers([600 << 10] * 2, [0, 0], [1, 1])
    by_key = tensormem.replay(trace, memory_limit="1MiB", growth=False, gc=True)
    by_alias = tensormem.replay(
        trace, memory_limit="1MiB", allow_growth=False, garbage_collection=True)
    assert by_alias == by_key and by_key["failed_allocs"] == 1
