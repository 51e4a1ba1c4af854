#!/usr/bin/env bash
# The committed generated documents must be what `parasim docs` prints from the key table today.
# Usage: generated_docs_test.sh PARASIM_BINARY SOURCE_DIR
set -euo pipefail
bin=$1 src=$2
status=0
check() {  # check FILE SUBCOMMAND
  if ! diff -q <("$bin" --data-dir "$src" docs "$2") "$src/$1" >/dev/null; then
    echo "$1 is stale: regenerate it with tools/scripts/generate-docs.sh"
    diff <("$bin" --data-dir "$src" docs "$2") "$src/$1" | head -20
    status=1
  fi
}
check docs/scenario-reference.md scenario-reference
check schemas/scenario.schema.json scenario-schema
exit $status
