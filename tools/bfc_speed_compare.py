#!/usr/bin/env python3
"""Before/after ratios of two builds of bench/bfc_speed_benchmark, in one run.

Runs the two binaries back to back (before, after, before, after, ...:
--rounds interleaved rounds, so a change in the machine's load hits both), takes
each benchmark's median over the rounds, and prints ns/op (CPU time) of the
replay loop and items/s (wall time) of the thread runs, with after/before
ratios, and the thread scaling (items/s at N threads over 1 thread) of each.

  git worktree add /tmp/before <commit> && (build it there)
  tools/bfc_speed_compare.py --before /tmp/before/build/default/bench/bfc_speed_benchmark \\
      --after build/default/bench/bfc_speed_benchmark --filter 'Replay/tf'
"""

import argparse
import json
import statistics
import subprocess
import sys


def run(binary, pattern, min_time):
    out = subprocess.run(
        [binary, f"--benchmark_filter={pattern}",
         f"--benchmark_min_time={min_time}", "--benchmark_format=json"],
        capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{binary} failed (exit {out.returncode}):\n{out.stderr}")
    results = {}
    for bench in json.loads(out.stdout)["benchmarks"]:
        name = bench["name"].replace("/real_time", "")
        if "ns_per_op" in bench:
            results[name] = ("ns/op", bench["ns_per_op"])
        else:
            results[name] = ("items/s", bench["items_per_second"])
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", required=True)
    parser.add_argument("--after", required=True)
    parser.add_argument("--filter", default=".")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--min-time", type=float, default=0.3)
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    samples = {"before": {}, "after": {}}
    for _ in range(args.rounds):
        for side in ("before", "after"):
            binary = getattr(args, side)
            for name, (unit, value) in run(binary, args.filter,
                                           args.min_time).items():
                samples[side].setdefault(name, (unit, []))[1].append(value)
    median = {side: {name: (unit, statistics.median(values))
                     for name, (unit, values) in runs.items()}
              for side, runs in samples.items()}
    print(f"{'benchmark':52} {'before':>12} {'after':>12} {'after/before':>13}")
    for name, (unit, after) in median["after"].items():
        before = median["before"].get(name)
        shown_before = f"{before[1]:12.4g}" if before else f"{'-':>12}"
        ratio = f"{after / before[1]:12.3f}x" if before else f"{'-':>13}"
        print(f"{name:52} {shown_before} {after:12.4g} {ratio}  {unit}")
    print("\nthread scaling (items/s at N threads / 1 thread):")
    for side in ("before", "after"):
        for name, (unit, value) in median[side].items():
            if "threads:" not in name or name.endswith("threads:1"):
                continue
            single = median[side].get(name.rsplit(":", 1)[0] + ":1")
            if single:
                print(f"  {side:6} {name:52} {value / single[1]:6.2f}x")


if __name__ == "__main__":
    main()
