#!/usr/bin/env bash
# Regenerates the real-model corpus in data/models (or $1): allocation traces of
# each model run through tensormem's PyTorch plug-in (record.py) and buffer sets
# of its intermediate tensors (export_buffers.py). Needs python3-torch,
# python3-torchvision and a build with libtensormem_torch.so (make build).
#
#   tools/torch/make_corpus.sh            # about 10 minutes on 2 idle cores
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-data/models}
python=${PYTHON:-/usr/bin/python3}
models=(resnet18 resnet50 mobilenet_v2 mobilenet_v3_large efficientnet_b0 inception_v3
        deeplabv3_mobilenet_v3 vit_b_16 squeezenet1_1)
export PYTHONPATH=build/default/python:tools/torch  # the package as the build stages it
"$python" tools/torch/record.py --models "$(IFS=,; echo "${models[*]}")" --out "$out" \
    --steps 2 --threads 1
for model in "${models[@]}"; do
  "$python" tools/torch/export_buffers.py "$model" -o "$out/$model.buffers.csv"
done
