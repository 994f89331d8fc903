"""The GPU bundle check's last step: OUT/summary.json and OUT/summary.txt
from what the steps left in OUT (steps/*.status and logs, devices.json,
training/comparison.json, the snapshot recordings and their replays).

  python3 summarize.py OUT [--fake-driver 0|1]

Exit 0 only if every step passed; in a rehearsal (--fake-driver 1) the steps
that need a real GPU are listed as not run and do not count.
"""

import argparse
import datetime
import glob
import json
import os
import sys

from compare_training import describe_planned


def read_json(path):
    try:
        with open(path) as file:
            return json.load(file)
    except (OSError, ValueError):
        return None


def last_json_line(path):
    """The last line of a log that parses as a JSON object (a step's result)."""
    try:
        with open(path) as file:
            lines = file.read().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return None


def gtest_counts(path):
    report = read_json(path)
    if report is None:
        return None
    counts = {"tests": 0, "failed": 0, "skipped": 0}
    for suite in report.get("testsuites", []):
        for test in suite.get("testsuite", []):
            counts["tests"] += 1
            if test.get("failures"):
                counts["failed"] += 1
            elif test.get("result") == "SKIPPED":
                counts["skipped"] += 1
    return counts


def steps(out):
    rows = {}
    for path in sorted(glob.glob(os.path.join(out, "steps", "*.status"))):
        name = os.path.basename(path)[:-len(".status")]
        verdict, seconds, *why = open(path).read().split(maxsplit=2)
        row = {"verdict": verdict, "seconds": int(seconds), "detail": " ".join(why).strip()}
        counts = gtest_counts(os.path.join(out, "steps", name + ".json"))
        if counts:
            row["gtest"] = counts
        rows[name] = row
    return rows


def snapshots(out):
    rows = []
    for path in sorted(glob.glob(os.path.join(out, "snapshots", "*.pickle.gz"))):
        name = os.path.basename(path)[:-len(".pickle.gz")]
        recorded = last_json_line(os.path.join(out, "steps", f"5-record-{name}.log")) or {}
        replayed = last_json_line(os.path.join(out, "steps", f"5-replay-{name}.log"))
        if replayed is None:  # a pretty-printed JSON object: the whole log
            replayed = read_json(os.path.join(out, "steps", f"5-replay-{name}.log")) or {}
        row = {"name": name, "bytes": os.path.getsize(path),
               "settings": recorded.get("settings"),
               "recorded_peak_reserved": recorded.get("peak_reserved_bytes"),
               "recorded_alloc_retries": recorded.get("num_alloc_retries"),
               "replayed_peak_reserved": replayed.get("peak_pool_bytes"),
               "divergences": (replayed.get("snapshot") or {}).get("divergences")}
        row["exact"] = (row["recorded_peak_reserved"] is not None
                        and row["recorded_peak_reserved"] == row["replayed_peak_reserved"]
                        and row["divergences"] == 0)
        rows.append(row)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--fake-driver", type=int, default=0)
    args = parser.parse_args()
    step_rows = steps(args.out)
    counted = {name: row for name, row in step_rows.items()
               if not (args.fake_driver and row["verdict"] == "not_run")}
    passed = bool(counted) and all(row["verdict"] == "passed" for row in counted.values())
    summary = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "rehearsal": bool(args.fake_driver),
        "passed": passed,
        "devices": read_json(os.path.join(args.out, "devices.json")),
        "steps": step_rows,
        "training": read_json(os.path.join(args.out, "training", "comparison.json")),
        "snapshots": snapshots(args.out),
        "plugin_probe": read_json(os.path.join(args.out, "training", "plugin_probe.json")),
    }
    with open(os.path.join(args.out, "summary.json"), "w") as file:
        json.dump(summary, file, indent=2)
    lines = [f"gpu-check {'rehearsal (fake driver)' if args.fake_driver else 'on a real GPU'}: "
             f"{'every step passed' if passed else 'FAILED'}"]
    for device in (summary["devices"] or {}).get("devices", []):
        lines.append(f"device {device['index']}: {device['name']}, "
                     f"{device['total_bytes'] / 2**30:.1f} GiB, driver "
                     f"{summary['devices']['driver_version']}, vmm granularity "
                     f"{device['vmm_recommended_granularity'] / 2**20:g} MiB")
    for name, row in step_rows.items():
        gtest = row.get("gtest")
        extra = (f" ({gtest['tests']} tests, {gtest['failed']} failed, {gtest['skipped']} skipped)"
                 if gtest else "")
        lines.append(f"  {row['verdict']:<11} {row['seconds']:>4} s  {name}{extra}"
                     f"{'' if row['verdict'] in ('passed',) else '  ' + row['detail']}")
    for row in summary["training"] or []:
        if "error" in row:
            lines.append(f"training {row['model']}: {row['error']}")
        else:
            lines.append(f"training {row['model']} ({row.get('rounds', 1)} rounds): parameters "
                         f"{'identical' if row['identical_parameters'] else 'DIFFER'}, peak reserved "
                         f"{row['peak_ratio']:.3f}x PyTorch's (PyTorch {row['pytorch_over_allocated']:.3f}x, "
                         f"tensormem {row['peak_over_allocated']:.3f}x the peak allocated), "
                         f"step time {row['step_ratio']:.3f}x")
            if "planned_iterations" in row or "planned_error" in row:
                lines.append(f"  {describe_planned(row)[2:]}")
    for row in summary["snapshots"]:
        lines.append(f"snapshot {row['name']}: recorded peak reserved "
                     f"{row['recorded_peak_reserved']}, replayed {row['replayed_peak_reserved']}, "
                     f"{row['divergences']} divergences ({'exact' if row['exact'] else 'DIFFERS'})")
    probe = summary["plugin_probe"] or {}
    for name, outcome in probe.get("probes", {}).items():
        lines.append(f"with tensormem, {name}: {outcome[:120]}")
    if "out_of_memory" in probe:
        lines.append(f"out of memory: {json.dumps(probe['out_of_memory'])[:300]}")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "summary.txt"), "w") as file:
        file.write(text)
    print(text, end="")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
