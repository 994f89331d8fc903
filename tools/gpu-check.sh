#!/usr/bin/env bash
# tools/gpu-check.sh: the CUDA path on a machine with an NVIDIA GPU.
#
# 1. builds tensormem with the CUDA toolkit (no -lcuda: the driver is loaded
#    at run time);
# 2. runs the CUDA tests against the real driver (the same binaries ctest
#    runs against the fake, TENSORMEM_CUDA_DRIVER unset; checks that need the
#    fake's controls report SKIPPED);
# 3. replays a bundled trace on cuda-vmm (real device memory);
# 4. when a CUDA-enabled PyTorch with torchvision is importable: a few
#    training steps of a torchvision model with PyTorch's allocator and with
#    tensormem's (CUDAPluggableAllocator), compared (step time, peak reserved,
#    identical outputs).
# Exit 0 when everything ran and passed, 77 when there is no GPU, 1 otherwise.
#
#   tools/gpu-check.sh [build-dir]      # default build/gpu-check
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build/gpu-check}
model=${GPU_CHECK_MODEL:-resnet18}

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu-check: no NVIDIA GPU here (nvidia-smi -L failed); nothing was run"
  exit 77
fi
nvidia-smi -L
unset TENSORMEM_CUDA_DRIVER   # the real libcuda.so.1 from here on

echo "== build"
mkdir -p "$build_dir"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTENSORMEM_BUILD_CUDA=ON >"$build_dir/configure.log" 2>&1 ||
  { cat "$build_dir/configure.log"; exit 1; }
grep -q "CUDA targets skipped" "$build_dir/configure.log" &&
  { echo "gpu-check: the CUDA toolkit was not found"; exit 1; }
cmake --build "$build_dir" -j"$(nproc)" \
  --target tensormem cuda_sub_allocator_test cuda_torch_plugin_test \
  cuda_plugin_options_test tensormem_cuda_torch

failures=0
run() {
  echo "== $*"
  if ! "$@"; then
    echo "gpu-check: FAILED: $*"
    failures=$((failures + 1))
  fi
}

run "$build_dir/tests/cuda/cuda_sub_allocator_test"
run "$build_dir/src/torch/cuda_torch_plugin_test"
run "$build_dir/src/torch/cuda_plugin_options_test"
run "$build_dir/tensormem" replay data/models/resnet50.train_b8.trace.gz \
  --sub-allocator cuda-vmm --memory-limit 4GiB

if python3 -c 'import torch, torchvision; assert torch.cuda.is_available()' 2>/dev/null; then
  out=$(mktemp -d)
  export TENSORMEM_CUDA_TORCH_LIBRARY="$build_dir/python/tensormem/libtensormem_cuda_torch.so"
  run python3 tools/torch/cuda_pluggable_check.py --allocator pytorch \
    --model "$model" --out "$out/pytorch.json"
  run python3 tools/torch/cuda_pluggable_check.py --allocator tensormem \
    --model "$model" --out "$out/tensormem.json"
  run python3 - "$out/pytorch.json" "$out/tensormem.json" <<'PY'
import json, sys
pytorch, tensormem = (json.load(open(path)) for path in sys.argv[1:])
print(f"median step: pytorch {pytorch['median_step_ms']:.2f} ms, "
      f"tensormem {tensormem['median_step_ms']:.2f} ms "
      f"({tensormem['median_step_ms'] / pytorch['median_step_ms']:.2f}x)")
print(f"peak reserved: pytorch {pytorch['peak_reserved_bytes'] / 2**20:.1f} MiB, "
      f"tensormem {tensormem['peak_reserved_bytes'] / 2**20:.1f} MiB")
same = pytorch["parameters_sha256"] == tensormem["parameters_sha256"]
print("outputs identical" if same else "OUTPUTS DIFFER")
sys.exit(0 if same else 1)
PY
else
  echo "== PyTorch with CUDA and torchvision not importable: training comparison not run"
fi

if [ "$failures" -gt 0 ]; then
  echo "gpu-check: $failures step(s) failed"
  exit 1
fi
echo "gpu-check: all steps passed"
