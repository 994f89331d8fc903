#!/usr/bin/python3
"""Writes small PyTorch-style memory snapshot pickles for tensormem's tests.

The files mimic what torch.cuda.memory._dump_snapshot() pickles (segments with
blocks, per-device traces, allocator settings), built from plain Python data
so that no PyTorch install is needed. Run with Debian's python3:

    tools/make_snapshot_pickle.py tests/data/trace

It writes snapshot_protocol2.pickle, snapshot_protocol4.pickle (the same
snapshot, different opcodes) and legacy_segments.pickle (a bare segment
list). The expected traces are tests/data/trace/snapshot_device{0,1}.trace.
"""
import pickle
import sys
from pathlib import Path

MIB = 1 << 20
SEG0 = 0x7F0000000000  # device 0, default stream
SEG1 = 0x7F0000200000  # device 0, a side stream
SEG2 = 0x7F1000000000  # device 1
SIDE_STREAM = 0x55AA00

# One frames list shared by many entries: pickle stores it once and refers
# back to it through the memo (BINGET), as real snapshots do.
FRAMES = [
    {"filename": "train.py", "line": 42, "name": "forward"},
    {"filename": "módulo.py", "line": 7, "name": "conv2d"},
]


def block(size, requested, state):
    return {"size": size, "requested_size": requested, "state": state, "frames": FRAMES}


def segment(device, address, stream, blocks):
    return {
        "device": device,
        "address": address,
        "total_size": 2 * MIB,
        "allocated_size": sum(b["size"] for b in blocks if b["state"] != "inactive"),
        "active_size": sum(b["size"] for b in blocks if b["state"] != "inactive"),
        "requested_size": sum(b["requested_size"] for b in blocks if b["state"] != "inactive"),
        "stream": stream,
        "segment_type": "large",
        "segment_pool_id": (0, 0),
        "is_expandable": False,
        "frames": FRAMES,
        "blocks": blocks,
    }


def entry(action, addr, size, stream, time_us, **extra):
    result = {"action": action, "addr": addr, "size": size, "stream": stream,
              "time_us": time_us, "frames": FRAMES}
    result.update(extra)
    return result


def snapshot():
    segments = [
        segment(0, SEG0, 0, [
            block(512, 500, "active_allocated"),         # X: live before the trace
            block(1024, 1000, "active_allocated"),       # Y: allocated in the trace
            block(2 * MIB - 1536, 0, "inactive"),
        ]),
        segment(0, SEG1, SIDE_STREAM, [
            block(512, 0, "inactive"),                   # Z: allocated and freed twice
            block(1536, 1536, "active_pending_free"),    # P: live before the trace
            block(2 * MIB - 2048, 0, "inactive"),        # W (at SEG1 + 2048): freed
        ]),
        segment(1, SEG2, 0, [
            block(4096, 4096, "active_allocated"),
            block(2 * MIB - 4096, 0, "inactive"),
        ]),
    ]
    t0 = 1_700_000_000_000_000  # epoch microseconds
    device0 = [
        entry("segment_alloc", SEG1, 2 * MIB, SIDE_STREAM, t0 - 5),
        entry("alloc", SEG1, 256, SIDE_STREAM, t0, compile_context="N/A"),
        entry("alloc", SEG0 + 512, 1000, 0, t0 + 10, user_metadata=2**70),
        entry("free_requested", SEG1, 256, SIDE_STREAM, t0 + 15),
        entry("free_completed", SEG1, 256, SIDE_STREAM, t0 + 20),
        entry("free_completed", SEG1 + 2048, 2048, 0, t0 + 30),
        entry("alloc", SEG1, 128, SIDE_STREAM, t0 + 40),
        entry("free_completed", SEG1, 128, SIDE_STREAM, t0 + 50),
        {"action": "oom", "device_free": 123, "size": 4 << 30, "stream": 0,
         "time_us": t0 + 60, "frames": FRAMES},
        entry("snapshot", 0, 3036, 0, t0 + 70),
    ]
    device1 = [entry("alloc", SEG2, 4096, 0, t0 + 5)]
    return {
        "segments": segments,
        "device_traces": [device0, device1],
        "allocator_settings": {
            "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:False",
            "max_split_size": -1,
            "garbage_collection_threshold": 0.0,
            "expandable_segments": False,
            "roundup_power2_divisions": {"1": 0, "2": 0},
            "release_lock_on_cudamalloc": None,
        },
        "external_annotations": [],
    }


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/trace")
    out.mkdir(parents=True, exist_ok=True)
    data = snapshot()
    (out / "snapshot_protocol2.pickle").write_bytes(pickle.dumps(data, protocol=2))
    (out / "snapshot_protocol4.pickle").write_bytes(pickle.dumps(data, protocol=4))
    (out / "legacy_segments.pickle").write_bytes(pickle.dumps(data["segments"], protocol=2))


if __name__ == "__main__":
    main()
