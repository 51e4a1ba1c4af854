#!/usr/bin/env python3
"""Refreshes the example output in README.md (between its output markers) with the summary figures
`parasim run scenarios/default.json` prints now (docs/outputs.md explains the rest of the output).
Usage: tools/scripts/readme_output.py [PARASIM_BINARY]"""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
BEGIN, END = "<!-- output:begin (tools/scripts/generate-docs.sh) -->", "<!-- output:end -->"

binary = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "build/tools/parasim")
out = subprocess.run([binary, "--data-dir", str(ROOT), "run", str(ROOT / "scenarios/default.json")],
                     capture_output=True, text=True, check=True).stdout
lines = out.splitlines()
first = next(i for i, l in enumerate(lines) if l.strip().startswith("step time"))
last = next((i for i in range(first, len(lines)) if not lines[i].strip()), len(lines))
shown = "\n".join(l[2:] if l.startswith("  ") else l for l in lines[first:last])
readme = (ROOT / "README.md").read_text()
if BEGIN not in readme or END not in readme:
    sys.exit(f"README.md: no {BEGIN} ... {END} markers")
head, rest = readme.split(BEGIN, 1)
readme = head + BEGIN + "\n```\n" + shown + "\n```\n" + END + rest.split(END, 1)[1]
(ROOT / "README.md").write_text(readme)
