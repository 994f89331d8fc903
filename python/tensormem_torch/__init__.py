"""The former name of :mod:`tensormem.torch`, kept so existing scripts run unchanged."""

from tensormem.torch import __all__, dump, enable, is_enabled, library_path, reset_peak, stats  # noqa: F401
