#!/usr/bin/env python3
"""Thread scaling of the BFC allocator: items/s at 2 and 4 threads over 1.

Runs the Threads/ benchmarks of bench/bfc_speed_benchmark (each thread replays
its own stream into ONE allocator: shared, or sharded with a shard per thread)
--repetitions times, takes the median items/s (wall time) of each, and prints
the scaling against the goals (>= 1.6x at 2 threads, >= 1.0x at 4). Meaningful
only on a machine whose cores are otherwise idle: check the load average it
prints first.

  tools/bfc_thread_scaling.py                 # tf and tight, shared and sharded
  tools/bfc_thread_scaling.py --filter 'Threads/tf-sharded' --json

Needs a built benchmark (cmake --build build/default --target
bfc_speed_benchmark).
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOALS = {2: 1.6, 4: 1.0}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", default=os.path.join(
        REPO, "build/default/bench/bfc_speed_benchmark"))
    parser.add_argument("--filter", default="Threads/",
                        help="benchmark name pattern (default: Threads/)")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--min-time", type=float, default=0.5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.repetitions < 1:
        parser.error("--repetitions must be at least 1")
    if not os.access(args.binary, os.X_OK):
        sys.exit(f"{args.binary}: not built (cmake --build build/default "
                 "--target bfc_speed_benchmark)")
    load = os.getloadavg()
    cores = os.cpu_count()
    run = subprocess.run(
        [args.binary, f"--benchmark_filter={args.filter}",
         f"--benchmark_min_time={args.min_time}",
         f"--benchmark_repetitions={args.repetitions}",
         "--benchmark_format=json"], capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"{args.binary} failed (exit {run.returncode}):\n"
                 f"{run.stderr[-2000:]}")
    samples = {}
    for bench in json.loads(run.stdout)["benchmarks"]:
        if bench.get("run_type") == "aggregate":
            continue
        match = re.fullmatch(r"(.*)/real_time/threads:(\d+)", bench["name"])
        if not match:
            continue
        samples.setdefault(match.group(1), {}).setdefault(
            int(match.group(2)), []).append(bench["items_per_second"])
    results = []
    for name, by_threads in samples.items():
        single = statistics.median(by_threads.get(1, [0])) or None
        for threads, values in sorted(by_threads.items()):
            if threads == 1 or single is None:
                continue
            scaling = statistics.median(values) / single
            results.append({"benchmark": name, "threads": threads,
                            "scaling": scaling,
                            "goal": GOALS.get(threads),
                            "met": scaling >= GOALS.get(threads, 0)})
    if args.json:
        print(json.dumps({"load_average": load, "cores": cores,
                          "results": results}, indent=2))
        return
    print(f"load average {load[0]:.2f} on {cores} cores "
          "(the numbers mean something only when it is near 0)")
    for r in results:
        verdict = "met" if r["met"] else "NOT met"
        print(f"{r['benchmark']:32} {r['threads']} threads: "
              f"{r['scaling']:5.2f}x of 1 thread (goal >= {r['goal']}x: "
              f"{verdict})")


if __name__ == "__main__":
    main()
