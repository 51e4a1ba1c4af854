#!/usr/bin/env bash
# Installs parasim into a temporary prefix and runs it from another directory: the installed binary
# must find its data under <prefix>/share/parasim, and a binary without data must say where it looked.
# Usage: install_test.sh BUILD_DIR
set -euo pipefail
# grep reads all of its input (no -q): a grep -q that exits at the first match would end the writer with
# SIGPIPE, and pipefail would fail the test when the writer is still printing.
build=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
mkdir -p "$tmp/elsewhere"
cp "$tmp/prefix/share/parasim/scenarios/default.json" "$tmp/elsewhere/mine.json"
cd "$tmp/elsewhere"
unset PARASIM_DATA_DIR
"$tmp/prefix/bin/parasim" run mine.json | grep "step time" >/dev/null || { echo "installed run printed no step time"; exit 1; }
"$tmp/prefix/bin/parasim" list gpus | grep "h100" >/dev/null || { echo "installed list gpus printed no h100 profile"; exit 1; }
# Every data file a command reads is installed: the reliability figures of --tokens, the stacks.
"$tmp/prefix/bin/parasim" run mine.json --tokens 1e12 | grep "goodput" >/dev/null || { echo "installed run --tokens printed no goodput"; exit 1; }
"$tmp/prefix/bin/parasim" list stacks | grep "megatron-core" >/dev/null || { echo "installed list stacks printed no megatron-core stack"; exit 1; }
# A lone binary: no data beside it, so every command that needs data fails with exit 2, naming the path.
mkdir -p "$tmp/lone/bin"
cp "$tmp/prefix/bin/parasim" "$tmp/lone/bin/"
set +e
err=$("$tmp/lone/bin/parasim" list gpus 2>&1 >/dev/null); rc=$?
set -e
[ "$rc" = 2 ] || { echo "lone binary: list gpus exited $rc, expected 2"; exit 1; }
grep -q "$tmp/lone/share/parasim" <<<"$err" || { echo "lone binary: error does not name the path tried: $err"; exit 1; }
# PARASIM_DATA_DIR and --data-dir point the lone binary at the data; a wrong --data-dir is named.
PARASIM_DATA_DIR="$tmp/prefix/share/parasim" "$tmp/lone/bin/parasim" list gpus | grep "h100" >/dev/null
"$tmp/lone/bin/parasim" --data-dir "$tmp/prefix/share/parasim" run mine.json | grep "step time" >/dev/null
set +e
err=$(PARASIM_DATA_DIR="$tmp/prefix/share/parasim" "$tmp/lone/bin/parasim" --data-dir /nonexistent list gpus 2>&1); rc=$?
set -e
[ "$rc" = 2 ] && grep -q "/nonexistent (--data-dir)" <<<"$err" || { echo "--data-dir /nonexistent: rc $rc: $err"; exit 1; }
echo "install test passed"
