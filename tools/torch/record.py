#!/usr/bin/env python3
"""Records allocation traces of torchvision models run through tensormem's plug-in.

Each workload runs in its own process (the plug-in's options apply once per
process): tensormem becomes PyTorch's CPU allocator, the model is built (so its
weights are in the trace too) and `--steps` steps run. The trace of every
allocation and free goes to <out>/<model>.<workload>.trace.gz and a summary of
each run to <out>/manifest.json.

Workloads: infer_b1 and infer_b8 (eval, no_grad, batch 1 and 8, the model's own
resolution) and train_b8 (forward + backward + SGD step, batch 8, at the
training resolution of models.training_resolution, smaller for big models to
keep the recording quick).

Example (what tools/torch/make_corpus.sh runs):
  tools/torch/record.py --models resnet18,mobilenet_v2 --out data/models
"""

import argparse
import json
import os
import subprocess
import sys
import time

WORKLOADS = {  # name -> (mode, batch)
    "infer_b1": ("infer", 1),
    "infer_b8": ("infer", 8),
    "train_b8": ("train", 8),
}


def run_worker(args):
    """In the child: enable tensormem, run the workload, print a JSON summary."""
    import torch
    import tensormem.torch as tensormem_torch
    import models
    import workloads

    torch.set_num_threads(args.threads)
    tensormem_torch.enable(trace_path=args.trace)
    mode, batch = WORKLOADS[args.workload]
    resolution = (models.training_resolution(args.model) if mode == "train"
                  else models.default_resolution(args.model))
    step = workloads.make_step(args.model, mode, batch, resolution)
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    seconds = time.perf_counter() - start
    stats = tensormem_torch.stats()
    print(json.dumps({
        "model": args.model, "workload": args.workload, "mode": mode, "batch": batch,
        "resolution": resolution, "steps": args.steps, "threads": args.threads,
        "seconds": round(seconds, 3), "num_allocs": stats["num_allocs"],
        "peak_live_bytes": stats["peak_live_bytes"],
        "peak_bytes_in_use": stats["peak_bytes_in_use"],
        "peak_pool_bytes": stats["peak_pool_bytes"],
    }))
    return 0


def child_environment():
    here = os.path.dirname(os.path.abspath(__file__))
    # The Python package as the build stages it (tensormem.torch and its library).
    python_dir = os.environ.get("TENSORMEM_PYTHON_DIR") or os.path.join(
        os.path.dirname(os.path.dirname(here)), "build", "default", "python")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [here, python_dir] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def main(argv=None):
    import models  # only names here; torch loads in the workers

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(models.names()),
                        help="comma-separated (default: all)")
    parser.add_argument("--workloads", default=",".join(WORKLOADS),
                        help=f"comma-separated among {', '.join(WORKLOADS)}")
    parser.add_argument("--steps", type=int, default=2,
                        help="steps per workload (the first one warms the pool up)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--out", default="data/models", help="output directory")
    parser.add_argument("--worker", nargs=2, metavar=("MODEL", "WORKLOAD"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--trace", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        args.model, args.workload = args.worker
        return run_worker(args)

    names = [n for n in args.models.split(",") if n]
    chosen = [w for w in args.workloads.split(",") if w]
    for name in names:
        if name not in models.names():
            parser.error(f"unknown model '{name}'; known: {', '.join(models.names())}")
    for workload in chosen:
        if workload not in WORKLOADS:
            parser.error(f"unknown workload '{workload}'; known: {', '.join(WORKLOADS)}")
    os.makedirs(args.out, exist_ok=True)
    manifest_path = os.path.join(args.out, "manifest.json")
    manifest = {}
    if os.path.exists(manifest_path):
        with open(manifest_path, encoding="utf-8") as f:
            manifest = json.load(f)
    for name in names:
        for workload in chosen:
            trace = os.path.join(args.out, f"{name}.{workload}.trace.gz")
            command = [sys.executable, os.path.abspath(__file__), "--worker", name, workload,
                       "--trace", trace, "--steps", str(args.steps),
                       "--threads", str(args.threads)]
            result = subprocess.run(command, env=child_environment(), capture_output=True,
                                    text=True, check=False)
            if result.returncode != 0:
                print(f"record: {name} {workload} failed:\n{result.stderr}", file=sys.stderr)
                return 1
            summary = json.loads(result.stdout.strip().splitlines()[-1])
            summary["trace"] = os.path.basename(trace)
            manifest[f"{name}.{workload}"] = summary
            print(f"{name:24} {workload:9} {summary['seconds']:7.2f}s  "
                  f"peak live {summary['peak_live_bytes'] / 2**20:8.1f} MiB  "
                  f"peak pool {summary['peak_pool_bytes'] / 2**20:8.1f} MiB")
            with open(manifest_path, "w", encoding="utf-8") as f:
                json.dump(dict(sorted(manifest.items())), f, indent=1)
                f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
