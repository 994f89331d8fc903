#!/usr/bin/env bash
# make-bundle.sh BUILD BUNDLE: assembles the GPU bundle (`make gpu-bundle`;
# docs/gpu-bundle.md) from the gpu-bundle preset's build tree BUILD into
# BUNDLE: bin/ (the CLI, the CUDA test binaries), lib/ (the CUDA plug-in, the
# fake driver for rehearsals, and every shared library they need beyond
# glibc, libstdc++ and libgcc_s, each with RUNPATH $ORIGIN), python/ (the
# pure-Python tensormem_torch), tools/ (the check's scripts), data/ (traces)
# and gpu-check.sh. Fails if any ELF needs a library from outside the bundle
# that is not allowed, or if the bundle exceeds 48 MiB.
set -euo pipefail
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
build=$1 bundle=$2
rm -rf "$bundle"
mkdir -p "$bundle"/{bin,lib,python/tensormem_torch,tools,data}

cp "$build/tensormem" "$bundle/bin/"
for test in cuda_sub_allocator_test cuda_plugin_options_test cuda_torch_plugin_test; do
  cp "$build/tests/cuda/$test" "$bundle/bin/"
done
cp "$build/python/tensormem/libtensormem_cuda_torch.so" "$build/tests/cuda/libtensormem_fake_cuda.so" \
  "$bundle/lib/"
# The CUDA half of tensormem_torch only: it loads the plug-in with ctypes and
# needs no compiled Python module (the bundle's python3 is not Debian's).
cp "$source_dir/python/tensormem_torch/"{__init__.py,cuda.py} "$bundle/python/tensormem_torch/"
cp "$source_dir/tools/gpu-bundle/"{train_check.py,record_snapshots.py,compare_training.py,summarize.py,replay_check.sh,plugin_probe.py} \
  "$bundle/tools/"
cp "$source_dir/tools/gpu-bundle/gpu-check.sh" "$bundle/"
for trace in resnet50.train_b8 vit_b_16.train_b8 deeplabv3_mobilenet_v3.train_b8; do
  cp "$source_dir/data/models/$trace.trace.gz" "$bundle/data/"
done

# What may come from the system: glibc's libraries, libstdc++ and libgcc_s
# (the driver, libcuda.so.1, is opened at run time, never linked).
allowed='^(linux-vdso\.so|ld-linux-x86-64\.so|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libstdc\+\+\.so|libgcc_s\.so)'
elves() { find "$bundle/bin" "$bundle/lib" -type f; }
copied=1
while [ "$copied" = 1 ]; do  # until every ELF's needs are inside the bundle
  copied=0
  for elf in $(elves); do
    while read -r name path; do
      [[ $name =~ $allowed ]] && continue
      [ -e "$bundle/lib/$name" ] && continue
      [ -f "$path" ] || { echo "make-bundle: $elf needs $name, not found" >&2; exit 1; }
      cp -L "$path" "$bundle/lib/$name"
      chmod u+w "$bundle/lib/$name"
      patchelf --set-rpath '$ORIGIN' "$bundle/lib/$name"
      copied=1
    done < <(ldd "$elf" | awk '$2 == "=>" { print $1, $3 }')
  done
done
strip --strip-unneeded "$bundle"/bin/* "$bundle"/lib/*.so* 2>/dev/null || true
git -C "$source_dir" describe --always --dirty >"$bundle/VERSION" 2>/dev/null || echo unknown >"$bundle/VERSION"

size=$(du -sb "$bundle" | cut -f1)
if [ "$size" -gt $((48 * 1024 * 1024)) ]; then
  echo "make-bundle: $bundle is $((size / 1024 / 1024)) MiB, over 48 MiB" >&2
  exit 1
fi
echo "make-bundle: $bundle ($((size / 1024)) KiB, $(ls "$bundle/lib" | wc -l) libraries, $(cat "$bundle/VERSION"))"
