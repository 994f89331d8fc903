#!/usr/bin/env bash
# gpu-check.sh: tensormem on a real GPU, from the self-contained GPU bundle
# (`make gpu-bundle` builds it; docs/gpu-bundle.md). Needs the NVIDIA driver
# and, for the PyTorch steps, a python3 with CUDA-enabled PyTorch and
# torchvision; nothing else.
#
#   ./gpu-check.sh [--fake-driver] [--budget SECONDS] [--rounds N] [OUT]
#                                             # OUT: ./gpu-check-out; N: 3
#
# Steps (each time-boxed; all of them together within --budget, 450 s unless
# told): 1 device, 2 CUDA conformance tests on the real driver, 3 replays on
# cuda and cuda-vmm against the simulated upstream, 4 PyTorch training with
# PyTorch's allocator and with tensormem's (tight, then planned), 5 PyTorch's
# own allocator recorded over the training loops and under several
# PYTORCH_CUDA_ALLOC_CONF settings, 6 OUT/summary.json and
# OUT/summary.txt. Exit 0 only if every step passed. --fake-driver is the
# rehearsal on a machine without a GPU: the driver is the bundle's fake, and
# the PyTorch steps are reported as not run (the exit status ignores them).
set -uo pipefail
bundle=$(cd "$(dirname "$0")" && pwd)
fake=0
budget=450
rounds=3
out=""
while [ $# -gt 0 ]; do
  case $1 in
    --fake-driver) fake=1 ;;
    --budget) budget=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    -*) echo "gpu-check: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) out=$1 ;;
  esac
  shift
done
out=$(mkdir -p "${out:-gpu-check-out}" && cd "${out:-gpu-check-out}" && pwd)
mkdir -p "$out/steps" "$out/training" "$out/snapshots" "$out/replays"
deadline=$((SECONDS + budget))
cli="$bundle/bin/tensormem"
export TENSORMEM_CUDA_TORCH_LIBRARY="$bundle/lib/libtensormem_cuda_torch.so"
export TENSORMEM_CUDA_TESTS_NEED_DRIVER=1
export PYTHONPATH="$bundle/python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
if [ "$fake" = 1 ]; then
  export TENSORMEM_CUDA_DRIVER="$bundle/lib/libtensormem_fake_cuda.so"
else
  unset TENSORMEM_CUDA_DRIVER
fi
python=${GPU_CHECK_PYTHON:-python3}

# step NAME SECONDS COMMAND...: runs COMMAND with its output in
# steps/NAME.log, at most SECONDS (and never past the deadline); records
# passed/failed/timed out with the time taken in steps/NAME.status.
step() {
  local name=$1 limit=$2
  shift 2
  local left=$((deadline - SECONDS))
  [ "$limit" -gt "$left" ] && limit=$left
  if [ "$limit" -le 0 ]; then
    echo "not_run 0 the check's budget was spent" >"$out/steps/$name.status"
    echo "== $name: not run (budget spent)"
    return 1
  fi
  local start=$SECONDS rc=0
  echo "== $name (at most ${limit} s)"
  timeout --kill-after=10 "$limit" "$@" >"$out/steps/$name.log" 2>&1 || rc=$?
  local verdict=passed
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    verdict=timed_out
  elif [ "$rc" = 77 ]; then
    verdict=unavailable
  elif [ "$rc" != 0 ]; then
    verdict=failed
  fi
  echo "$verdict $((SECONDS - start)) exit $rc" >"$out/steps/$name.status"
  echo "   $verdict in $((SECONDS - start)) s"
  [ "$verdict" = passed ] || tail -n 15 "$out/steps/$name.log"
  [ "$verdict" = passed ]
}

not_run() {  # NAME WHY
  echo "not_run 0 $2" >"$out/steps/$1.status"
  echo "== $1: not run ($2)"
}

# 1. The device, as nvidia-smi and as tensormem's driver loader see it.
if [ "$fake" = 0 ]; then
  step 1-nvidia-smi 30 nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm \
    --format=csv
fi
step 1-devices 30 "$cli" devices --json
cp "$out/steps/1-devices.log" "$out/devices.json" 2>/dev/null

# 2. The conformance suite and the BFC scenarios on the driver (gtest JSON).
for test in cuda_sub_allocator_test cuda_plugin_options_test cuda_torch_plugin_test; do
  step "2-$test" 90 "$bundle/bin/$test" "--gtest_output=json:$out/steps/2-$test.json"
done

