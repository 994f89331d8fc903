"""tensormem's BFC allocator as PyTorch's CPU allocator, from Python.

ctypes loads libtensormem_torch.so, which ships inside the package next to
this module (built by tensormem's CMake when libtorch-dev is installed), and
calls its C functions::

    import torch, tensormem.torch
    tensormem.torch.enable(memory_limit="4GiB", trace_path="run.trace.gz")
    y = model(x)                              # CPU tensors now come from tensormem
    print(tensormem.torch.stats()["peak_bytes_in_use"])
    tensormem.torch.reset_peak()

Options (each overrides the TENSORMEM_* variable of the same meaning):
memory_limit (bytes or "2GiB"), sub_allocator ("vmm", the default, or "host"), allow_growth,
garbage_collection, trace_path, report_path. TENSORMEM_TORCH_LIBRARY, when
set, names another copy of the library to load.
"""

from __future__ import annotations

import ctypes
import json
import os
from typing import Any, Dict, Optional

import torch  # noqa: F401  (loads libc10 before the plug-in needs it)

__all__ = ["enable", "is_enabled", "stats", "dump", "reset_peak", "mark_iteration",
           "library_path"]

_library: Optional[ctypes.CDLL] = None

# absl::StatusCode values tensormem_torch_enable returns (0 is success).
_INVALID_ARGUMENT = 3
_NOT_FOUND = 5
_FAILED_PRECONDITION = 9
_RESOURCE_EXHAUSTED = 8


def library_path() -> str:
    """Path of libtensormem_torch.so, or raises FileNotFoundError saying where it looked."""
    explicit = os.environ.get("TENSORMEM_TORCH_LIBRARY")
    if explicit:
        if not os.path.isfile(explicit):
            raise FileNotFoundError(f"TENSORMEM_TORCH_LIBRARY={explicit}: no such file")
        return explicit
    bundled = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libtensormem_torch.so")
    if os.path.isfile(bundled):
        return bundled
    raise FileNotFoundError(
        f"{bundled}: no such file; this tensormem was built without libtorch-dev "
        "(or set TENSORMEM_TORCH_LIBRARY)")


def _load():
    global _library
    if _library is None:
        library = ctypes.CDLL(library_path(), mode=ctypes.RTLD_GLOBAL)
        library.tensormem_torch_enable.argtypes = [ctypes.c_char_p]
        library.tensormem_torch_enable.restype = ctypes.c_int
        library.tensormem_torch_is_enabled.restype = ctypes.c_int
        library.tensormem_torch_reset_peak.restype = ctypes.c_int
        library.tensormem_torch_mark_iteration.restype = ctypes.c_int
        for name in ("tensormem_torch_last_error", "tensormem_torch_stats_json",
                     "tensormem_torch_dump_json"):
            getattr(library, name).restype = ctypes.c_void_p
        library.tensormem_torch_free_string.argtypes = [ctypes.c_void_p]
        _library = library
    return _library


def _take_string(library, pointer):
    if not pointer:
        return None
    try:
        return ctypes.string_at(pointer).decode("utf-8")
    finally:
        library.tensormem_torch_free_string(pointer)


def _last_error(library):
    return _take_string(library, library.tensormem_torch_last_error()) or "unknown error"


def _error_for(code: int, message: str) -> Exception:
    if code == _INVALID_ARGUMENT:
        return ValueError(message)
    if code == _NOT_FOUND:
        return FileNotFoundError(message)
    if code == _RESOURCE_EXHAUSTED:
        return MemoryError(message)
    return RuntimeError(message)  # _FAILED_PRECONDITION: already enabled


def enable(**options: Any) -> None:
    """Makes tensormem PyTorch's CPU allocator for the rest of the process.

    Raises ValueError for a bad option (the message names it), RuntimeError when
    already enabled with other options, FileNotFoundError without the library.
    """
    library = _load()
    code = library.tensormem_torch_enable(json.dumps(options).encode("utf-8"))
    if code != 0:
        raise _error_for(code, _last_error(library))


def is_enabled() -> bool:
    return _library is not None and bool(_library.tensormem_torch_is_enabled())


def _json_call(function_name):
    library = _load()
    text = _take_string(library, getattr(library, function_name)())
    if text is None:
        raise RuntimeError(_last_error(library))
    return json.loads(text)


def stats() -> Dict[str, Any]:
    """Counters like torch.cuda.memory_stats(), with TensorFlow's names:
    num_allocs, bytes_in_use, peak_bytes_in_use, pool_bytes, peak_pool_bytes,
    largest_free_block_bytes, live_bytes, peak_live_bytes, num_frees, ..."""
    return _json_call("tensormem_torch_stats_json")


def dump() -> Dict[str, Any]:
    """The allocator's memory dump: regions, chunks (offset, size, in use) and bins."""
    return _json_call("tensormem_torch_dump_json")


def reset_peak() -> None:
    """Restarts the peaks (and num_allocs) from the current use."""
    if _load().tensormem_torch_reset_peak() != 0:
        raise RuntimeError("tensormem is not enabled: call enable() first")


def mark_iteration() -> None:
    """Marks the start of a training step or inference request: under the
    planned policy (policy="planned"), the steps between marks are the loop it
    learns and serves from a plan; other policies ignore it."""
    if _load().tensormem_torch_mark_iteration() != 0:
        raise RuntimeError("tensormem is not enabled: call enable() first")
