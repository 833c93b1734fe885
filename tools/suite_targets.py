#!/usr/bin/env python3
"""tools/suite_targets.py BUILDDIR SUITE... [--not SUITE...]: the ninja
targets (paths relative to BUILDDIR) that the tests of the given meson suites
run, their executables and their `depends`, one per line. tools/test.sh
builds exactly these ahead of `meson test --no-rebuild`, so a build dir can be
built in the background while another phase runs (docs/testing.md "Time
budget")."""
import json
import os
import subprocess
import sys


def introspect(builddir, what):
    out = subprocess.run(["meson", "introspect", builddir, what], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def main(argv):
    if len(argv) < 3:
        sys.exit("usage: tools/suite_targets.py BUILDDIR SUITE... [--not SUITE...]")
    builddir, rest = argv[1], argv[2:]
    wanted = rest[:rest.index("--not")] if "--not" in rest else rest
    unwanted = rest[rest.index("--not") + 1:] if "--not" in rest else []
    files = {t["id"]: t["filename"] for t in introspect(builddir, "--targets")}
    root = os.path.realpath(builddir)
    targets = set()
    for test in introspect(builddir, "--tests"):
        suites = {s.split(":", 1)[-1] for s in test["suite"]}
        if not suites & set(wanted) or suites & set(unwanted):
            continue
        for dep in test["depends"]:
            for path in files.get(dep, []):
                targets.add(os.path.relpath(os.path.realpath(path), root))
    print("\n".join(sorted(targets)))


if __name__ == "__main__":
    main(sys.argv)
