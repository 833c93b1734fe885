#!/usr/bin/env python3
"""tests/tools/test_oci_node_files.py — tools/oci-node as `meson install`
puts it (share/corral/oci-node): the wrapper is executable, names the
installed corral-oci and answers through it; podman's, containerd's and
CRI-O's entries parse as TOML and name the wrapper's install path; the
RuntimeClass parses as YAML and its handler is the runtime name both CRI
entries define. (The podman e2e test runs a container through the podman
entry; docs/oci-runtime.md.)"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib

import yaml

BUILD = os.environ.get("CORRAL_BUILD_ROOT", "")
WRAPPER_PATH = "/usr/local/sbin/corral-oci-node"   # where docs/oci-runtime.md installs it
failures = []


def check(ok, what, detail=""):
    print(("ok: " if ok else "FAIL: ") + what + ("" if ok else ": " + detail))
    if not ok:
        failures.append(what)


if not BUILD:
    print("FAIL: run through meson test (CORRAL_BUILD_ROOT)", file=sys.stderr)
    sys.exit(1)
with tempfile.TemporaryDirectory(prefix="corral-oci-node-") as dest:
    subprocess.run(["meson", "install", "-C", BUILD, "--destdir", dest, "--no-rebuild", "--quiet"], check=True,
                   stdout=subprocess.DEVNULL)
    found = glob.glob(dest + "/**/share/corral/oci-node", recursive=True)
    check(len(found) == 1, "installed under share/corral/oci-node", str(found))
    if not found:
        sys.exit(1)
    d = found[0]
    wrapper = os.path.join(d, "corral-oci-node")
    check(os.access(wrapper, os.X_OK), "the wrapper is executable")
    text = open(wrapper).read()
    named = re.search(r"^exec (\S+)/corral-oci ", text, re.M)
    installed = [p for p in glob.glob(dest + "/**/bin/corral-oci", recursive=True)]
    check(named is not None and installed and installed[0] == dest + named.group(1) + "/corral-oci",
          "the wrapper names the installed corral-oci", str(named and named.group(1)) + " " + str(installed))
    # The wrapper runs: pointed at the installed copy (under DESTDIR), `features` answers the spec's document.
    with open(os.path.join(dest, "wrapper"), "w") as w:
        w.write(text.replace("exec " + named.group(1) + "/corral-oci", "exec " + installed[0]))
    os.chmod(os.path.join(dest, "wrapper"), 0o755)
    r = subprocess.run([os.path.join(dest, "wrapper"), "features"], capture_output=True, text=True)
    check(r.returncode == 0 and json.loads(r.stdout or "{}").get("ociVersionMax") == "1.2.0",
          "the wrapper's settings parse and corral-oci answers through it", r.stderr)
    podman = tomllib.load(open(os.path.join(d, "podman-corral.conf"), "rb"))
    check(podman["engine"]["runtimes"]["corral"] == [WRAPPER_PATH], "podman: runtime corral is the wrapper")
    containerd = tomllib.load(open(os.path.join(d, "containerd-corral.toml"), "rb"))
    runtimes = containerd["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]
    check(runtimes["corral"]["runtime_type"] == "io.containerd.runc.v2" and
          runtimes["corral"]["options"]["BinaryName"] == WRAPPER_PATH,
          "containerd: runtime corral is the runc shim with the wrapper as its BinaryName")
    crio = tomllib.load(open(os.path.join(d, "crio-50-corral.conf"), "rb"))
    check(crio["crio"]["runtime"]["runtimes"]["corral"]["runtime_path"] == WRAPPER_PATH,
          "CRI-O: runtime corral's runtime_path is the wrapper")
    rc = yaml.safe_load(open(os.path.join(d, "runtimeclass.yaml")))
    check(rc["kind"] == "RuntimeClass" and rc["apiVersion"] == "node.k8s.io/v1" and rc["handler"] == "corral",
          "RuntimeClass: handler corral, the runtime name of both CRI entries")
print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
