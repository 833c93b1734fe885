#!/usr/bin/env python3
"""tests/image/make_deep_layout.py — an OCI image layout of many layers.

  make_deep_layout.py OUT N

Writes OUT (an OCI image layout, tag "deep") of N layers, N >= 2:
  layer 1      /bin/busybox (the host's static one) and links to it
  layer 2..N   /l/K, holding "K" (K = 2..N)
  layer N      also deletes /l/2 with a whiteout (/l/.wh.2)
so a box that sees /l/N, sees no /l/2 and sees every other /l/K has every
layer, in order. Written with Python's tarfile and hashlib, not umoci: a
hundred layers by umoci take minutes; these take a moment. Used by
tests/image/test_import.cpp and tests/vm/cgroup2_vm.sh (a kernel without
"lowerdir+").
"""
import hashlib
import io
import json
import os
import sys
import tarfile


def tar_bytes(entries):
    """entries: (name, bytes or None for a dir, mode, linkname or None)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, data, mode, link in entries:
            info = tarfile.TarInfo(name)
            info.mode = mode
            if link is not None:
                info.type = tarfile.SYMTYPE
                info.linkname = link
                t.addfile(info)
            elif data is None:
                info.type = tarfile.DIRTYPE
                t.addfile(info)
            else:
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def put_blob(out, data):
    hexd = hashlib.sha256(data).hexdigest()
    with open(os.path.join(out, "blobs", "sha256", hexd), "wb") as f:
        f.write(data)
    return {"digest": "sha256:" + hexd, "size": len(data)}


def main():
    out, n = sys.argv[1], int(sys.argv[2])
    if n < 2:
        sys.exit("make_deep_layout.py: N must be 2 or more")
    os.makedirs(os.path.join(out, "blobs", "sha256"))
    with open("/bin/busybox", "rb") as f:
        busybox = f.read()
    base = [("bin", None, 0o755, None), ("bin/busybox", busybox, 0o755, None), ("l", None, 0o755, None)]
    base += [("bin/" + a, None, 0o777, "busybox") for a in ("sh", "cat", "ls", "test", "echo", "wc")]
    layers = [tar_bytes(base)]
    for k in range(2, n + 1):
        entries = [("l", None, 0o755, None), ("l/%d" % k, b"%d\n" % k, 0o644, None)]
        if k == n:
            entries.append(("l/.wh.2", b"", 0o644, None))
        layers.append(tar_bytes(entries))
    descs = []
    for data in layers:
        d = put_blob(out, data)
        d["mediaType"] = "application/vnd.oci.image.layer.v1.tar"
        descs.append(d)
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {"Env": ["PATH=/bin"], "Cmd": ["/bin/sh"]},
        "rootfs": {"type": "layers", "diff_ids": [d["digest"] for d in descs]},
    }
    cdesc = put_blob(out, json.dumps(config).encode())
    cdesc["mediaType"] = "application/vnd.oci.image.config.v1+json"
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": cdesc, "layers": descs}
    mdesc = put_blob(out, json.dumps(manifest).encode())
    mdesc["mediaType"] = "application/vnd.oci.image.manifest.v1+json"
    mdesc["annotations"] = {"org.opencontainers.image.ref.name": "deep"}
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [mdesc]}, f)
    with open(os.path.join(out, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)


if __name__ == "__main__":
    main()
