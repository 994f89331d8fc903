#!/usr/bin/env python3
"""Online vs offline memory for every trace of the real-model corpus.

For each <model>.<workload>.trace.gz, with the `tensormem` binary:
  - `replay` with growth (TensorFlow's allow_growth): peak pool / peak live;
  - `replay --no-growth --min-limit`: the smallest limit the BFC allocator
    needs without growth, as a ratio to peak live (TensorFlow's default setting);
  - `convert` to a buffer set and `plan` it offline: TFLite's greedy_by_size,
    best_fit_multi and the anytime `optimal` (with --time-limit), each as
    total / peak live (peak live is the lower bound of any placement).
Prints a Markdown table (docs/pytorch.md quotes it), or one JSON object.

Example:
  tools/torch/analyze_corpus.py --tensormem build/default/tensormem --time-limit 2s
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

PLANNERS = ("greedy_by_size", "best_fit_multi", "optimal")


def run_json(command):
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({result.returncode}):\n{result.stderr}")
    return json.loads(result.stdout)


def analyze(binary, trace, time_limit, scratch):
    grown = run_json([binary, "replay", trace, "--json"])
    fixed = run_json([binary, "replay", trace, "--no-growth", "--min-limit", "--json"])
    buffers = os.path.join(scratch, os.path.basename(trace).replace(".trace.gz", ".csv"))
    run_json([binary, "convert", trace, buffers, "--json"])
    live = grown["peak_live_bytes"]
    row = {
        "trace": os.path.basename(trace), "events": grown["events"],
        "peak_live_bytes": live,
        "growth_peak_pool_bytes": grown["peak_pool_bytes"],
        "growth_fragmentation": grown["fragmentation"],
        "min_limit_bytes": fixed["min_limit_bytes"],
        "min_limit_ratio": fixed["min_limit_ratio"],
    }
    for strategy in PLANNERS:
        command = [binary, "plan", buffers, "--strategy", strategy, "--json"]
        if strategy == "optimal":
            command += ["--time-limit", time_limit]
        plan = run_json(command)
        row[f"{strategy}_bytes"] = plan["total_size"]
        row[f"{strategy}_ratio"] = plan["total_size"] / max(plan["lower_bound"], 1)
    return row


def markdown(rows):
    mib = 2.0**20
    lines = ["| trace | events | peak live MiB | BFC growth pool/live | BFC min limit/live | "
             "greedy_by_size | best_fit_multi | optimal |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        lines.append(
            f"| {row['trace'].replace('.trace.gz', '')} | {row['events']} | "
            f"{row['peak_live_bytes'] / mib:.1f} | {row['growth_fragmentation']:.2f} | "
            f"{row['min_limit_ratio']:.3f} | {row['greedy_by_size_ratio']:.3f} | "
            f"{row['best_fit_multi_ratio']:.3f} | {row['optimal_ratio']:.3f} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tensormem", default="build/default/tensormem",
                        help="path of the tensormem binary")
    parser.add_argument("--corpus", default="data/models")
    parser.add_argument("--time-limit", default="2s", help="budget of the optimal planner")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not os.access(args.tensormem, os.X_OK):
        parser.error(f"{args.tensormem}: not an executable (build tensormem first)")
    traces = sorted(glob.glob(os.path.join(args.corpus, "*.trace.gz")))
    if not traces:
        parser.error(f"no *.trace.gz in {args.corpus}")
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for trace in traces:
            try:
                rows.append(analyze(args.tensormem, trace, args.time_limit, scratch))
            except RuntimeError as error:
                print(f"analyze_corpus: {error}", file=sys.stderr)
                return 1
            if not args.json:
                print(f"done {os.path.basename(trace)}", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps({"time_limit": args.time_limit, "results": rows}))
    else:
        print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
