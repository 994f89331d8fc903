#!/usr/bin/env python3
"""Do the steps of a recorded trace repeat? One line per step of every trace.

record.py writes, per trace, how many allocations and frees came before the
first step and in each step (manifest.json: allocs_before_steps, step_allocs,
...). This splits each trace at those boundaries and prints, per step:
allocations, the bytes they ask for, frees, the bytes live when the step
returns, and the earliest step whose allocation sizes, in order, are the same
as this one's ("= step 2"), or "new".

Example:
  tools/torch/loop_steps.py data/models/loops            # every trace of the manifest
  tools/torch/loop_steps.py data/models/loops --json
"""

import argparse
import gzip
import json
import os
import sys


def read_events(path):
    """[(op, id, bytes)] of a tensormem trace (bytes 0 for frees)."""
    events = []
    with (gzip.open if path.endswith(".gz") else open)(path, "rt", encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if not fields or fields[0].startswith("#"):
                continue
            if fields[0] == "a":
                events.append(("a", int(fields[1]), int(fields[2])))
            elif fields[0] == "f":
                events.append(("f", int(fields[1]), 0))
    return events


def split_steps(events, summary):
    """Per step: sizes asked (in order), frees, live bytes at the step's end."""
    ends = [summary["allocs_before_steps"] + summary["frees_before_steps"]]
    for allocs, frees in zip(summary["step_allocs"], summary["step_frees"]):
        ends.append(ends[-1] + allocs + frees)  # events are allocations and frees
    if len(events) < ends[-1]:
        raise ValueError(f"{len(events)} events in the trace, {ends[-1]} in the manifest")
    live = {}
    for op, block, size in events[:ends[0]]:
        if op == "a":
            live[block] = size
        else:
            del live[block]
    steps = []
    for first, last in zip(ends, ends[1:]):
        sizes = []
        for op, block, size in events[first:last]:
            if op == "a":
                sizes.append(size)
                live[block] = size
            else:
                del live[block]
        steps.append({"sizes": sizes, "frees": last - first - len(sizes),
                      "live_after": sum(live.values())})
    return steps


def describe(steps):
    rows = []
    for index, step in enumerate(steps):
        same = next((j + 1 for j in range(index) if steps[j]["sizes"] == step["sizes"]), None)
        rows.append({"step": index + 1, "allocs": len(step["sizes"]),
                     "bytes": sum(step["sizes"]), "frees": step["frees"],
                     "live_after": step["live_after"], "same_sizes_as": same})
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", help="a folder with manifest.json and its traces")
    parser.add_argument("--json", action="store_true", help="one JSON object")
    args = parser.parse_args(argv)
    with open(os.path.join(args.folder, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    report = {}
    for label, summary in manifest.items():
        if "step_allocs" not in summary:
            continue
        events = read_events(os.path.join(args.folder, summary["trace"]))
        rows = describe(split_steps(events, summary))
        for row, length in zip(rows, summary.get("sequence_lengths", [])):
            row["sequence_length"] = length
        report[label] = {"allocs_before_steps": summary["allocs_before_steps"], "steps": rows}
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    for label, entry in report.items():
        print(f"{label}: {entry['allocs_before_steps']} allocations before the first step")
        for row in entry["steps"]:
            length = f"  length {row['sequence_length']:3}" if "sequence_length" in row else ""
            same = f"= step {row['same_sizes_as']}" if row["same_sizes_as"] else "new"
            print(f"  step {row['step']}{length}  {row['allocs']:5} allocs "
                  f"{row['bytes'] / 2**20:9.1f} MiB  {row['frees']:5} frees  "
                  f"live after {row['live_after'] / 2**20:7.1f} MiB  sizes {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
