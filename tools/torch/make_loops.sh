#!/usr/bin/env bash
# Regenerates data/models/loops (or $1): allocation traces of 10 steps each, for
# allocators that learn a repeating training or inference loop. The torchvision
# models run as in the main corpus (make_corpus.sh: batch 8, 224x224, one
# thread); the transformer language model (language_models.py) at a fixed 128
# tokens per sequence, with a sequence length that changes every step
# (transformer_varlen), and with each step's logits kept by the loop until
# the next step's come (trainkeep). Needs python3-torch, python3-torchvision and a build
# with libtensormem_torch.so (make build, or only the targets tensormem_torch
# and tensormem_python).
#
#   tools/torch/make_loops.sh            # about 6 minutes on 2 idle cores
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-data/models/loops}
python=${PYTHON:-/usr/bin/python3}
steps=10
record() {  # models workloads
  "$python" tools/torch/record.py --models "$1" --workloads "$2" --out "$out" \
      --steps "$steps" --threads 1 --name-steps
}
record resnet18,mobilenet_v2,transformer train_b8,infer_b8
record transformer_varlen train_b8
record transformer trainkeep_b8
