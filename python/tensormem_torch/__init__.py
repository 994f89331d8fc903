"""The former name of :mod:`tensormem.torch`, kept so existing scripts run unchanged."""

from tensormem.torch import __all__, dump, enable, is_enabled, library_path, reset_peak, stats  # noqa: F401
from tensormem_torch.cuda import configure_cuda, cuda_last_error, cuda_stats, enable_cuda  # noqa: F401
