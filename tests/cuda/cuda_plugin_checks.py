"""tensormem_torch.cuda against the fake driver, without PyTorch.

Loads python/tensormem_torch/cuda.py by path (the package's __init__ needs
torch), configures the plug-in, and calls the two exported functions as
CUDAPluggableAllocator would. Exit 0 when every check holds.
"""

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE = os.path.join(HERE, "..", "..", "python", "tensormem_torch", "cuda.py")


def main() -> int:
    spec = importlib.util.spec_from_file_location("tensormem_torch_cuda", MODULE)
    cuda = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cuda)

    try:
        cuda.configure_cuda(sub_allocator="cuda-magic")
        raise AssertionError("a bad sub-allocator was accepted")
    except ValueError as error:
        # Named, with the kinds that exist (the CUDA ones among them).
        assert "cuda-magic" in str(error) and "cuda-vmm" in str(error), error
    cuda.configure_cuda(memory_limit="256MiB", sub_allocator="cuda-vmm")
    cuda.cuda_mark_iteration()  # tight ignores it; configured, so no error
    library = cuda._load()
    block = library.tensormem_cuda_malloc(1 << 20, 0, None)
    assert block, cuda.cuda_last_error()
    stats = cuda.cuda_stats()
    assert stats["devices"]["0"]["bytes_in_use"] >= 1 << 20, stats
    assert not library.tensormem_cuda_malloc(1 << 30, 0, None)
    assert "out of memory on CUDA device 0" in cuda.cuda_last_error()
    library.tensormem_cuda_free(block, 1 << 20, 0, None)
    assert cuda.cuda_stats()["devices"]["0"]["bytes_in_use"] == 0
    # What torch.cuda.empty_cache cannot do with the plug-in.
    pool = cuda.cuda_stats()["devices"]["0"]["pool_bytes"]
    assert pool > 0 and cuda.empty_cache() == pool, pool
    assert cuda.cuda_stats()["devices"]["0"]["pool_bytes"] == 0
    print("tensormem_torch.cuda: 8 checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
