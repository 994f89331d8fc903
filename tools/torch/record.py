#!/usr/bin/env python3
"""Records allocation traces of models run through tensormem's plug-in.

Each workload runs in its own process (the plug-in's options apply once per
process): tensormem becomes PyTorch's CPU allocator, the model is built (so its
weights are in the trace too) and `--steps` steps run. The trace of every
allocation and free goes to <out>/<model>.<workload>.trace.gz and a summary of
each run to <out>/manifest.json, with the numbers of allocations and frees
before the first step and in each step (step_allocs, step_frees: where the
trace's events split into steps). --name-steps names the files
<model>.<workload>_s<steps>.trace.gz instead.

Workloads: infer_b1 and infer_b8 (eval, no_grad, batch 1 and 8, the model's own
resolution) and train_b8 (forward + backward + SGD step, batch 8, at the
training resolution of models.training_resolution, smaller for big models to
keep the recording quick); trainkeep_b8 is train_b8 with each step's output
returned and held by the loop until the next step's replaces it (as
`loss, output = step()` would). The language models of language_models.py
(transformer: 128 tokens per sequence, transformer_varlen: a seeded length per
step) have no resolution: their summaries list the sequence length of each step.

Examples (what tools/torch/make_corpus.sh and make_loops.sh run):
  tools/torch/record.py --models resnet18,mobilenet_v2 --out data/models
  tools/torch/record.py --models transformer --workloads train_b8 --steps 6 \
      --name-steps --out data/models/loops
"""

import argparse
import json
import os
import subprocess
import sys
import time

WORKLOADS = {  # name -> (mode, batch, whether the caller keeps each step's result)
    "infer_b1": ("infer", 1, False),
    "infer_b8": ("infer", 8, False),
    "train_b8": ("train", 8, False),
    "trainkeep_b8": ("train", 8, True),
}


def run_worker(args):
    """In the child: enable tensormem, run the workload, print a JSON summary."""
    import torch
    import tensormem.torch as tensormem_torch
    import language_models
    import models
    import workloads

    torch.set_num_threads(args.threads)
    tensormem_torch.enable(trace_path=args.trace)
    mode, batch, keep = WORKLOADS[args.workload]
    if args.model in language_models.names():
        resolution = None
    elif mode == "train":
        resolution = models.training_resolution(args.model)
    else:
        resolution = models.default_resolution(args.model)
    step = workloads.make_step(args.model, mode, batch, resolution, keep_output=keep)
    def counts():
        stats = tensormem_torch.stats()
        return stats["num_allocs"], stats["num_frees"]

    boundaries = [counts()]  # (allocations, frees) at each step boundary
    start = time.perf_counter()
    for _ in range(args.steps):
        if keep:
            # As `loss, output = step()` in a loop: the last step's output is
            # freed only once the next step has returned its own.
            kept = step()  # noqa: F841
        else:
            step()
        boundaries.append(counts())
    seconds = time.perf_counter() - start
    stats = tensormem_torch.stats()
    shape = ({"sequence_lengths": step.sequence_lengths} if resolution is None
             else {"resolution": resolution})
    print(json.dumps({
        "model": args.model, "workload": args.workload, "mode": mode, "batch": batch,
        **shape, "steps": args.steps, "threads": args.threads,
        "seconds": round(seconds, 3), "num_allocs": stats["num_allocs"],
        "allocs_before_steps": boundaries[0][0], "frees_before_steps": boundaries[0][1],
        "step_allocs": [b[0] - a[0] for a, b in zip(boundaries, boundaries[1:])],
        "step_frees": [b[1] - a[1] for a, b in zip(boundaries, boundaries[1:])],
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
    import language_models  # only names here; the models run in the workers
    import models

    known = models.names() + language_models.names()

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(known),
                        help="comma-separated (default: all)")
    parser.add_argument("--workloads", default=",".join(WORKLOADS),
                        help=f"comma-separated among {', '.join(WORKLOADS)}")
    parser.add_argument("--steps", type=int, default=2,
                        help="steps per workload (the first one warms the pool up)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--name-steps", action="store_true",
                        help="name the traces <model>.<workload>_s<steps> (and their "
                             "manifest entries)")
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
        if name not in known:
            parser.error(f"unknown model '{name}'; known: {', '.join(known)}")
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
            label = f"{name}.{workload}" + (f"_s{args.steps}" if args.name_steps else "")
            trace = os.path.join(args.out, f"{label}.trace.gz")
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
            manifest[label] = summary
            print(f"{name:24} {workload:9} {summary['seconds']:7.2f}s  "
                  f"peak live {summary['peak_live_bytes'] / 2**20:8.1f} MiB  "
                  f"peak pool {summary['peak_pool_bytes'] / 2**20:8.1f} MiB")
            with open(manifest_path, "w", encoding="utf-8") as f:
                json.dump(dict(sorted(manifest.items())), f, indent=1)
                f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
