#!/usr/bin/env bash
# `make run`: the main job on the bundled corpus. Argument: the build directory.
set -euo pipefail
build_dir=${1:-build/default}
exec "$build_dir/tensormem" --help
