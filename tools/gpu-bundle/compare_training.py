"""Compares the training runs of the GPU bundle's check (step 4): for each
model, tensormem's runs against PyTorch's, over every round: parameters bit
for bit, peak reserved (goal <= 0.90x) and median step time (goal <= 1.03x).

  python3 compare_training.py OUT/training

Runs are MODEL.ALLOCATOR.ROUND.json; MODEL.planned.N.json are tensormem's
runs under the planned policy, compared on their steady-state peak (from the
iteration the plan took over) as well as their peak. When the parameters differ, PyTorch's
own rounds tell nondeterminism (PyTorch differs from itself) from a fault.
Writes OUT/training/comparison.json; exit 0 only if every model's parameters
are identical in every run.
"""

import argparse
import glob
import json
import os
import statistics
import sys

PEAK_GOAL = 0.90
TIME_GOAL = 1.03


def load_runs(directory, model, allocator):
    runs = []
    for path in sorted(glob.glob(os.path.join(directory, f"{model}.{allocator}.*.json"))):
        with open(path) as file:
            runs.append(json.load(file))
    if not runs:
        raise ValueError(f"no {allocator} run of {model}")
    return runs


def compare(directory, model):
    pytorch = load_runs(directory, model, "pytorch")
    tensormem = load_runs(directory, model, "tensormem")
    row = {"model": model, "rounds": min(len(pytorch), len(tensormem))}
    for run in pytorch + tensormem:
        if "error" in run:
            row["error"] = f"{run['allocator']}: {run['error']}"
            return row
    digests = {run["parameters_sha256"] for run in pytorch + tensormem}
    row["identical_parameters"] = len(digests) == 1
    row["pytorch_deterministic"] = len({run["parameters_sha256"] for run in pytorch}) == 1
    row["peak_reserved_pytorch"] = max(run["peak_reserved_bytes"] for run in pytorch)
    row["peak_reserved_tensormem"] = max(run["peak_reserved_bytes"] for run in tensormem)
    row["peak_allocated_pytorch"] = max(run["peak_allocated_bytes"] for run in pytorch)
    row["peak_ratio"] = row["peak_reserved_tensormem"] / row["peak_reserved_pytorch"]
    # The floor no allocator can go under: PyTorch's peak of allocated bytes.
    row["peak_over_allocated"] = row["peak_reserved_tensormem"] / row["peak_allocated_pytorch"]
    row["pytorch_over_allocated"] = row["peak_reserved_pytorch"] / row["peak_allocated_pytorch"]
    row["step_ms_pytorch"] = statistics.median(run["median_step_ms"] for run in pytorch)
    row["step_ms_tensormem"] = statistics.median(run["median_step_ms"] for run in tensormem)
    row["step_ratio"] = row["step_ms_tensormem"] / row["step_ms_pytorch"]
    row["step_ratio_per_round"] = [t["median_step_ms"] / p["median_step_ms"]
                                   for p, t in zip(pytorch, tensormem)]
    row["peak_goal_met"] = row["peak_ratio"] <= PEAK_GOAL
    row["time_goal_met"] = row["step_ratio"] <= TIME_GOAL
    row["policy"] = tensormem[0].get("policy")
    row["sub_allocator"] = tensormem[0].get("sub_allocator")
    add_planned(row, directory, model, pytorch)
    return row


def add_planned(row, directory, model, pytorch):
    """The planned policy's run beside the others: its parameters, its peak and
    steady-state peak reserved over PyTorch's peak allocated."""
    runs = sorted(glob.glob(os.path.join(directory, f"{model}.planned.*.json")))
    if not runs:
        return
    with open(runs[0]) as file:
        run = json.load(file)
    if "error" in run:
        row["planned_error"] = run["error"]
        return
    stats = run.get("tensormem_stats") or {}
    floor = row["peak_allocated_pytorch"]
    row["planned_identical_parameters"] = (
        run["parameters_sha256"] == pytorch[0]["parameters_sha256"])
    row["planned_iterations"] = stats.get("planned_iterations", 0)
    row["planned_peak_over_allocated"] = run["peak_reserved_bytes"] / floor
    steady = stats.get("steady_peak_pool_bytes")
    row["planned_steady_over_allocated"] = None if steady is None else steady / floor
    row["planned_final_over_allocated"] = run["final_reserved_bytes"] / floor
    row["planned_step_ratio"] = run["median_step_ms"] / row["step_ms_pytorch"]


def describe(row):
    if "error" in row:
        return f"{row['model']}: {row['error']}"
    same = "identical" if row["identical_parameters"] else "DIFFER"
    if not row["identical_parameters"]:
        same += (" (PyTorch against itself: "
                 f"{'same' if row['pytorch_deterministic'] else 'differs too'})")
    rounds = ", ".join(f"{ratio:.3f}" for ratio in row["step_ratio_per_round"])
    return describe_tight(row, same, rounds) + describe_planned(row)


def describe_planned(row):
    if "planned_error" in row:
        return f"; planned: {row['planned_error']}"
    if "planned_iterations" not in row:
        return ""
    steady = row["planned_steady_over_allocated"]
    return (f"; planned: parameters "
            f"{'identical' if row['planned_identical_parameters'] else 'DIFFER'}, "
            f"{row['planned_iterations']} iterations from a plan, peak "
            f"{row['planned_peak_over_allocated']:.3f}x, steady "
            f"{'none' if steady is None else f'{steady:.3f}x'}, final "
            f"{row['planned_final_over_allocated']:.3f}x the peak allocated, step "
            f"{row['planned_step_ratio']:.3f}x")


def describe_tight(row, same, rounds):
    return (f"{row['model']}: parameters {same} over {row['rounds']} rounds, peak reserved "
            f"{row['peak_reserved_tensormem'] / 2**20:.0f} MiB vs "
            f"{row['peak_reserved_pytorch'] / 2**20:.0f} MiB ({row['peak_ratio']:.3f}x), "
            f"step {row['step_ms_tensormem']:.2f} ms vs {row['step_ms_pytorch']:.2f} ms "
            f"({row['step_ratio']:.3f}x; rounds {rounds})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory")
    args = parser.parse_args()
    models = sorted({os.path.basename(path).split(".")[0]
                     for path in glob.glob(os.path.join(args.directory, "*.pytorch.*.json"))})
    rows = []
    for model in models:
        try:
            rows.append(compare(args.directory, model))
        except (OSError, KeyError, ValueError) as error:
            rows.append({"model": model, "error": f"{type(error).__name__}: {error}"})
    with open(os.path.join(args.directory, "comparison.json"), "w") as file:
        json.dump(rows, file, indent=2)
    for row in rows:
        print(describe(row))
    ok = bool(rows) and all(row.get("identical_parameters")
                            and row.get("planned_identical_parameters", True)
                            and "planned_error" not in row for row in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
