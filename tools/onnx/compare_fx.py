#!/usr/bin/env python3
"""Compares the ONNX front end with the torch.fx buffer sets (docs/onnx.md).

For each bundled model with a torch.fx buffer set (tools/torch/export_buffers.py,
data/models/<model>.buffers.csv): intermediates, total bytes and peak of live
bytes of both, activations fused on the ONNX side as the fx sets fuse them.
A model whose fx set was made at another resolution (DeepLab: 224 in
data/models, 513 in data/onnx) is compared against --fx-dir's copy when given.

Example:
  tools/onnx/compare_fx.py --tensormem build/default/tensormem
  tools/torch/export_buffers.py deeplabv3_mobilenet_v3 --resolution 513 \\
      -o /tmp/fx/deeplabv3_mobilenet_v3.buffers.csv
  tools/onnx/compare_fx.py --fx-dir /tmp/fx --models deeplabv3_mobilenet_v3
"""

import argparse
import glob
import json
import os
import subprocess
import sys

MIB = 1024 * 1024


def naive_plan(tensormem, arguments):
    result = subprocess.run([tensormem, "plan"] + arguments +
                            ["--strategy", "naive", "--json"],
                            check=False, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"compare_fx: tensormem plan {' '.join(arguments)}:\n{result.stderr}")
    plan = json.loads(result.stdout)
    return plan["buffers"], plan["total_size"], plan["lower_bound"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tensormem", default="build/default/tensormem")
    parser.add_argument("--fx-dir", default="data/models")
    parser.add_argument("--models", nargs="*", default=[
        os.path.basename(path).removesuffix(".onnx")
        for path in sorted(glob.glob("data/onnx/*.onnx"))])
    args = parser.parse_args()
    print("| model | intermediates fx / ONNX | total MiB fx / ONNX | "
          "peak live MiB fx / ONNX |")
    print("|---|---:|---:|---:|")
    for model in args.models:
        fx_path = os.path.join(args.fx_dir, f"{model}.buffers.csv")
        if not os.path.exists(fx_path):
            print(f"| `{model}` | no fx set in {args.fx_dir} | | |")
            continue
        fx = naive_plan(args.tensormem, [fx_path])
        onnx = naive_plan(args.tensormem,
                          [f"data/onnx/{model}.onnx", "--fuse-activations"])
        print(f"| `{model}` | {fx[0]} / {onnx[0]} | {fx[1] / MIB:.2f} / "
              f"{onnx[1] / MIB:.2f} | {fx[2] / MIB:.2f} / {onnx[2] / MIB:.2f} |")


if __name__ == "__main__":
    main()
