#!/usr/bin/env python3
"""Step time and peak RSS of torchvision models with PyTorch's CPU allocator vs tensormem's.

For each model and workload, worker processes run the same seeded steps once with
PyTorch's default CPU allocator and once with tensormem's plug-in, alternating,
`--rounds` times each; a worker times `--steps` steps after `--warmup` steps and
reports the median step time, minor page faults per timed step and its peak RSS
(ru_maxrss). The ratio is
default time / tensormem time, from the best (smallest) median of each side:
above 1.0 tensormem is faster. `cpu_speed_ratio` is the same ratio of the process's
CPU time per step (user + system, page faults included), which other programs on a
shared machine disturb far less than wall-clock time (with --threads 1). With the plug-in the worker also reports
tensormem's peak pool (bytes held from the system) and peak live bytes.

`--baseline KEY=VALUE[,KEY=VALUE...]` adds a third side, the plug-in enabled with
those options (e.g. an older default, `sub_allocator=host`), run in the same rounds
between the other two, so a before/after comparison shares the machine's state; its
figures are the row's `baseline_*` keys.

Example:
  tools/torch/measure.py --models resnet18,mobilenet_v2 --workloads infer_b1,train_b8 --json
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

from record import WORKLOADS, child_environment


def run_worker(args):
    import torch
    import models
    import workloads

    torch.set_num_threads(args.threads)
    if args.allocator != "default":
        import tensormem.torch as tensormem_torch
        tensormem_torch.enable(**json.loads(args.options))
    mode, batch = WORKLOADS[args.workload]
    resolution = (models.training_resolution(args.model) if mode == "train"
                  else models.default_resolution(args.model))
    step = workloads.make_step(args.model, mode, batch, resolution)
    for _ in range(args.warmup):
        step()
    times, cpu_times = [], []
    faults_before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(args.steps):
        start, cpu_start = time.perf_counter(), time.process_time()
        step()
        times.append(time.perf_counter() - start)
        cpu_times.append(time.process_time() - cpu_start)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults_before
    result = {"median_seconds": statistics.median(times),
              "median_cpu_seconds": statistics.median(cpu_times),
              "page_faults_per_step": faults // args.steps,
              "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
              "resolution": resolution, "batch": batch}
    if args.allocator != "default":
        stats = tensormem_torch.stats()
        result.update(peak_pool_bytes=stats["peak_pool_bytes"],
                      peak_live_bytes=stats["peak_live_bytes"],
                      peak_bytes_in_use=stats["peak_bytes_in_use"])
    print(json.dumps(result))
    return 0


def parse_options(text):
    """`key=value,...` as enable()'s keyword arguments: true/false are booleans."""
    options = {}
    for item in [i for i in text.split(",") if i]:
        key, equals, value = item.partition("=")
        if not equals or not key:
            raise ValueError(f"--baseline: '{item}' is not KEY=VALUE")
        booleans = {"true": True, "false": False}
        options[key] = booleans.get(value.lower(), value)
    return options


def baseline_figures(runs, default_seconds, default_cpu_seconds):
    best = min(r["median_seconds"] for r in runs)
    best_cpu = min(r["median_cpu_seconds"] for r in runs)
    return {
        "baseline_seconds": best,
        "baseline_speed_ratio": default_seconds / best,
        "baseline_cpu_seconds": best_cpu,
        "baseline_cpu_speed_ratio": default_cpu_seconds / best_cpu,
        "baseline_peak_rss_bytes": max(r["peak_rss_bytes"] for r in runs),
        "baseline_page_faults_per_step": min(r["page_faults_per_step"] for r in runs),
        "baseline_peak_pool_bytes": runs[0]["peak_pool_bytes"],
        "baseline_peak_live_bytes": runs[0]["peak_live_bytes"],
        "baseline_pool_over_live": runs[0]["peak_pool_bytes"] / max(runs[0]["peak_live_bytes"], 1),
    }


