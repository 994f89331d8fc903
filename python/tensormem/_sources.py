"""Inputs as the library takes them: a workload's path or PyTorch snapshot
dict, and byte sizes as numbers or text."""

from __future__ import annotations

import os
import pickle
from typing import Any, Dict, Union

from . import _tensormem

ByteSize = Union[int, str]  # bytes, or text such as "2GiB"
PathLike = Union[str, "os.PathLike[str]"]
# A path, or the dict torch.cuda.memory._snapshot() returns.
Source = Union[PathLike, Dict[str, Any]]


def native_source(source: Source) -> Union[str, bytes]:
    """What the library reads: a path as text, or a snapshot dict pickled.

    A snapshot dict travels pickled, as torch.cuda.memory._dump_snapshot
    writes it; the library reads pickles itself.
    """
    if isinstance(source, dict):
        return pickle.dumps(source, protocol=4)
    return os.fspath(source)


def parse_bytes(value: ByteSize) -> int:
    """Bytes from an int or from text such as "2GiB", "512 MiB" or "4096"."""
    if isinstance(value, str):
        return _tensormem.parse_bytes(value)
    return int(value)
