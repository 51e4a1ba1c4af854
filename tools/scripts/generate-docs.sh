#!/usr/bin/env bash
# Regenerates the documents parasim writes from its own tables and results:
#   docs/scenario-reference.md and the descriptions in schemas/scenario.schema.json (the scenario key
#   table, sim/scenario/scenario_keys.cpp), the README's example output; with --accuracy also docs/accuracy.md and the README's
#   accuracy table (from `parasim validate`, about a minute and a half).
# Usage: tools/scripts/generate-docs.sh [--accuracy]   (after tools/scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${PARASIM_BINARY:-build/tools/parasim}
tmp=$(mktemp); trap 'rm -f "$tmp"' EXIT
"$bin" --data-dir . docs scenario-reference > "$tmp" && cp "$tmp" docs/scenario-reference.md
"$bin" --data-dir . docs scenario-schema > "$tmp" && cp "$tmp" schemas/scenario.schema.json
python3 tools/scripts/readme_output.py "$bin"
if [ "${1:-}" = "--accuracy" ]; then
  python3 tools/scripts/accuracy_docs.py "$bin"
fi
echo "regenerated docs/scenario-reference.md, schemas/scenario.schema.json, the README's output${1:+ and the accuracy figures}"