# 3. Replays on cuda and cuda-vmm against the simulated upstream and the fake driver.
step 3-replays 120 "$bundle/tools/replay_check.sh" "$cli" \
  "$bundle/lib/libtensormem_fake_cuda.so" "$bundle/data" "$out/replays"

# 4. PyTorch training, each model with each allocator in its own process; then
# PyTorch's allocator hooks and out of memory with tensormem's.
have_torch() {
  "$python" -c 'import sys, torch, torchvision
if not torch.cuda.is_available(): sys.exit(f"torch {torch.__version__} sees no GPU")' \
    >"$out/steps/torch-probe.log" 2>&1
}
torch_state=0
have_torch || torch_state=$?
# train NAME ARGS...: one run of train_check.py as step NAME; 0 if it passed.
train() {
  local name=$1
  shift
  if [ "$fake" = 1 ]; then
    not_run "$name" "rehearsal: the fake driver runs no kernels"
    return 1
  elif [ "$torch_state" != 0 ]; then
    echo "failed 0 no CUDA-enabled PyTorch with torchvision ($(tail -n 1 "$out/steps/torch-probe.log"))" \
      >"$out/steps/$name.status"
    return 1
  else
    step "$name" 90 "$python" "$bundle/tools/train_check.py" "$@"
  fi
}
# Rounds interleave the allocators, so that a slow stretch of the machine
# does not fall on one of them; step times are compared over all rounds.
models="resnet50 gpt2-small"
for round in $(seq 1 "$rounds"); do
  for model in $models; do
    for allocator in pytorch tensormem; do
      train "4-train-$model-$allocator-$round" --model "$model" --allocator "$allocator" \
        --out "$out/training/$model.$allocator.$round.json"
    done
  done
done
# The planned policy: the same training served, once it has learnt the
# loop, from an offline plan (its steady-state peak is in the JSON); each
# step marked.
for model in $models; do
  train "4-train-$model-planned" --model "$model" --allocator tensormem --policy planned \
    --mark-iterations --out "$out/training/$model.planned.1.json"
done
if [ "$fake" = 1 ]; then not_run 4-plugin-probe "rehearsal: the fake driver runs no kernels"
elif [ "$torch_state" != 0 ]; then echo "failed 0 no CUDA-enabled PyTorch" >"$out/steps/4-plugin-probe.status"
else
  step 4-plugin-probe 60 "$python" "$bundle/tools/plugin_probe.py" \
    --out "$out/training/plugin_probe.json"
fi
if [ "$fake" = 0 ] && [ "$torch_state" = 0 ]; then
  step 4-compare 60 "$python" "$bundle/tools/compare_training.py" "$out/training"
else
  not_run 4-compare "no training ran"
fi

# 5. PyTorch's own allocator under several settings, recorded as snapshots.
record() {  # NAME CONF [ARGS...]
  local name=$1 conf=$2
  shift 2
  if [ "$fake" = 1 ]; then not_run "5-record-$name" "rehearsal: no GPU"; return; fi
  if [ "$torch_state" != 0 ]; then
    echo "failed 0 no CUDA-enabled PyTorch" >"$out/steps/5-record-$name.status"; return
  fi
  PYTORCH_CUDA_ALLOC_CONF=$conf step "5-record-$name" 45 "$python" \
    "$bundle/tools/record_snapshots.py" --name "$name" \
    --out "$out/snapshots/$name.pickle.gz" "$@" &&
    step "5-replay-$name" 60 "$cli" replay "$out/snapshots/$name.pickle.gz" \
      --verify --json  # the pytorch policy, as the snapshot's settings say
}
# The same training loops under PyTorch's allocator, recorded: real loops for
# the planned policy and `tensormem whatif`.
for model in $models; do
  train "5-record-train-$model" --model "$model" --allocator pytorch --steps 8 --warmup 0 \
    --snapshot "$out/snapshots/train-$model.pickle.gz" --out "$out/snapshots/train-$model.json" &&
    step "5-replay-train-$model" 60 "$cli" replay "$out/snapshots/train-$model.pickle.gz" \
      --verify --json
done
record default ""
record expandable "expandable_segments:True"
record max_split_128 "max_split_size_mb:128"
record roundup_4 "roundup_power2_divisions:4"
record gc_0.6 "garbage_collection_threshold:0.6" --memory-fraction 0.02
record two_streams "" --streams 2

# 6. The summary.
"$python" "$bundle/tools/summarize.py" "$out" --fake-driver "$fake"
