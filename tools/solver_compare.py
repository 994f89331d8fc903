#!/usr/bin/env python3
"""Runs `tensormem plan --strategy optimal` (any build of it) on every CSV in
a directory as a feasibility question, and counts the fits and their CPU time.

Use it to compare two builds, or a build and another solver wrapped in a
script taking the same arguments (`plan PATH --strategy optimal --capacity C
--time-limit Ns --json`, exit 0 for a fit), on the instances
solver_hard_benchmark --write produced:

  ./build/default/bench/solver_hard_benchmark --count 200 --write /tmp/hard
  tools/solver_compare.py --binary ./build/default/tensormem --dir /tmp/hard \
      --capacity 1048576 --time-limit 2
  ./build/default/bench/solver_hard_benchmark --suite --write /tmp/suite
  tools/solver_compare.py --binary ./build/default/tensormem \
      --dir /tmp/suite/judging      # capacities from the file names
  tools/solver_compare.py --binary ./build/default/tensormem \
      --binary /work/minimalloc-ref/run.sh --dir /tmp/hard --verbose

With several --binary, each instance is run by every solver in turn (the
order rotates from one instance to the next), so load affects them alike;
the summary then lists the instances one solver fits within the budget and
another does not.

CPU seconds are the child's user+system time (os.wait4, which includes the
child's own waited-for children), so a loaded machine does not inflate them;
wall seconds are printed beside them (median and worst, an instance that does
not fit counted at the limit), since a solver on two threads spends CPU twice;
an instance counts as fitting within the CPU budget when it fits and its CPU
time is at most --cpu-budget (default 1 s).
"""
import argparse
import glob
import os
import statistics
import subprocess
import sys
import time


def run_one(binary, path, capacity, time_limit):
    command = [binary, "plan", path, "--strategy", "optimal", "--capacity",
               str(capacity), "--time-limit", f"{time_limit}s", "--json"]
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.monotonic() - started
    cpu = usage.ru_utime + usage.ru_stime
    return os.waitstatus_to_exitcode(status) == 0, cpu, wall


def capacity_of(args, path):
    """--capacity, or the number before .csv in the name (A.1048576.csv, as
    MiniMalloc names its sets and `solver_hard_benchmark --suite --write`
    names its instances), or 1048576."""
    if args.capacity is not None:
        return args.capacity
    stem = os.path.basename(path)[:-len(".csv")]
    last = stem.rsplit(".", 1)[-1]
    return int(last) if "." in stem and last.isdigit() else 1048576


def run_all(args, paths):
    """Returns {binary: {name: (fits, cpu, wall)}}, solvers rotating per
    instance."""
    results = {binary: {} for binary in args.binary}
    for index, path in enumerate(paths):
        name = os.path.basename(path)
        shift = index % len(args.binary)
        for binary in args.binary[shift:] + args.binary[:shift]:
            ok, cpu, wall = run_one(binary, path, capacity_of(args, path),
                                    args.time_limit)
            results[binary][name] = (ok, cpu, wall)
            if args.verbose:
                print(f"{name} {binary} {'fits' if ok else 'no fit'} "
                      f"cpu {cpu:.3f} s wall {wall:.3f} s", flush=True)
    return results


def within(result, budget):
    ok, cpu, _ = result
    return ok and cpu <= budget


def wall_or_limit(result, limit):
    """Wall seconds of a fit; an instance that does not fit counts at the
    limit, so a worst case at the limit means some did not fit."""
    ok, _, wall = result
    return wall if ok else max(wall, limit)


def print_summary(args, results):
    for binary, by_name in results.items():
        fits = sum(ok for ok, _, _ in by_name.values())
        fast = sum(within(r, args.cpu_budget) for r in by_name.values())
        total_cpu = sum(cpu for _, cpu, _ in by_name.values())
        walls = [wall_or_limit(r, args.time_limit) for r in by_name.values()]
        print(f"{binary}: instances {len(by_name)}  fits {fits}  fits within "
              f"{args.cpu_budget:g} CPU-s {fast}  total CPU {total_cpu:.1f} s"
              f"  wall median {statistics.median(walls):.3f} s  worst "
              f"{max(walls):.3f} s")
    for first in args.binary:
        for second in args.binary:
            if first == second:
                continue
            only = [name for name in sorted(results[first])
                    if within(results[first][name], args.cpu_budget) and
                    not within(results[second][name], args.cpu_budget)]
            print(f"within {args.cpu_budget:g} CPU-s by {first} only "
                  f"(not {second}): {len(only)} {' '.join(only)}")
            fit_only = [name for name in sorted(results[first])
                        if results[first][name][0] and
                        not results[second][name][0]]
            print(f"fit by {first} only (not {second}): {len(fit_only)} "
                  f"{' '.join(fit_only)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", required=True, action="append",
                        help="tensormem binary or wrapper (repeatable)")
    parser.add_argument("--dir", required=True, help="directory of CSVs")
    parser.add_argument("--capacity", type=int, default=None,
                        help="default: from each file's name, else 1048576")
    parser.add_argument("--time-limit", type=float, default=2,
                        help="wall-clock seconds per instance")
    parser.add_argument("--cpu-budget", type=float, default=1.0)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    paths = sorted(glob.glob(os.path.join(args.dir, "*.csv")))
    if not paths:
        print(f"{args.dir}: no .csv files", file=sys.stderr)
        return 1
    print_summary(args, run_all(args, paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
