"""tensormem: deep-learning memory management from Python.

Plan a set of buffers with the static planners, read and convert allocation
traces (tensormem traces, RMM logs, PyTorch memory snapshots, buffer sets),
replay them into an allocator and measure what it costs, experiment with the
BFC allocator directly, and write the HTML reports::

    import tensormem
    result = tensormem.plan([4096, 1024, 2048], starts=[0, 1, 2], ends=[2, 3, 4])
    print(result.offsets, result.total, result.lower_bound, result.proven_optimal)

    trace = tensormem.read_trace("data/models/resnet50.train_b8.trace.gz")
    metrics = tensormem.replay(trace, allocator="bfc", memory_limit="2GiB")
    print(metrics["peak_pool_bytes"], metrics["fragmentation"])

Errors raise ValueError (bad input or option), FileNotFoundError (a file
that cannot be opened) or MemoryError (an allocation that does not fit), with
the library's message, which names the file and line or the field.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _tensormem
from ._sources import ByteSize, PathLike, Source, native_source, parse_bytes
from ._tensormem import Trace
from ._whatif import WhatIfResult, whatif

__version__: str = _tensormem.__version__

__all__ = [
    "BfcAllocator",
    "parse_bytes",
    "PlanResult",
    "Trace",
    "WhatIfResult",
    "plan",
    "read_trace",
    "replay",
    "strategies",
    "trace_from_buffers",
    "whatif",
    "write_plan_report",
    "write_replay_report",
    "__version__",
]

IntSequence = Union[Sequence[int], Any]  # lists, tuples or NumPy integer arrays


@dataclasses.dataclass(frozen=True)
class PlanResult:
    """A placement of every buffer in one arena.

    offsets[i] is where buffer i starts; total is the arena size the plan
    needs; lower_bound is the peak of live bytes, below which no plan exists;
    proven_optimal says total is known to be the least possible (the optimal
    search proved it, or total equals the lower bound).
    """

    strategy: str
    offsets: List[int]
    total: int
    lower_bound: int
    proven_optimal: bool
    seconds: float
    extra: Dict[str, Any]

    @property
    def ratio(self) -> float:
        """total / lower_bound (1.0 is a perfect packing)."""
        return self.total / self.lower_bound if self.lower_bound else 1.0


def _int_list(values: IntSequence) -> List[int]:
    tolist = getattr(values, "tolist", None)  # NumPy arrays, without a copy loop
    return list(tolist() if tolist is not None else values)


def plan(
    sizes: IntSequence,
    starts: IntSequence,
    ends: IntSequence,
    strategy: str = "optimal",
    time_limit: Optional[float] = 2.0,
    *,
    alignment: int = 1,
    threads: int = 1,
    allow_slow: bool = False,
    counted_time: bool = False,
) -> PlanResult:
    """Places buffers in one arena so that buffers live at the same time never overlap.

    Buffer i has sizes[i] bytes and is live from time step starts[i] up to,
    but not including, ends[i]. ``strategy`` names a planner of
    :func:`strategies` ("optimal" searches for a proven optimum within
    ``time_limit`` seconds and keeps the best plan found; the others are
    TFLite's and tensormem's heuristics, which ignore the limit). Offsets are
    multiples of ``alignment``. With ``counted_time`` the limit counts the
    search's work instead of wall-clock seconds (about a microsecond per
    buffer placed or search node): with one thread, the same plan on every
    run and machine.

    Raises ValueError for an unknown strategy, lists of different lengths,
    negative sizes or empty lifetimes.
    """
    planned = _tensormem.plan(
        _int_list(sizes),
        _int_list(starts),
        _int_list(ends),
        strategy,
        time_limit,
        alignment,
        threads,
        allow_slow,
        counted_time,
    )
    extra = planned["extra"]
    proven = bool(extra.get("proven_optimal", planned["total"] == planned["lower_bound"]))
    return PlanResult(
        strategy=planned["strategy"],
        offsets=planned["offsets"],
        total=planned["total"],
        lower_bound=planned["lower_bound"],
        proven_optimal=proven,
        seconds=planned["seconds"],
        extra=extra,
    )


def strategies() -> Dict[str, str]:
    """The planners :func:`plan` accepts, name -> one-line description."""
    return dict(_tensormem.strategies())


def read_trace(
    source: Source,
    format: Optional[str] = None,
    *,
    device: int = 0,
    details: bool = False,
) -> Union[Trace, Tuple[Trace, Dict[str, Any]]]:
    """Reads an allocation workload as a :class:`Trace`.

    ``source`` is a path or the dict ``torch.cuda.memory._snapshot()``
    returns. ``format`` is "trace" (tensormem's .trace, maybe .gz), "rmm" (an
    RMM logging CSV), "pytorch" (a ``torch.cuda.memory._dump_snapshot``
    pickle; ``device`` picks the device) or "buffers" (a buffer-set CSV); by
    default it is told from the name and the first bytes (a dict is always a
    snapshot). With ``details=True`` returns (trace, details) where details
    holds the format and, for snapshots, the importer's counts.

    Raises FileNotFoundError when the file cannot be opened and ValueError for
    malformed content (the message names the file, or "snapshot dict", and the
    line or entry).
    """
    trace, found = _tensormem.read_trace(native_source(source), format, device)
    return (trace, found) if details else trace


def trace_from_buffers(sizes: IntSequence, starts: IntSequence, ends: IntSequence) -> Trace:
    """A trace allocating buffer i at starts[i] and freeing it at ends[i]."""
    return _tensormem.trace_from_buffers(_int_list(sizes), _int_list(starts), _int_list(ends))


def _as_trace(trace: Union[Trace, Source]) -> Trace:
    return trace if isinstance(trace, Trace) else read_trace(trace)


def replay(
    trace: Union[Trace, PathLike],
    allocator: str = "bfc",
    *,
    timing: bool = False,
    **options: Any,
) -> Dict[str, Any]:
    """Replays ``trace`` (a Trace or a path) into an allocator; returns its metrics.

    ``allocator`` is "bfc" or "system"; ``options`` are sub_allocator
    ("simulated", "host" or "vmm"), memory_limit and capacity (bytes or text
    such as "2GiB"), growth, garbage_collection, coalescing and
    fragmentation_fraction. The metrics dict has events, allocs, frees,
    failed_allocs, peak_live_bytes, peak_in_use_bytes, peak_pool_bytes,
    fragmentation (peak pool / peak live), the allocator's stats and, with
    ``timing=True``, seconds and ns_per_op of a pass doing only the calls.

    Raises ValueError for an unknown allocator or option and for traces that
    free blocks that are not live.
    """
    return _tensormem.replay(_as_trace(trace), dict(options, allocator=allocator), timing)


def write_replay_report(
    trace: Union[Trace, PathLike],
    path: PathLike,
    allocator: str = "bfc",
    *,
    title: Optional[str] = None,
    **options: Any,
) -> Dict[str, Any]:
    """Writes the replay's HTML page (memory timeline, placement, failures) to ``path``.

    Takes the allocator and options of :func:`replay`; returns the metrics.
    """
    if title is None:
        title = trace if isinstance(trace, str) else "trace"
    return _tensormem.write_replay_report(
        _as_trace(trace), os.fspath(path), title, dict(options, allocator=allocator)
    )


def write_plan_report(
    path: PathLike,
    sizes: IntSequence,
    starts: IntSequence,
    ends: IntSequence,
    offsets: IntSequence,
    *,
    title: str = "plan",
) -> None:
    """Writes the HTML picture of a placement (e.g. ``plan(...).offsets``) to ``path``.

    Raises ValueError when two buffers live at the same time overlap.
    """
    _tensormem.write_plan_report(
        os.fspath(path),
        _int_list(sizes),
        _int_list(starts),
        _int_list(ends),
        _int_list(offsets),
        title,
    )


class BfcAllocator:
    """A BFC allocator, for experiments: TensorFlow's placement decisions by default.

    Memory comes from the ``sub_allocator``: "simulated" (address space only,
    nothing is touched; blocks are named by their offset from its start),
    "vmm" (reserved address space) or "host" (real memory; blocks are named by
    their address). With ``allow_growth`` the pool grows region by region up
    to ``memory_limit``. ``policy`` picks the allocation policy ("tf",
    "tight", "pytorch", "planned"; see ``tensormem replay --help``) and ``config`` its
    configuration in PYTORCH_CUDA_ALLOC_CONF syntax; further keyword
    arguments are the allocator specification's other keys (coalescing,
    granule, fragmentation_fraction, ...)::

        bfc = tensormem.BfcAllocator(memory_limit="1GiB")
        a = bfc.alloc(4096)
        b = bfc.alloc(1 << 20)
        bfc.free(a)
        print(bfc.stats()["bytes_in_use"], bfc.dump()["regions"])

        torch_like = tensormem.BfcAllocator(
            "8GiB", policy="pytorch", config="expandable_segments:True")
        x = torch_like.alloc(1000, stream=1)  # never reused by another stream

    ``alloc`` raises MemoryError (with the allocator's explanation) when the
    request does not fit; ``free`` raises ValueError for a block that is not
    allocated; the constructor raises ValueError for an unknown option or a
    bad value, naming it.
    """

    def __init__(
        self,
        memory_limit: ByteSize,
        *,
        allow_growth: bool = True,
        garbage_collection: bool = False,
        sub_allocator: str = "simulated",
        capacity: Optional[ByteSize] = None,
        policy: str = "tf",
        config: str = "",
        **options: Any,
    ) -> None:
        limit = parse_bytes(memory_limit)
        if limit <= 0:
            raise ValueError("memory_limit must be > 0")
        self._native = _tensormem.BfcAllocator(
            dict(
                options,
                memory_limit=limit,
                growth=allow_growth,
                gc=garbage_collection,
                sub_allocator=sub_allocator,
                capacity=limit if capacity is None else parse_bytes(capacity),
                policy=policy,
                config=config or None,
            )
        )

    @property
    def policy(self) -> str:
        """The policy's name and the options that differ from its defaults."""
        return self._native.policy()

    def alloc(self, size: int, alignment: int = 256, stream: int = 0) -> int:
        """Allocates ``size`` bytes aligned to ``alignment`` for use on ``stream``; returns the block.

        Policies that keep streams apart (``pytorch``) serve a stream only from
        its own memory; the others ignore ``stream``.
        """
        return self._native.alloc(size, alignment, stream)

    def free(self, block: int) -> None:
        """Returns a block from :meth:`alloc`."""
        self._native.free(block)

    def allocated_size(self, block: int) -> Optional[int]:
        """Bytes the allocator reserved for ``block`` (None if not allocated)."""
        return self._native.allocated_size(block)

    def stats(self) -> Dict[str, Any]:
        """Counters with TensorFlow's names (num_allocs, bytes_in_use, peak_bytes_in_use, ...)."""
        return self._native.stats()

    def dump(self) -> Dict[str, Any]:
        """Regions, chunks (offset, size, in use) and bins, as a dict."""
        return self._native.dump()

    def dump_text(self) -> str:
        """The same dump as readable text."""
        return self._native.dump_text()

    def reset_peak(self) -> None:
        """Restarts the peaks (and num_allocs) from the current use."""
        self._native.reset_peak()

    def mark_iteration(self) -> None:
        """Marks the start of an iteration of the program's loop: under
        ``policy="planned"`` the iterations between marks are the loop learnt
        and served from a plan (without marks it finds the loop itself);
        other policies ignore it."""
        self._native.mark_iteration()
