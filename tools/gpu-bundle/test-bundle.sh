#!/usr/bin/env bash
# test-bundle.sh BUNDLE: the GPU bundle works where it is copied, with an empty
# environment and nothing from this machine but glibc, libstdc++ and libgcc_s
# (ctest's cuda.gpu_bundle runs it after `make gpu-bundle`; exit 77 when the
# bundle was not built). Checks: size; every ELF's RUNPATH stays inside the
# bundle and every library it needs resolves there or is allowed; the CLI and
# the test binaries run against the fake driver; no driver is a clear error;
# the rehearsal passes; and without a GPU the real check fails step by step,
# clearly, with every step still run.
set -euo pipefail
bundle=${1:?usage: test-bundle.sh BUNDLE}
[ -x "$bundle/gpu-check.sh" ] || { echo "no bundle at $bundle (make gpu-bundle)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$bundle" "$work/bundle"  # a fresh place: nothing may point back
copy="$work/bundle"
fail() { echo "test-bundle: FAILED: $*" >&2; exit 1; }
clean() { env -i PATH=/usr/bin:/bin "$@"; }

size=$(du -sb "$copy" | cut -f1)
[ "$size" -le $((48 * 1024 * 1024)) ] || fail "bundle is $size bytes, over 48 MiB"

allowed='^(linux-vdso\.so|ld-linux-x86-64\.so|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libstdc\+\+\.so|libgcc_s\.so)'
elves=0
for elf in "$copy"/bin/* "$copy"/lib/*; do
  elves=$((elves + 1))
  runpath=$(readelf -d "$elf" | grep -E 'RUNPATH|RPATH' | grep -o '\[.*\]' || true)
  for entry in $(echo "${runpath//[\[\]]/}" | tr ':' ' '); do
    [[ $entry == '$ORIGIN'* ]] || fail "$elf has RUNPATH entry $entry outside the bundle"
  done
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    [ "$path" != "not" ] || fail "$elf: $name not found"
    [[ $name =~ $allowed ]] && continue
    [[ $path == "$copy"/* ]] || fail "$elf takes $name from $path, outside the bundle"
  done < <(clean ldd "$elf")
done
[ "$elves" -ge 30 ] || fail "only $elves ELF files"

fake="$copy/lib/libtensormem_fake_cuda.so"
clean "$copy/bin/tensormem" --version | grep -q '^tensormem ' || fail "tensormem --version"
clean TENSORMEM_CUDA_DRIVER="$fake" "$copy/bin/tensormem" devices --json |
  grep -q '"name": "tensormem fake device 0"' || fail "tensormem devices on the fake driver"
set +e
error=$(clean TENSORMEM_CUDA_DRIVER=/nonexistent/libcuda.so.1 "$copy/bin/tensormem" devices 2>&1)
status=$?
set -e
[ "$status" = 1 ] && [[ $error == *"no CUDA driver"* ]] || fail "no driver: exit $status, '$error'"
for test in cuda_sub_allocator_test cuda_plugin_options_test cuda_torch_plugin_test; do
  clean TENSORMEM_CUDA_DRIVER="$fake" TENSORMEM_CUDA_TESTS_NEED_DRIVER=1 \
    TENSORMEM_CUDA_TORCH_LIBRARY="$copy/lib/libtensormem_cuda_torch.so" \
    "$copy/bin/$test" --gtest_brief=1 >"$work/$test.log" 2>&1 || { tail -20 "$work/$test.log"; fail "$test"; }
done

clean "$copy/gpu-check.sh" --fake-driver "$work/rehearsal" >"$work/rehearsal.log" 2>&1 ||
  { tail -30 "$work/rehearsal.log"; fail "the rehearsal"; }
grep -q "every step passed" "$work/rehearsal/summary.txt" || fail "rehearsal summary"
grep -q "passed .* 3-replays" "$work/rehearsal/summary.txt" || fail "rehearsal replays"

# No GPU here: the real check must fail, naming why, and still run every step.
if ! nvidia-smi -L >/dev/null 2>&1; then
  set +e
  clean "$copy/gpu-check.sh" --budget 120 "$work/no-gpu" >"$work/no-gpu.log" 2>&1
  status=$?
  set -e
  [ "$status" != 0 ] || fail "the check passed without a GPU"
  summary="$work/no-gpu/summary.txt"
  grep -q "FAILED" "$summary" || fail "no-GPU summary does not say FAILED"
  grep -q "failed .* 1-devices" "$summary" || fail "no-GPU: the device step did not fail"
  grep -q "no CUDA driver" "$work/no-gpu/steps/1-devices.log" || fail "no-GPU: no reason given"
  grep -q "4-train-resnet50-tensormem-1  no CUDA-enabled PyTorch" "$summary" ||
    fail "no-GPU: the training step does not say why"
  [ "$(ls "$work/no-gpu/steps/"*.status | wc -l)" -ge 18 ] || fail "no-GPU: steps were dropped"
fi
echo "test-bundle: $elves ELF files, $((size / 1024)) KiB; every check passed"
