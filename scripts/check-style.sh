#!/usr/bin/env bash
# The style gate (ctest `style.check`, so `make test` and CI run it; it needs
# BUILD_DIR/compile_commands.json):
# - clang-format-14: every tracked C++ file is formatted as .clang-format says
#   (`make format` fixes it);
# - clang-tidy-14 (.clang-tidy): no function of src/ or python/src/ above the
#   cognitive-complexity threshold, except the exceptions listed with their
#   reason in scripts/complexity-exceptions.txt (a listed function that passes
#   is reported, so the list only shrinks).
#
#   scripts/check-style.sh build/default
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build/default}
status=0

if ! git ls-files '*.h' '*.cc' | xargs clang-format-14 --dry-run --Werror; then
  echo "check-style: run 'make format'" >&2
  status=1
fi

report=$(mktemp)
allowed=$(mktemp)
trap 'rm -f "$report" "$allowed"' EXIT
git ls-files 'src/*.cc' 'python/src/*.cc' |
  xargs -P 2 -n 8 clang-tidy-14 -p "$build_dir" --quiet 2>/dev/null |
  sed -n "s|^$PWD/||; s|^\([^:]*\):[0-9]*:[0-9]*: error: function '\([^']*\)' has cognitive complexity.*|\1 \2|p" |
  sort -u >"$report" || true
exceptions=scripts/complexity-exceptions.txt
sed 's/[[:space:]]*#.*//' "$exceptions" | grep -v '^[[:space:]]*$' | sort -u >"$allowed" || true
new=$(comm -23 "$report" "$allowed")
fixed=$(comm -13 "$report" "$allowed")
if [ -n "$new" ]; then
  echo "check-style: functions above the cognitive-complexity threshold (split them into named steps):" >&2
  echo "$new" >&2
  status=1
fi
if [ -n "$fixed" ]; then
  echo "check-style: now below the threshold, remove from $exceptions:" >&2
  echo "$fixed" >&2
  status=1
fi
[ $status -eq 0 ] && echo "check-style: clang-format clean, no function above the complexity threshold"
exit $status
