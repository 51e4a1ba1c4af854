#!/usr/bin/env python3
"""Checks that the committed calibration profiles are what their generators write.

tools/data/fit_attention_shapes.py and tools/data/derive_blackwell_profiles.py rewrite the attention
figures of the Ampere and Hopper profiles and the four Blackwell profiles from published tables
(some of them in tests/data). This copies those inputs into a scratch tree with the repository's
layout, runs both generators there in their documented order, and compares every profile they
write with the committed one, byte for byte. A hand edit of a generated figure, or a data file
changed without rerunning the generators, fails here with the profile's name.

  python3 tools/scripts/check_profile_generators.py
"""
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
GENERATORS = ["fit_attention_shapes.py", "derive_blackwell_profiles.py"]  # in this order (see their docstrings)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(os.path.join(ROOT, "tools", "data"), os.path.join(tmp, "tools", "data"))
        shutil.copytree(os.path.join(ROOT, "calibrate", "profiles"), os.path.join(tmp, "calibrate", "profiles"))
        shutil.copytree(os.path.join(ROOT, "tests", "data"), os.path.join(tmp, "tests", "data"))
        for g in GENERATORS:
            r = subprocess.run([sys.executable, os.path.join(tmp, "tools", "data", g)], cwd=tmp, capture_output=True, text=True)
            if r.returncode != 0:
                print("%s failed:\n%s%s" % (g, r.stdout, r.stderr))
                return 1
        names = sorted(os.listdir(os.path.join(ROOT, "calibrate", "profiles")))
        differ = [n for n in names if not filecmp.cmp(os.path.join(ROOT, "calibrate", "profiles", n),
                                                      os.path.join(tmp, "calibrate", "profiles", n), shallow=False)]
    if differ:
        print("profiles that differ from what tools/data/%s write: %s" % (" then ".join(GENERATORS), ", ".join(differ)))
        print("rerun the generators from the repository root and commit their output, or move the change into them")
        return 1
    print("all %d profiles are what the generators write" % len(names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
