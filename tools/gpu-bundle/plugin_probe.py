"""What PyTorch's own CUDA-allocator hooks do when tensormem is the
allocator (torch.cuda.memory.CUDAPluggableAllocator): each probe runs, and
its outcome ("works", or the exception it raised) is written as JSON. Also
checks that out of memory is a Python exception at the allocation, after
which the allocator still serves.

  python3 plugin_probe.py --out probe.json

Exit 0 when every probe ran to an outcome and out of memory behaved; 77 when
there is no CUDA-enabled PyTorch or GPU.
"""

import argparse
import json
import os
import sys
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))


def probes(torch):
    def record_stream():
        side = torch.cuda.Stream()
        tensor = torch.ones(1 << 20, device="cuda")
        tensor.record_stream(side)

    def cudnn_benchmark():
        torch.backends.cudnn.benchmark = True
        try:
            conv = torch.nn.Conv2d(64, 64, 3, padding=1).cuda()
            conv(torch.randn(8, 64, 56, 56, device="cuda")).sum().backward()
            torch.cuda.synchronize()
        finally:
            torch.backends.cudnn.benchmark = False

    def cuda_graph():
        static = torch.randn(1024, device="cuda")
        graph = torch.cuda.CUDAGraph()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            static * 2  # warm-up outside the capture
        torch.cuda.current_stream().wait_stream(side)
        with torch.cuda.graph(graph):
            out = static * 2
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(out, static * 2)

    return {
        "torch.cuda.empty_cache": torch.cuda.empty_cache,
        "torch.cuda.memory_stats": torch.cuda.memory_stats,
        "torch.cuda.max_memory_reserved": torch.cuda.max_memory_reserved,
        "torch.cuda.memory_allocated": torch.cuda.memory_allocated,
        "torch.cuda.reset_peak_memory_stats": torch.cuda.reset_peak_memory_stats,
        "torch.cuda.mem_get_info": torch.cuda.mem_get_info,
        "Tensor.record_stream": record_stream,
        "cudnn.benchmark convolution": cudnn_benchmark,
        "torch.cuda.graph capture and replay": cuda_graph,
        "torch.cuda.memory._snapshot": torch.cuda.memory._snapshot,
    }


def out_of_memory(torch, limit_bytes):
    """A request over the limit must raise at once; the allocator then still serves."""
    try:
        torch.empty(2 * limit_bytes, dtype=torch.uint8, device="cuda")
    except RuntimeError as error:  # torch.OutOfMemoryError is a RuntimeError too
        message = str(error)
        after = torch.ones(1 << 20, device="cuda").sum().item()
        return {"raised": type(error).__name__, "message": message[:600],
                "mentions_tensormem": "tensormem" in message,
                "serves_after": after == float(1 << 20)}
    return {"raised": None}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--memory-limit", default="4GiB")
    args = parser.parse_args()
    import torch  # noqa: PLC0415

    if not torch.cuda.is_available():
        print("plugin_probe: PyTorch sees no GPU", file=sys.stderr)
        return 77
    from tensormem_torch.cuda import cuda_stats, enable_cuda  # noqa: PLC0415

    enable_cuda(policy="tight", sub_allocator="cuda-vmm", memory_limit=args.memory_limit)
    result = {"torch": torch.__version__, "probes": {}}
    torch.ones(1, device="cuda")  # the plug-in's allocators exist from here
    limit = cuda_stats()["devices"]["0"]["bytes_limit"]
    try:
        result["out_of_memory"] = out_of_memory(torch, limit)
    except Exception:  # noqa: BLE001
        result["out_of_memory"] = {"crashed": traceback.format_exc()[-600:]}
    # In this order: a graph capture that fails must not disturb the others.
    for name, probe in probes(torch).items():
        try:
            probe()
            result["probes"][name] = "works"
        except Exception as error:  # noqa: BLE001  (the outcome is the result)
            result["probes"][name] = f"raises {type(error).__name__}: {str(error)[:300]}"
    with open(args.out, "w") as file:
        json.dump(result, file, indent=2)
    print(json.dumps(result, indent=2))
    oom = result["out_of_memory"]
    ok = oom.get("raised") and oom.get("mentions_tensormem") and oom.get("serves_after")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
