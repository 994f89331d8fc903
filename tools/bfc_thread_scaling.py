#!/usr/bin/env python3
"""Thread scaling of the BFC allocator: items/s at 2 and 4 threads over 1.

Runs the thread benchmarks of bench/bfc_speed_benchmark --repetitions times
and takes medians: Threads/ (each thread replays its own stream into ONE
allocator: shared, or sharded with a shard per thread), for every policy;
Interleaved/ (the same streams replayed by one thread, step by step: the
memory baseline); ProducerConsumer/ (blocks freed by another thread than the
one that allocated them). Prints the scaling against the goals (shared tight
>= 1.6x at 2 threads and >= 1.5x at 4; tf and pytorch >= 0.8x and >= 0.7x;
sharded as tight), and each threaded run's peak pool over the interleaved
replay of as many streams. It also prints what one thread gets on the same
streams (Interleaved/ items/s at N streams over 1): a pool holding N streams'
blocks can cost more per call whoever calls, and the threads' items/s over
that rate is what the sharing itself costs. Meaningful only on a machine
whose cores are otherwise idle: check the load average it prints first.

  tools/bfc_thread_scaling.py                 # every policy, shared and sharded
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
# Items/s at N threads over 1 thread, by the policy's name (sharded: "-sharded").
GOALS = {"tight": {2: 1.6, 4: 1.5}, "tf": {2: 0.8, 4: 0.7},
         "pytorch": {2: 0.8, 4: 0.7}, "sharded": {2: 1.6, 4: 1.5}}


def goal_for(benchmark, threads):
    policy = benchmark.split("/")[1]
    key = "sharded" if policy.endswith("-sharded") else policy
    return GOALS.get(key, {}).get(threads)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", default=os.path.join(
        REPO, "build/default/bench/bfc_speed_benchmark"))
    parser.add_argument(
        "--filter", default="(Threads|Interleaved|ProducerConsumer)/",
        help="benchmark name pattern (default: every thread benchmark)")
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
    threaded, pools, baseline, baseline_rate, mixed = {}, {}, {}, {}, {}
    for bench in json.loads(run.stdout)["benchmarks"]:
        if bench.get("run_type") == "aggregate":
            continue
        name = bench["name"]
        if match := re.fullmatch(r"(Threads/.*)/real_time/threads:(\d+)", name):
            key = (match.group(1), int(match.group(2)))
            threaded.setdefault(key, []).append(bench["items_per_second"])
            pools.setdefault(key, []).append(bench["peak_pool_MiB"])
        elif match := re.fullmatch(r"Interleaved/(.*)/streams:(\d+)", name):
            key = (match.group(1), int(match.group(2)))
            baseline.setdefault(key, []).append(bench["peak_pool_MiB"])
            baseline_rate.setdefault(key, []).append(
                bench["items_per_second"])
        elif match := re.fullmatch(r"ProducerConsumer/(.*)/real_time", name):
            mixed.setdefault(match.group(1), []).append(
                (bench["items_per_second"], bench["peak_pool_MiB"]))
    results = []
    for (name, threads), values in sorted(threaded.items()):
        single = statistics.median(threaded.get((name, 1), [0])) or None
        if threads == 1 or single is None:
            continue
        scaling = statistics.median(values) / single
        goal = goal_for(name, threads)
        # The same streams replayed by one thread: policy and workload.
        _, policy, workload = name.split("/")
        same = policy.removesuffix("-sharded") + "/" + workload
        interleaved = baseline.get((same, threads))
        pool_ratio = (statistics.median(pools[(name, threads)]) /
                      statistics.median(interleaved)) if interleaved else None
        rates = (baseline_rate.get((same, 1)), baseline_rate.get((same, threads)))
        one_thread = (statistics.median(rates[1]) / statistics.median(rates[0])
                      if all(rates) else None)
        results.append({"benchmark": name, "threads": threads,
                        "scaling": scaling, "goal": goal,
                        "met": goal is not None and scaling >= goal,
                        "peak_pool_over_one_thread": pool_ratio,
                        "one_thread_same_streams": one_thread})
    producer_consumer = [
        {"benchmark": name,
         "items_per_second": statistics.median(v[0] for v in values),
         "peak_pool_MiB": statistics.median(v[1] for v in values)}
        for name, values in sorted(mixed.items())]
    if args.json:
        print(json.dumps({"load_average": load, "cores": cores,
                          "results": results,
                          "producer_consumer": producer_consumer}, indent=2))
        return
    print(f"load average {load[0]:.2f} on {cores} cores "
          "(the numbers mean something only when it is near 0)")
    for r in results:
        verdict = "met" if r["met"] else "NOT met"
        pool = r["peak_pool_over_one_thread"]
        pool_text = f", peak pool {pool:.3f}x one thread's" if pool else ""
        same = r["one_thread_same_streams"]
        same_text = (f"; one thread on the same streams {same:.2f}x"
                     if same else "")
        print(f"{r['benchmark']:32} {r['threads']} threads: "
              f"{r['scaling']:5.2f}x of 1 thread (goal >= {r['goal']}x: "
              f"{verdict}){pool_text}{same_text}")
    for r in producer_consumer:
        print(f"ProducerConsumer/{r['benchmark']:24} "
              f"{r['items_per_second'] / 1e6:6.2f} M items/s, peak pool "
              f"{r['peak_pool_MiB']:.0f} MiB")


if __name__ == "__main__":
    main()
