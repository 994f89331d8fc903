#!/usr/bin/env bash
# Regenerates docs/images/policies_resnet18_infer_b8.png: the what-if page of
# one corpus trace through the four policy settings of docs/policies.md,
# rendered by headless Chromium.
#   tools/policy-picture.sh [path/to/tensormem]
set -euo pipefail
cd "$(dirname "$0")/.."
tensormem=${1:-build/default/tensormem}
trace=data/models/resnet18.infer_b8.trace.gz
page=$(mktemp --suffix=.html)
trap 'rm -f "$page"' EXIT
"$tensormem" whatif "$trace" --html "$page" \
  --policies "tf; tight; pytorch; pytorch config=expandable_segments:True" >/dev/null
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
  --window-size=1100,720 \
  --screenshot="$PWD/docs/images/policies_resnet18_infer_b8.png" \
  "file://$page" 2>/dev/null
echo "wrote docs/images/policies_resnet18_infer_b8.png"
