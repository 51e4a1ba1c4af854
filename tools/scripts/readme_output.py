#!/usr/bin/env python3
"""Refreshes the example output in README.md (between its output markers) with what
`parasim run scenarios/default.json` prints now, up to the notes.
Usage: tools/scripts/readme_output.py [PARASIM_BINARY]"""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
BEGIN, END = "<!-- output:begin (tools/scripts/generate-docs.sh) -->", "<!-- output:end -->"

binary = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "build/tools/parasim")
out = subprocess.run([binary, "--data-dir", str(ROOT), "run", str(ROOT / "scenarios/default.json")],
                     capture_output=True, text=True, check=True).stdout
shown = out.split("\n  notes:")[0].rstrip("\n")
# The per-rank table is the widest part; the README points to its explanation instead.
table = shown.index("\n  rank   xN")
shown = shown[:table] + "\n  [a table per pipeline stage: memory by kind, compute, exposed communication, bubble]" + \
    shown[shown.index("\n\n", table + 1):]
readme = (ROOT / "README.md").read_text()
head, rest = readme.split(BEGIN, 1)
readme = head + BEGIN + "\n```\n" + shown + "\n  ...\n```\n" + END + rest.split(END, 1)[1]
(ROOT / "README.md").write_text(readme)
