"""The Python module against the CLI: parasim.run, check and collective return what `--json`
prints, and bad input raises parasim.ConfigError with the CLI's message.
Usage: PYTHONPATH=build/python python3 python_test.py PARASIM_BINARY SOURCE_DIR"""
import json
import subprocess
import sys

import parasim

binary, source = sys.argv[1], sys.argv[2]
scenario = f"{source}/scenarios/default.json"


def cli(*args):
    return json.loads(subprocess.run([binary, *args], check=True, capture_output=True, text=True).stdout)


# run: a path and the same scenario as a dict give the CLI's Result.
expected = cli("run", scenario, "--json")
from_path = parasim.run(scenario)
with open(scenario) as f:
    from_dict = parasim.run(json.load(f))
assert from_path == expected, "parasim.run(path) differs from `parasim run --json`"
assert from_dict["step_time_s"] == expected["step_time_s"], "parasim.run(dict) differs from the file's result"

# collective: the CLI's --json.
assert parasim.collective("h100-sxm5-80g", op="all_gather", bytes="256MiB", ranks=16) == cli(
    "collective", "--gpu", "h100-sxm5-80g", "--op", "all_gather", "--bytes", "256MiB", "--ranks", "16", "--json")

# check: one measured run, as `parasim check --json` reports it (exit 1 when outside tolerance).
measured = f"{source}/tests/data/measured/components.json"
proc = subprocess.run([binary, "check", measured, "--json"], capture_output=True, text=True)
assert parasim.check(measured) == json.loads(proc.stdout)

# Bad input: a ConfigError (a ValueError) naming the JSON pointer, as the CLI prints it.
with open(scenario) as f:
    bad = json.load(f)
bad["parallel"]["scheudle"] = bad["parallel"].pop("schedule")
try:
    parasim.run(bad)
    raise AssertionError("a misspelled key was accepted")
except parasim.ConfigError as e:
    assert str(e) == '<dict>: /parallel/scheudle: unknown key; did you mean "schedule"?' and isinstance(e, ValueError), str(e)
try:
    parasim.run(scenario, data_dir="/nonexistent")
    raise AssertionError("a missing data directory was accepted")
except parasim.ConfigError as e:
    assert "/nonexistent (--data-dir)" in str(e), str(e)
print("python module test passed")
