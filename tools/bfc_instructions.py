#!/usr/bin/env python3
"""Instructions per BFC allocator operation, counted by callgrind.

Runs `bfc_speed_benchmark --count=<workload>` under valgrind's callgrind,
collecting only inside the warm replay passes (CountedPasses; with --cold, the
first pass from an empty allocator, growth included), and prints
instructions per operation (an allocation or a free) for each workload, and,
with --top, the functions that spend them (self cost per operation). Counts are
repeatable to a fraction of a percent, unlike timings on a shared machine.

  tools/bfc_instructions.py --policy tf resnet50 synthetic --top 15
  tools/bfc_instructions.py --json   # every workload, tf and tight
  tools/bfc_instructions.py --policy pytorch --streams 2 resnet50
      # two copies of the stream interleaved in one pool, as Interleaved/

Needs valgrind (callgrind, callgrind_annotate) and a built benchmark
(cmake --build build/default --target bfc_speed_benchmark).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKLOADS = ["resnet50", "mobilenet_v2", "efficientnet_b0", "inception_v3",
             "vit_b_16", "synthetic"]


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("workloads", nargs="*", default=WORKLOADS,
                        help="real trace names or 'synthetic' (default: all)")
    parser.add_argument("--policy", action="append",
                        help="tf, tight, ... (repeatable; default tf and tight)")
    parser.add_argument("--binary", default=os.path.join(
        REPO, "build/default/bench/bfc_speed_benchmark"))
    parser.add_argument("--passes", type=int, default=1)
    parser.add_argument("--streams", type=int, default=1,
                        help="copies of the workload interleaved in one "
                             "allocator (default 1)")
    parser.add_argument("--cold", action="store_true",
                        help="count the first pass, from an empty allocator "
                             "(growth included), instead of warm passes")
    parser.add_argument("--top", type=int, default=0,
                        help="also list the N costliest functions (self)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    for workload in args.workloads:
        if workload not in WORKLOADS:
            parser.error(f"unknown workload {workload!r}; "
                         f"known: {', '.join(WORKLOADS)}")
    if args.passes < 1 or args.streams < 1:
        parser.error("--passes and --streams must be at least 1")
    return args


def count(binary, workload, policy, passes, top, cold, streams):
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "callgrind.out")
        run = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
             "--toggle-collect=*CountedPasses*", binary,
             f"--count={workload}", f"--policy={policy}",
             f"--passes={passes}", f"--streams={streams}"] +
            (["--cold"] if cold else []),
            capture_output=True, text=True)
        match = re.search(r"operations (\d+)", run.stdout)
        if run.returncode != 0 or not match:
            sys.exit(f"{binary} --count={workload} --policy={policy} failed "
                     f"(exit {run.returncode}):\n{run.stderr[-2000:]}")
        operations = int(match.group(1))
        annotate = subprocess.run(
            ["callgrind_annotate", "--inclusive=no", "--auto=no", "--threshold=100", out],
            capture_output=True, text=True, check=True).stdout
    total = None
    by_function = {}
    for line in annotate.splitlines():
        fields = line.split(None, 1)
        if len(fields) < 2 or not re.fullmatch(r"[\d,]+", fields[0]):
            continue
        ir = int(fields[0].replace(",", ""))
        if "PROGRAM TOTALS" in fields[1]:
            total = ir
            continue
        # "( 5.72%)  path/file.cc:function(args) [object]": code inlined from
        # headers is listed per header; sum it into its function.
        location = re.sub(r"^\(\s*[\d.]+%\)\s*", "", fields[1])
        location = location.split(" [")[0]
        name = re.sub(r"^[^:]*:(?!:)", "", location, count=1).strip()
        by_function[name] = by_function.get(name, 0) + ir
    if total is None:
        sys.exit("callgrind_annotate printed no program totals")
    ranked = sorted(by_function.items(), key=lambda item: -item[1])[:top]
    functions = [{"function": name, "per_op": ir / operations}
                 for name, ir in ranked]
    return {"workload": workload, "policy": policy, "operations": operations,
            "instructions_per_op": total / operations, "top": functions}


def main():
    args = parse_args()
    for tool in ("valgrind", "callgrind_annotate"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} not found: install valgrind (apt-get install "
                     "valgrind)")
    if not os.access(args.binary, os.X_OK):
        sys.exit(f"{args.binary}: not built (cmake --build build/default "
                 "--target bfc_speed_benchmark)")
    results = []
    for policy in args.policy or ["tf", "tight"]:
        for workload in args.workloads:
            result = count(args.binary, workload, policy, args.passes,
                           args.top, args.cold, args.streams)
            results.append(result)
            if args.json:
                continue
            print(f"{policy:6} {workload:16} "
                  f"{result['instructions_per_op']:8.1f} instructions/op "
                  f"({result['operations']} ops)")
            for entry in result["top"]:
                print(f"    {entry['per_op']:7.1f}  {entry['function']}")
    if args.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
