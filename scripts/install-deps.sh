#!/usr/bin/env bash
# Installs the Debian packages tensormem builds and tests with. Idempotent: does nothing
# (and prints nothing) when every package is already present.
set -euo pipefail

packages=(
  cmake ninja-build g++ make pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev
  libabsl-dev libcli11-dev nlohmann-json3-dev zlib1g-dev
  libonnx-dev libprotobuf-dev python3-onnx
  python3 python3-dev python3-torch python3-torchvision libtorch-dev
  pybind11-dev python3-numpy python3-pytest python3-setuptools python3-wheel python3-venv python3-pip
  chromium
  # The fuzz targets (make fuzz): clang with libFuzzer and the sanitizer runtimes.
  clang-14 libclang-rt-14-dev
  # The style gate (scripts/check-style.sh).
  clang-format-14 clang-tidy-14
  # Instruction counts of the BFC benchmarks (tools/bfc_instructions.py).
  valgrind
  # The GPU bundle (make gpu-bundle): its copied libraries get RUNPATH $ORIGIN.
  patchelf
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
