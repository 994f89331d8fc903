"""tensormem's allocators as PyTorch's CUDA allocator.

libtensormem_cuda_torch.so exports the two functions
``torch.cuda.memory.CUDAPluggableAllocator`` loads; this module sets its
options (ctypes) and installs it::

    import torch, tensormem_torch
    tensormem_torch.enable_cuda(sub_allocator="cuda-vmm", memory_limit="20GiB",
                                trace_path="run.trace.gz")
    y = model(x.cuda())                # CUDA tensors now come from tensormem
    print(tensormem_torch.cuda_stats()["devices"]["0"]["peak_bytes_in_use"])

Options are the allocator specification's keys (each overrides the
TENSORMEM_* variable of the same name): policy, config, sub_allocator
("cuda-vmm" by default, "cuda" or "cuda-async"), memory_limit (per device,
default the device's memory), growth, gc, ...; plus trace_path (events carry
stream= and device=) and report_path. enable_cuda must run before the first
CUDA allocation.
TENSORMEM_CUDA_TORCH_LIBRARY, when set, names the library to load.
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import os
from typing import Any, Dict, Optional

__all__ = ["enable_cuda", "configure_cuda", "cuda_stats", "cuda_last_error",
           "cuda_library_path", "cuda_mark_iteration", "empty_cache"]

_LIBRARY_NAME = "libtensormem_cuda_torch.so"
_library: Optional[ctypes.CDLL] = None


def cuda_library_path() -> str:
    """Path of libtensormem_cuda_torch.so, or FileNotFoundError naming where it looked."""
    explicit = os.environ.get("TENSORMEM_CUDA_TORCH_LIBRARY")
    if explicit:
        if not os.path.isfile(explicit):
            raise FileNotFoundError(f"TENSORMEM_CUDA_TORCH_LIBRARY={explicit}: no such file")
        return explicit
    # Shipped inside the tensormem package; found without importing it.
    spec = importlib.util.find_spec("tensormem")
    if spec is not None and spec.origin:
        bundled = os.path.join(os.path.dirname(spec.origin), _LIBRARY_NAME)
        if os.path.isfile(bundled):
            return bundled
    raise FileNotFoundError(
        f"{_LIBRARY_NAME} not found next to the tensormem package; this tensormem "
        "was built without the CUDA toolkit (or set TENSORMEM_CUDA_TORCH_LIBRARY)")


def _load() -> ctypes.CDLL:
    global _library
    if _library is None:
        library = ctypes.CDLL(cuda_library_path())
        library.tensormem_cuda_enable.argtypes = [ctypes.c_char_p]
        library.tensormem_cuda_enable.restype = ctypes.c_int
        for name in ("tensormem_cuda_last_error", "tensormem_cuda_stats_json"):
            getattr(library, name).restype = ctypes.c_void_p
        library.tensormem_cuda_free_string.argtypes = [ctypes.c_void_p]
        library.tensormem_cuda_malloc.argtypes = [ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
        library.tensormem_cuda_malloc.restype = ctypes.c_void_p
        library.tensormem_cuda_free.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                                ctypes.c_void_p]
        library.tensormem_cuda_empty_cache.restype = ctypes.c_uint64
        library.tensormem_cuda_mark_iteration.restype = ctypes.c_int
        _library = library
    return _library


def _take_string(pointer: Optional[int]) -> Optional[str]:
    if not pointer:
        return None
    try:
        return ctypes.string_at(pointer).decode()
    finally:
        _load().tensormem_cuda_free_string(pointer)


def cuda_last_error() -> str:
    """Why the last request failed (out of memory, bad free, setup), or ""."""
    return _take_string(_load().tensormem_cuda_last_error()) or ""


def configure_cuda(**options: Any) -> None:
    """Sets the plug-in's options without touching PyTorch (ValueError on bad ones)."""
    text = json.dumps(options).encode()
    if _load().tensormem_cuda_enable(text) != 0:
        raise ValueError(f"tensormem: {cuda_last_error()}")


def enable_cuda(**options: Any) -> None:
    """Makes tensormem PyTorch's CUDA allocator (before any CUDA allocation)."""
    configure_cuda(**options)
    import torch  # noqa: PLC0415  (only needed here)

    if not torch.cuda.is_available():
        raise RuntimeError("tensormem: enable_cuda needs a CUDA-enabled PyTorch and a GPU")
    # The throwing entry point: out of memory is a RuntimeError at the
    # allocation ("CUDA out of memory. tensormem: ..."), not a null pointer.
    allocator = torch.cuda.memory.CUDAPluggableAllocator(
        cuda_library_path(), "tensormem_cuda_malloc_or_throw", "tensormem_cuda_free")
    torch.cuda.memory.change_current_allocator(allocator)


def cuda_stats() -> Dict[str, Any]:
    """Per-device statistics: TensorFlow-named counters plus stream waits."""
    text = _take_string(_load().tensormem_cuda_stats_json())
    return json.loads(text) if text else {"devices": {}}


def cuda_mark_iteration() -> None:
    """Marks the start of a training step or inference request: under the
    planned policy (policy="planned"), the steps between marks are the loop it
    learns and serves from a plan; other policies ignore it."""
    if _load().tensormem_cuda_mark_iteration() != 0:
        raise RuntimeError("tensormem: the CUDA plug-in is not configured: call "
                           "enable_cuda() first")


def empty_cache() -> int:
    """Gives free device memory back to the driver; returns the bytes given back.

    ``torch.cuda.empty_cache()`` does nothing with the plug-in (PyTorch's
    pluggable allocator has no hook for it): call this instead.
    """
    return int(_load().tensormem_cuda_empty_cache())
