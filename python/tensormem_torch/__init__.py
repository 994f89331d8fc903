"""The former name of :mod:`tensormem.torch`, kept so existing scripts run unchanged.

The CUDA names come from :mod:`tensormem_torch.cuda`, which needs no compiled
module; the CPU names are taken from :mod:`tensormem.torch` on first use, so
that the GPU bundle, which ships only the CUDA half, imports this package.
"""

import importlib

from tensormem_torch.cuda import (  # noqa: F401
    configure_cuda, cuda_last_error, cuda_mark_iteration, cuda_stats, empty_cache, enable_cuda)

_CPU_NAMES = ("dump", "enable", "is_enabled", "library_path", "reset_peak", "stats")
__all__ = list(_CPU_NAMES) + [
    "configure_cuda", "cuda_last_error", "cuda_mark_iteration", "cuda_stats", "empty_cache",
    "enable_cuda"]


def __getattr__(name):
    if name in _CPU_NAMES:
        return getattr(importlib.import_module("tensormem.torch"), name)
    raise AttributeError(f"module 'tensormem_torch' has no attribute '{name}'")
