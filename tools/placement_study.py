#!/usr/bin/env python3
"""How far online placement rules get without growth, on the corpus traces.

A small model of a fixed pool (one region of the whole limit, requests rounded
to 256 bytes, every chunk split, free neighbours merged) that replays a trace
with a placement rule and finds, by bisection to 16 KiB, the smallest limit at
which nothing fails. Its `best-fit` rule with the tail kept from requests
under 256 KiB is `tight` without growth: it finds the limit that
`tensormem replay --policy tight --no-growth --min-limit --json` reports as
`min_limit_bisection_bytes` (placement is not monotone in the limit, so an
exact scan below it can find less, as on squeezenet training: 1.066 by
bisection, 1.034 exactly). The other rules are the alternatives measured for
docs/policies.md, including one that is told every block's free time (not an
allocator: it shows what knowing lifetimes would be worth).

  tools/placement_study.py                       # the traces above 1.03x
  tools/placement_study.py --all --rules best-fit first-fit
"""

import argparse
import bisect
import glob
import gzip
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ABOVE_GOAL = [
    "deeplabv3_mobilenet_v3.infer_b8", "efficientnet_b0.infer_b1",
    "efficientnet_b0.infer_b8", "mobilenet_v2.infer_b1",
    "mobilenet_v2.infer_b8", "mobilenet_v3_large.infer_b1",
    "mobilenet_v3_large.infer_b8", "resnet50.infer_b8",
    "squeezenet1_1.train_b8"]
TAIL_KEPT_BELOW = 256 * 1024


def load(path):
    """(is_alloc, id, rounded size) per event."""
    events = []
    with gzip.open(path, "rt") as trace:
        for line in trace:
            fields = line.split()
            if fields and fields[0] == "a":
                size = (int(fields[2]) + 255) // 256 * 256
                events.append((True, int(fields[1]), size))
            elif fields and fields[0] == "f":
                events.append((False, int(fields[1]), 0))
    return events


def peak_live(events):
    live = peak = 0
    sizes = {}
    for is_alloc, block, size in events:
        if is_alloc:
            sizes[block] = size
            live += size
            peak = max(peak, live)
        else:
            live -= sizes.pop(block)
    return peak


def best_fit(holes, size, limit, _long_lived):
    """Smallest hole, lowest address; small requests avoid the pool's top."""
    best = None
    for index, (start, end) in enumerate(holes):
        if end - start < size:
            continue
        key = (end - start, start)
        if size < TAIL_KEPT_BELOW and end == limit:
            key = (1 << 62, start)
        if best is None or key < best[0]:
            best = (key, index, start)
    return None if best is None else best[1:]


def first_fit(holes, size, _limit, _long_lived):
    for index, (start, end) in enumerate(holes):
        if end - start >= size:
            return index, start
    return None


def worst_fit(holes, size, _limit, _long_lived):
    best = None
    for index, (start, end) in enumerate(holes):
        if end - start >= size and (best is None or end - start > best[0]):
            best = (end - start, index, start)
    return None if best is None else best[1:]


def large_on_top(threshold):
    """Blocks of `threshold` bytes or more: best fit from the top down."""
    def rule(holes, size, limit, long_lived):
        if size < threshold:
            return best_fit(holes, size, limit, long_lived)
        best = None
        for index, (start, end) in enumerate(holes):
            if end - start >= size:
                key = (end - start, -start)
                if best is None or key < best[0]:
                    best = (key, index, end - size)
        return None if best is None else best[1:]
    return rule


def lifetimes_known(holes, size, limit, long_lived):
    """Told the future: long-lived blocks best fit from the top down."""
    if not long_lived:
        return best_fit(holes, size, limit, long_lived)
    return large_on_top(0)(holes, size, limit, long_lived)


RULES = {
    "best-fit": best_fit, "first-fit": first_fit, "worst-fit": worst_fit,
    "large-on-top-256K": large_on_top(256 << 10),
    "large-on-top-1M": large_on_top(1 << 20),
    "large-on-top-4M": large_on_top(4 << 20),
    "lifetimes-known": lifetimes_known,
}


def serves(events, limit, rule, free_at):
    """Whether the trace runs in a fixed pool of `limit` bytes."""
    holes = [(0, limit)]
    blocks = {}
    for event, (is_alloc, block, size) in enumerate(events):
        if is_alloc:
            # "Long-lived": freed more than a fifth of the trace later.
            long_lived = free_at.get(block, len(events)) - event > len(events) / 5
            choice = rule(holes, size, limit, long_lived)
            if choice is None:
                return False
            index, start = choice
            hole_start, hole_end = holes[index]
            pieces = [(a, b) for a, b in ((hole_start, start),
                                          (start + size, hole_end)) if a < b]
            holes[index:index + 1] = pieces
            blocks[block] = (start, size)
        else:
            start, size = blocks.pop(block)
            at = bisect.bisect_left(holes, (start, 0))
            low, high = start, start + size
            if at < len(holes) and holes[at][0] == high:
                high = holes.pop(at)[1]
            if at > 0 and holes[at - 1][1] == low:
                low = holes.pop(at - 1)[0]
                at -= 1
            holes.insert(at, (low, high))
    return True


def min_limit(events, rule):
    free_at = {block: i for i, (is_alloc, block, _) in enumerate(events)
               if not is_alloc}
    peak = peak_live(events)
    low, high = peak, int(peak * 1.6)
    if not serves(events, high, rule, free_at):
        return None
    while high - low > 16 * 1024:
        middle = (low + high) // 2 // 256 * 256
        if serves(events, middle, rule, free_at):
            high = middle
        else:
            low = middle
    return high / peak


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--all", action="store_true",
                        help="every trace of data/models, not only those above 1.03x")
    parser.add_argument("--rules", nargs="*", default=list(RULES),
                        choices=list(RULES))
    args = parser.parse_args()
    paths = sorted(glob.glob(os.path.join(REPO, "data/models/*.trace.gz")))
    names = [os.path.basename(p)[:-len(".trace.gz")] for p in paths]
    if not args.all:
        names = [n for n in names if n in ABOVE_GOAL]
    print("min limit / peak live, no growth")
    print("%-36s" % "trace" + "".join("%19s" % r for r in args.rules))
    for name in names:
        events = load(os.path.join(REPO, "data/models", name + ".trace.gz"))
        ratios = [min_limit(events, RULES[r]) for r in args.rules]
        print("%-36s" % name + "".join(
            "%19s" % ("-" if x is None else "%.3f" % x) for x in ratios))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
