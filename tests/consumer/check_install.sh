#!/usr/bin/env bash
# Installs the build tree BUILD_DIR into a temporary prefix, builds the consumer
# program against it twice (find_package(tensormem) and pkg-config), runs both and
# the installed CLI, and checks what they print.
#
#   tests/consumer/check_install.sh build/default
set -euo pipefail
build_dir=$(realpath "$1")
here=$(dirname "$(realpath "$0")")
work=$(mktemp -d "${TMPDIR:-/tmp}/tensormem_consumer.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"

cmake --install "$build_dir" --prefix "$prefix" >/dev/null
version=$(sed -n 's/.*kVersion = "\(.*\)";/\1/p' "$prefix/include/tensormem/core/version.h")
expected="tensormem $version plan 5120 bound 5120 replay peak live 5120"

cmake -S "$here/project" -B "$work/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake" >/dev/null
cmake_output=$("$work/cmake/consumer")

pc_dir=$(dirname "$(find "$prefix" -name tensormem.pc)")
flags=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs tensormem)
# shellcheck disable=SC2086  # pkg-config's output is a list of flags
c++ -std=c++20 "$here/project/consumer.cc" -o "$work/pkg_config_consumer" $flags
pkg_config_output=$("$work/pkg_config_consumer")

for output in "$cmake_output" "$pkg_config_output"; do
  if [ "$output" != "$expected" ]; then
    echo "consumer printed '$output', expected '$expected'" >&2
    exit 1
  fi
done
if [ -x "$prefix/bin/tensormem" ]; then
  cli_version=$("$prefix/bin/tensormem" --version)
  [ "$cli_version" = "tensormem $version" ] || { echo "CLI: '$cli_version'" >&2; exit 1; }
fi
# tensormem::model, when the package has it: the same buffer count as the CLI's.
if [ -x "$work/cmake/model_consumer" ] && [ -x "$prefix/bin/tensormem" ]; then
  model="$here/../../data/onnx/mobilenet_v2.onnx"
  model_output=$("$work/cmake/model_consumer" "$model")
  cli_buffers=$("$prefix/bin/tensormem" convert "$model" "$work/model.csv" --json |
                sed -n 's/^  "buffers": \([0-9]*\).*/\1/p')
  if [ -z "$cli_buffers" ] || [ "$model_output" != "model buffers $cli_buffers" ]; then
    echo "model consumer printed '$model_output', the CLI counts '$cli_buffers'" >&2
    exit 1
  fi
  echo "tensormem::model consumer: $model_output"
fi
echo "find_package and pkg-config consumers: $expected"
