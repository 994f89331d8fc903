"""Compares the training runs of the GPU bundle's check (step 4): for each
model, tensormem's run against PyTorch's: parameters bit for bit, peak
reserved (goal <= 0.90x) and median step time (goal <= 1.03x).

  python3 compare_training.py OUT/training [--rerun train_check.py]

When the parameters differ, --rerun runs PyTorch's allocator once more: if
PyTorch differs from itself too, the model is not deterministic on this
machine and the comparison says so. Writes OUT/training/comparison.json;
exit 0 only if every model's parameters are identical.
"""

import argparse
import glob
import json
import os
import subprocess
import sys

PEAK_GOAL = 0.90
TIME_GOAL = 1.03


def compare(directory, model, rerun):
    runs = {}
    for allocator in ("pytorch", "tensormem"):
        path = os.path.join(directory, f"{model}.{allocator}.json")
        with open(path) as file:
            runs[allocator] = json.load(file)
    pytorch, tensormem = runs["pytorch"], runs["tensormem"]
    row = {"model": model}
    for allocator, run in runs.items():
        if "error" in run:
            row["error"] = f"{allocator}: {run['error']}"
            return row
    row["identical_parameters"] = pytorch["parameters_sha256"] == tensormem["parameters_sha256"]
    if not row["identical_parameters"] and rerun:
        again = os.path.join(directory, f"{model}.pytorch-again.json")
        subprocess.run([sys.executable, rerun, "--model", model, "--allocator", "pytorch",
                        "--out", again], check=False, stdout=subprocess.DEVNULL)
        with open(again) as file:
            row["pytorch_deterministic"] = json.load(file).get(
                "parameters_sha256") == pytorch["parameters_sha256"]
    row["peak_reserved_pytorch"] = pytorch["peak_reserved_bytes"]
    row["peak_reserved_tensormem"] = tensormem["peak_reserved_bytes"]
    row["peak_allocated_pytorch"] = pytorch.get("peak_allocated_bytes")
    row["peak_ratio"] = tensormem["peak_reserved_bytes"] / pytorch["peak_reserved_bytes"]
    # The floor no allocator can go under: PyTorch's peak of allocated bytes.
    row["peak_over_allocated"] = (tensormem["peak_reserved_bytes"] / pytorch["peak_allocated_bytes"]
                                  if pytorch.get("peak_allocated_bytes") else None)
    row["pytorch_over_allocated"] = (pytorch["peak_reserved_bytes"] / pytorch["peak_allocated_bytes"]
                                     if pytorch.get("peak_allocated_bytes") else None)
    row["step_ms_pytorch"] = pytorch["median_step_ms"]
    row["step_ms_tensormem"] = tensormem["median_step_ms"]
    row["step_ratio"] = tensormem["median_step_ms"] / pytorch["median_step_ms"]
    row["peak_goal_met"] = row["peak_ratio"] <= PEAK_GOAL
    row["time_goal_met"] = row["step_ratio"] <= TIME_GOAL
    row["policy"] = tensormem.get("policy")
    row["sub_allocator"] = tensormem.get("sub_allocator")
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory")
    parser.add_argument("--rerun", help="train_check.py, to test PyTorch against itself")
    args = parser.parse_args()
    models = sorted({os.path.basename(path).split(".")[0]
                     for path in glob.glob(os.path.join(args.directory, "*.pytorch.json"))})
    rows = []
    for model in models:
        try:
            rows.append(compare(args.directory, model, args.rerun))
        except (OSError, KeyError, ValueError) as error:
            rows.append({"model": model, "error": f"{type(error).__name__}: {error}"})
    with open(os.path.join(args.directory, "comparison.json"), "w") as file:
        json.dump(rows, file, indent=2)
    for row in rows:
        if "error" in row:
            print(f"{row['model']}: {row['error']}")
            continue
        print(f"{row['model']}: parameters {'identical' if row['identical_parameters'] else 'DIFFER'}"
              f"{'' if 'pytorch_deterministic' not in row else ' (PyTorch against itself: ' + ('same' if row['pytorch_deterministic'] else 'differs too') + ')'}"
              f", peak reserved {row['peak_reserved_tensormem'] / 2**20:.0f} MiB vs "
              f"{row['peak_reserved_pytorch'] / 2**20:.0f} MiB ({row['peak_ratio']:.3f}x), "
              f"step {row['step_ms_tensormem']:.2f} ms vs {row['step_ms_pytorch']:.2f} ms "
              f"({row['step_ratio']:.3f}x)")
    ok = bool(rows) and all(row.get("identical_parameters") for row in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
