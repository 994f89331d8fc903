"""What-if: one workload through several allocator candidates, compared."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Sequence, Union

from . import _tensormem
from ._sources import ByteSize, PathLike, Source, native_source, parse_bytes
from ._tensormem import Trace


class WhatIfResult:
    """One workload through several allocator candidates, compared.

    ``rows``: one dict per candidate (peak_reserved_bytes,
    peak_reserved_over_live, fragmentation_at_peak, min_limit_bytes,
    ns_per_op, fits_device_memory, the replay's metrics, ...), as
    ``tensormem whatif --json`` prints them. ``recorded``: for a PyTorch
    snapshot with segment events, what PyTorch reserved on the GPU and
    whether the candidate with the snapshot's settings, replayed as the GPU
    ran it, ``matches`` it; else None. ``recommendation``: the PyTorch setting
    that reserves least and what tensormem's ``tight`` would save (each with
    ``saving_bytes`` and ``saving_percent``), and ``text``, the advice in
    words; None without a ``pytorch`` candidate. ``str(result)`` is the
    command's table.
    """

    def __init__(self, native: Any) -> None:
        self._native = native
        found = native.json()
        self.peak_live_bytes: int = found["peak_live_bytes"]
        self.device_memory: Optional[int] = found.get("device_memory_bytes")
        self.rows: List[Dict[str, Any]] = found["candidates"]
        self.recorded: Optional[Dict[str, Any]] = found.get("recorded")
        self.recommendation: Optional[Dict[str, Any]] = found.get("recommendation")

    def to_dict(self) -> Dict[str, Any]:
        """Everything, as ``tensormem whatif --json`` prints it."""
        return self._native.json()

    def to_html(self, path: PathLike, title: str = "what-if") -> None:
        """Writes the comparison page (table, advice, reserved bytes over time)."""
        self._native.write_html(os.fspath(path), title)

    def __str__(self) -> str:
        return self._native.text()

    def __repr__(self) -> str:
        labels = ", ".join(row["candidate"] for row in self.rows)
        return f"WhatIfResult(peak_live_bytes={self.peak_live_bytes}, candidates=[{labels}])"


def whatif(
    source: Union[Trace, Source],
    candidates: Union[None, str, Sequence[str]] = None,
    *,
    device: int = 0,
    device_memory: Optional[ByteSize] = None,
    min_limit: bool = True,
    timing: bool = True,
) -> WhatIfResult:
    """Replays one workload through several allocator candidates and compares them.

    ``source`` is a path (any format :func:`read_trace` reads), a
    :class:`Trace`, or the dict ``torch.cuda.memory._snapshot()`` returns.
    ``candidates`` are "POLICY [key=value ...]" strings, e.g. "pytorch
    config=expandable_segments:True", as a list or separated by ";" (default:
    tf, pytorch and two of its settings, tight). ``device_memory`` also replays
    each candidate limited to that much (bytes or text such as "80GiB") and
    says where it runs out; ``min_limit`` searches each candidate's smallest
    serving limit; ``timing`` times the allocator calls.

    On a snapshot with segment events the candidate with the snapshot's
    settings is added when missing, replayed as the GPU ran it and checked
    against the recording (``recorded``); see :class:`WhatIfResult`.

    Raises ValueError for an unknown policy or option and for malformed input.
    """
    if isinstance(candidates, (list, tuple)):
        candidates = "; ".join(candidates)
    limit = None if device_memory is None else parse_bytes(device_memory)
    native = source if isinstance(source, Trace) else native_source(source)
    return WhatIfResult(
        _tensormem.whatif(native, device, candidates, limit, min_limit, timing)
    )
