#!/usr/bin/env python3
"""Runs `tensormem plan --strategy optimal` (any build of it) on every CSV in
a directory as a feasibility question, and counts the fits and their CPU time.

Use it to compare two builds (or another solver wrapped in a script taking the
same arguments) on the instances solver_hard_benchmark --write produced:

  ./build/default/bench/solver_hard_benchmark --count 200 --write /tmp/hard
  tools/solver_compare.py --binary ./build/default/tensormem --dir /tmp/hard \
      --capacity 1048576 --time-limit 2

CPU seconds are the child's user+system time (os.wait4), so a loaded machine
does not inflate them; an instance counts as fitting within the CPU budget
when it fits and its CPU time is at most --cpu-budget (default 1 s).
"""
import argparse
import glob
import os
import subprocess
import sys


def run_one(binary, path, capacity, time_limit):
    command = [binary, "plan", path, "--strategy", "optimal", "--capacity",
               str(capacity), "--time-limit", f"{time_limit}s", "--json"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    cpu = usage.ru_utime + usage.ru_stime
    return os.waitstatus_to_exitcode(status) == 0, cpu


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", required=True, help="tensormem binary")
    parser.add_argument("--dir", required=True, help="directory of CSVs")
    parser.add_argument("--capacity", type=int, default=1048576)
    parser.add_argument("--time-limit", type=float, default=2,
                        help="wall-clock seconds per instance")
    parser.add_argument("--cpu-budget", type=float, default=1.0)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    paths = sorted(glob.glob(os.path.join(args.dir, "*.csv")))
    if not paths:
        print(f"{args.dir}: no .csv files", file=sys.stderr)
        return 1
    fits = within = 0
    total_cpu = 0.0
    for path in paths:
        ok, cpu = run_one(args.binary, path, args.capacity, args.time_limit)
        total_cpu += cpu
        fits += ok
        within += ok and cpu <= args.cpu_budget
        if args.verbose:
            print(f"{os.path.basename(path)} {'fits' if ok else 'no fit'} "
                  f"cpu {cpu:.3f} s")
    print(f"instances {len(paths)}  fits {fits}  fits within "
          f"{args.cpu_budget:g} CPU-s {within}  total CPU {total_cpu:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
