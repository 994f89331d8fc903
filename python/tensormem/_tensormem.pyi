"""Type stub of tensormem's C++ extension module (use the `tensormem` package)."""

import os
from typing import Any, Dict, List, Optional, Tuple, Union

__version__: str

def parse_bytes(text: str) -> int: ...
def plan(
    sizes: List[int],
    starts: List[int],
    ends: List[int],
    strategy: str,
    time_limit: Optional[float],
    alignment: int,
    threads: int,
    allow_slow: bool,
) -> Dict[str, Any]: ...
def strategies() -> List[Tuple[str, str]]: ...
def write_plan_report(
    path: str, sizes: List[int], starts: List[int], ends: List[int], offsets: List[int], title: str
) -> None: ...

class Trace:
    """An allocation workload: alloc and free events in order."""

    def __init__(self) -> None: ...
    def __len__(self) -> int: ...
    def alloc(self, id: int, bytes: int, alignment: int = 0) -> None:
        """Appends the allocation of block ``id`` (alignment 0: the allocator's default)."""
    def free(self, id: int) -> None:
        """Appends the free of block ``id``."""
    def summary(self) -> Dict[str, int]:
        """events, allocs, frees, failed_allocs, live_at_end and peak_live_bytes
        (as the replay counts them); ValueError when a free names no live block."""
    def to_buffers(self, closed: bool = False) -> Dict[str, List[int]]:
        """ids, sizes, starts, ends: block i lives from event starts[i] to ends[i]
        (exclusive; inclusive with ``closed``)."""
    def write(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes the .trace text (gzip when the path ends in .gz)."""
    def text(self) -> str:
        """The .trace text."""

def trace_from_buffers(sizes: List[int], starts: List[int], ends: List[int]) -> Trace: ...
def read_trace(
    source: Union[str, bytes], format: Optional[str], device: int
) -> Tuple[Trace, Dict[str, Any]]:
    """source: a path, or a pickled snapshot dict."""
def replay(trace: Trace, options: Dict[str, Any], timing: bool) -> Dict[str, Any]: ...
def write_replay_report(
    trace: Trace, path: str, title: str, options: Dict[str, Any]
) -> Dict[str, Any]: ...

class WhatIfResult:
    def json(self) -> Dict[str, Any]: ...
    def text(self) -> str: ...
    def write_html(self, path: str, title: str) -> None: ...

def whatif(
    source: Union[str, bytes, Trace],
    device: int,
    candidates: Optional[str],
    device_memory: Optional[int],
    min_limit: bool,
    timing: bool,
) -> WhatIfResult: ...

class BfcAllocator:
    def __init__(self, options: Dict[str, Any]) -> None:
        """options: the allocator specification's keys (policy, config, memory_limit, ...)."""
    def alloc(self, bytes: int, alignment: int, stream: int) -> int: ...
    def policy(self) -> str: ...
    def free(self, block: int) -> None: ...
    def allocated_size(self, block: int) -> Optional[int]: ...
    def stats(self) -> Dict[str, Any]: ...
    def dump(self) -> Dict[str, Any]: ...
    def dump_text(self) -> str: ...
    def reset_peak(self) -> None: ...
    def mark_iteration(self) -> None: ...
