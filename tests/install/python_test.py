"""The Python module against the CLI: parasim.run, check, collective, sweep and plan return what
`--json` prints, parasim.report writes the page `parasim report` writes, and bad input raises
parasim.ConfigError with the CLI's message.
Usage: PYTHONPATH=build/python python3 python_test.py PARASIM_BINARY SOURCE_DIR"""
import json
import os
import subprocess
import sys
import tempfile

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

# sweep: the rows of `parasim sweep --json` on the same scenario, for a path and for the dict.
sweep_cli = cli("sweep", scenario, "--vary", "tp=1,2", "--vary", "micro_batch=1,2", "--json", "-j", "2")
sweep_py = parasim.sweep(scenario, vary={"tp": [1, 2], "micro_batch": [1, 2]}, jobs=2)
assert sweep_py == sweep_cli, "parasim.sweep(path) differs from `parasim sweep --json`"
with open(scenario) as f:
    sweep_dict = parasim.sweep(json.load(f), vary={"tp": [1, 2], "micro_batch": [1, 2]}, jobs=1)
assert sweep_dict["rows"] == sweep_cli["rows"] and sweep_dict["scenario"] == "<dict>", "parasim.sweep(dict) rows differ"
# A JSON pointer names the same key as its short name: the same step times.
by_pointer = parasim.sweep(scenario, vary={"/parallel/tp": [1, 2], "micro_batch": [1, 2]})
assert [r["step_s"] for r in by_pointer["rows"]] == [r["step_s"] for r in sweep_cli["rows"]]
try:
    parasim.sweep(scenario, vary={"tpp": [1, 2]})
    raise AssertionError("an unknown sweep key was accepted")
except parasim.ConfigError as e:
    assert 'did you mean "tp"' in str(e), str(e)

# plan: a small model on 8 GPUs, as `parasim plan --json` prints it; fitting layouts ranked first.
job = ["--model", "megatron-gpt-1.7b", "--gpu", "h100-sxm5-80g", "--gpus", "8", "--seq", "2048", "--global-batch", "64",
       "--max-micro-batch", "2", "--max-vpp", "1"]
plan_py = parasim.plan(model="megatron-gpt-1.7b", gpu="h100-sxm5-80g", gpus=8, seq=2048, global_batch=64, max_micro_batch=2,
                       max_vpp=1, jobs=2)
assert plan_py["schema"] == "parasim.plan/1" and plan_py["rows"] and plan_py["rows"][0]["status"] == "ok", plan_py["rows"][:1]
statuses = [r["status"] for r in plan_py["rows"]]
assert statuses == sorted(statuses, key=lambda s: s != "ok"), "a layout that does not fit ranks above one that does"
assert plan_py == cli("plan", *job, "--json", "-j", "2"), "parasim.plan differs from `parasim plan --json`"
try:
    parasim.plan(model="megatron-gpt-1.7b", gpu="h100-sxm5-80g", gpus=8, seq=2048, global_batch=64, max_microbatch=2)
    raise AssertionError("an unknown plan option was accepted")
except parasim.ConfigError as e:
    assert 'unknown option "max_microbatch"' in str(e), str(e)

# report: the page `parasim report -o` writes, byte for byte, written or returned; a sweep document
# given as a dict is drawn as a table of its rows.
with tempfile.TemporaryDirectory() as tmp:
    subprocess.run([binary, "report", scenario, "-o", f"{tmp}/cli.md"], check=True, capture_output=True)
    assert parasim.report(scenario, f"{tmp}/py.md") == f"{tmp}/py.md"
    with open(f"{tmp}/cli.md") as a, open(f"{tmp}/py.md") as b:
        cli_md = a.read()
        assert cli_md == b.read(), "parasim.report(path, out.md) differs from `parasim report -o out.md`"
    assert parasim.report(scenario, format="md") == cli_md
    assert parasim.report(scenario).startswith("<!DOCTYPE html>")
    table = parasim.report(sweep_cli, format="md")
    assert "parasim sweep" in table and table.count("\n|") >= len(sweep_cli["rows"]), table[:400]
    for bad_out, kw, msg in ((f"{tmp}/r.txt", {}, "must end in .html, .htm or .md"),
                             (f"{tmp}/r.html", {"format": "md"}, "differs from the output's extension")):
        try:
            parasim.report(scenario, bad_out, **kw)
            raise AssertionError(f"report to {bad_out} {kw} was accepted")
        except parasim.ConfigError as e:
            assert msg in str(e) and not os.path.exists(bad_out), str(e)
    try:
        parasim.report(scenario, format="pdf")
        raise AssertionError("format pdf was accepted")
    except parasim.ConfigError as e:
        assert 'format "pdf": expected "html" or "md"' in str(e), str(e)

# Bad input: a ConfigError (a ValueError) naming the JSON pointer, as the CLI prints it.
with open(scenario) as f:
    bad = json.load(f)
bad["parallel"]["scheudle"] = bad["parallel"].pop("schedule")
try:
    parasim.run(bad)
    raise AssertionError("a misspelled key was accepted")
except parasim.ConfigError as e:
    assert str(e) == '<dict>: /parallel/scheudle: unknown key; did you mean "schedule"?' and isinstance(e, ValueError), str(e)
# A NaN or infinity (which Python's json writes, and JSON has not) is named by its pointer.
with open(scenario) as f:
    bad = json.load(f)
bad["training"]["global_batch"] = float("nan")
try:
    parasim.run(bad)
    raise AssertionError("a NaN was accepted")
except parasim.ConfigError as e:
    assert str(e).startswith("<dict>: /training/global_batch: expected a number, got a non-finite float"), str(e)
# What JSON cannot hold (a cycle, an object json cannot write) and numbers the CLI refuses are ConfigErrors too.
cyclic = {"schema": "parasim.scenario/1"}
cyclic["self"] = cyclic
for call, what in [(lambda: parasim.run(cyclic), "Circular reference"),
                   (lambda: parasim.run({"schema": "parasim.scenario/1", "x": {1, 2}}), "not JSON serializable"),
                   (lambda: parasim.sweep(scenario, vary={"/training/micro_batch": [1]}, price_per_gpu_hour=float("nan")), "price_per_gpu_hour"),
                   (lambda: parasim.report(scenario, tokens=float("inf")), "tokens")]:
    try:
        call()
        raise AssertionError("accepted: " + what)
    except parasim.ConfigError as e:
        assert what in str(e), str(e)
try:
    parasim.run(scenario, data_dir="/nonexistent")
    raise AssertionError("a missing data directory was accepted")
except parasim.ConfigError as e:
    assert "/nonexistent (--data-dir)" in str(e), str(e)
print("python module test passed")

# Ctrl-C stops a long plan: SIGINT to a Python process planning GPT-3 on 1,024 GPUs (a minute or
# more of work) raises KeyboardInterrupt there within moments, not at the end.
import signal
import time
child = subprocess.Popen(
    [sys.executable, "-c",
     "import parasim, sys\n"
     "print('start', flush=True)\n"
     "parasim.plan(model='gpt3-175b', gpu='a100-sxm4-80g', gpus=1024, seq=2048, global_batch=1536, jobs=1, "
     "data_dir=sys.argv[1])\n"
     "print('finished', flush=True)\n", sys.argv[2]],
    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
assert child.stdout.readline().strip() == "start"
time.sleep(1.0)
child.send_signal(signal.SIGINT)
out, err = child.communicate(timeout=60)
assert "finished" not in out and "KeyboardInterrupt" in err, (out, err[-500:])
print("python module test passed (interrupt)")
