#!/usr/bin/env python3
"""Plans every bundled ONNX model and prints the table of docs/onnx.md.

For each model (activations fused, as a runtime that fuses conv+activation
does): the number of intermediates, the lower bound (peak
of live bytes), every offset strategy of `tensormem plan --strategy all`
(`naive`: one buffer each, the total of the intermediates), the
`optimal` search, and the high-water mark of TFLite's arena planner
(`tensormem arena`, planners greedy and queue). Sizes in MiB; ratios to the
lower bound in parentheses.

Example:
  tools/onnx/model_table.py --tensormem build/default/tensormem
  tools/onnx/model_table.py --models data/onnx/resnet50.onnx --time-limit 1s
"""

import argparse
import glob
import json
import os
import subprocess
import sys

MIB = 1024 * 1024


def run_json(tensormem, arguments):
    result = subprocess.run([tensormem] + arguments + ["--json"], check=False,
                            capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"model_table: tensormem {' '.join(arguments)} failed:\n"
                 f"{result.stderr}")
    return json.loads(result.stdout)


def measure(tensormem, model, time_limit):
    common = [model, "--fuse-activations"]
    plans = run_json(tensormem, ["plan"] + common + ["--strategy", "all"])
    optimal = run_json(tensormem, ["plan"] + common +
                       ["--strategy", "optimal", "--time-limit", time_limit])
    row = {"intermediates": plans["buffers"], "lower_bound": plans["lower_bound"],
           "strategies": {}}
    for entry in plans["strategies"]:
        row["strategies"][entry["strategy"]] = entry.get("total_size")
    row["strategies"]["optimal"] = optimal["total_size"]
    row["optimal_proven"] = optimal.get("proven_optimal", False)
    for planner in ("greedy", "queue"):
        arena = run_json(tensormem, ["arena"] + common + ["--strategy", planner])
        row[f"arena_{planner}"] = (arena["high_water_mark"], arena["lower_bound"])
    return row


def cell(size, bound):
    if size is None:
        return "skipped"
    return f"{size / MIB:.2f} ({size / bound:.3f})"


def table(rows):
    names = list(rows)
    lines = ["| | " + " | ".join(names) + " |",
             "|---|" + "---:|" * len(names)]

    def add(label, values):
        lines.append(f"| {label} | " + " | ".join(values) + " |")

    add("intermediates", [str(rows[n]["intermediates"]) for n in names])
    add("lower bound", [f"{rows[n]['lower_bound'] / MIB:.2f}" for n in names])
    strategies = list(rows[names[0]]["strategies"])
    for strategy in strategies:
        add(strategy, [cell(rows[n]["strategies"].get(strategy), rows[n]["lower_bound"])
                       + ("" if strategy != "optimal" or rows[n]["optimal_proven"]
                          else " *")
                       for n in names])
    for planner in ("greedy", "queue"):
        add(f"arena `{planner}`",
            [cell(*rows[n][f"arena_{planner}"]) for n in names])
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tensormem", default="build/default/tensormem")
    parser.add_argument("--models", nargs="*",
                        default=sorted(glob.glob("data/onnx/*.onnx")))
    parser.add_argument("--time-limit", default="2s",
                        help="optimal's search budget per model")
    parser.add_argument("--out", help="also write the table to this file")
    args = parser.parse_args()
    rows = {}
    for model in args.models:
        name = os.path.basename(model).removesuffix(".onnx")
        rows[name] = measure(args.tensormem, model, args.time_limit)
    text = table(rows)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as out:
            out.write(text + "\n")


if __name__ == "__main__":
    main()