def measure(model, workload, args):
    sides = {"default": "{}", "tensormem": "{}"}
    if args.baseline is not None:
        sides["baseline"] = json.dumps(parse_options(args.baseline))
    runs = {side: [] for side in sides}
    for _ in range(args.rounds):
        for allocator, options in sides.items():
            command = [sys.executable, os.path.abspath(__file__), "--worker", model, workload,
                       allocator, "--steps", str(args.steps), "--warmup", str(args.warmup),
                       "--threads", str(args.threads), "--options", options]
            result = subprocess.run(command, env=child_environment(), capture_output=True,
                                    text=True, check=False)
            if result.returncode != 0:
                raise RuntimeError(f"{model} {workload} {allocator} failed:\n{result.stderr}")
            runs[allocator].append(json.loads(result.stdout.strip().splitlines()[-1]))
    best = {side: min(r["median_seconds"] for r in runs[side]) for side in runs}
    cpu = {side: min(r["median_cpu_seconds"] for r in runs[side]) for side in runs}
    tensormem = runs["tensormem"][0]
    row = {
        "model": model, "workload": workload, "batch": tensormem["batch"],
        "resolution": tensormem["resolution"],
        "default_seconds": best["default"], "tensormem_seconds": best["tensormem"],
        "speed_ratio": best["default"] / best["tensormem"],
        "default_cpu_seconds": cpu["default"], "tensormem_cpu_seconds": cpu["tensormem"],
        "cpu_speed_ratio": cpu["default"] / cpu["tensormem"],
        "default_peak_rss_bytes": max(r["peak_rss_bytes"] for r in runs["default"]),
        "tensormem_peak_rss_bytes": max(r["peak_rss_bytes"] for r in runs["tensormem"]),
        "default_page_faults_per_step": min(r["page_faults_per_step"] for r in runs["default"]),
        "tensormem_page_faults_per_step": min(r["page_faults_per_step"]
                                              for r in runs["tensormem"]),
        "peak_pool_bytes": tensormem["peak_pool_bytes"],
        "peak_live_bytes": tensormem["peak_live_bytes"],
        "pool_over_live": tensormem["peak_pool_bytes"] / max(tensormem["peak_live_bytes"], 1),
    }
    if "baseline" in runs:
        row["baseline_options"] = args.baseline
        row.update(baseline_figures(runs["baseline"], best["default"], cpu["default"]))
    return row


def main(argv=None):
    import models

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(models.names()))
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--steps", type=int, default=5, help="timed steps per worker")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    parser.add_argument("--rounds", type=int, default=2, help="workers per allocator")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--baseline", metavar="KEY=VALUE,...",
                        help="a third side: the plug-in with these enable() options")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--options", default="{}", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        args.model, args.workload, args.allocator = args.worker
        return run_worker(args)
    if args.baseline is not None:
        try:
            parse_options(args.baseline)
        except ValueError as error:
            parser.error(str(error))

    rows = []
    for model in [m for m in args.models.split(",") if m]:
        for workload in [w for w in args.workloads.split(",") if w]:
            try:
                row = measure(model, workload, args)
            except RuntimeError as error:
                print(f"measure: {error}", file=sys.stderr)
                return 1
            rows.append(row)
            mib = 2.0**20
            # With --json the table still goes to stderr, as progress.
            print(f"{model:24} {workload:9} default {row['default_seconds'] * 1e3:9.1f} ms"
                  f"  tensormem {row['tensormem_seconds'] * 1e3:9.1f} ms"
                  f"  ratio {row['speed_ratio']:5.2f}x (CPU {row['cpu_speed_ratio']:5.2f}x)"
                  f"  RSS {row['default_peak_rss_bytes'] / mib:7.0f} / "
                  f"{row['tensormem_peak_rss_bytes'] / mib:7.0f} MiB"
                  f"  pool/live {row['pool_over_live']:5.2f}"
                  f"  faults/step {row['default_page_faults_per_step']} / "
                  f"{row['tensormem_page_faults_per_step']}",
                  file=sys.stderr if args.json else sys.stdout, flush=True)
            if "baseline_options" in row:
                print(f"{'':24} {'baseline':9} {args.baseline}: "
                      f"{row['baseline_seconds'] * 1e3:9.1f} ms"
                      f"  ratio {row['baseline_speed_ratio']:5.2f}x"
                      f" (CPU {row['baseline_cpu_speed_ratio']:5.2f}x)"
                      f"  RSS {row['baseline_peak_rss_bytes'] / mib:7.0f} MiB"
                      f"  pool/live {row['baseline_pool_over_live']:5.2f}"
                      f"  faults/step {row['baseline_page_faults_per_step']}",
                      file=sys.stderr if args.json else sys.stdout, flush=True)
    if args.json:
        print(json.dumps({"threads": args.threads, "steps": args.steps,
                          "warmup": args.warmup, "rounds": args.rounds,
                          "baseline": args.baseline, "results": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
