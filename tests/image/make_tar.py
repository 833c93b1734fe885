#!/usr/bin/env python3
"""tests/image/make_tar.py — writes the tar archives the image tests import.

Python's tarfile writes whatever entry the test asks for, hostile ones
included (GNU tar strips "..", leading "/" and refuses to archive through a
link), so every archive here is exactly the bytes the case describes.

  make_tar.py OUT CASE [OUTSIDE]

CASE is one of the hostile cases (dotdot, absolute, symlink-write,
symlink-dir-write, dir-then-symlink, hardlink-outside, hardlink-absolute, device, blockdev,
trusted-xattr), "whiteouts" (a layer deleting /gone and making /opq
opaque, with a new file in it) or "modes" (owners and modes a create call
alone would not give: a set-GID directory's group and bit not inherited,
set-ID files, group-writable and sticky modes, a directory listed again). OUTSIDE is the directory the hostile entries
aim at (the test checks it stays empty).
"""
import io
import sys
import tarfile


def add_file(t, name, data=b"x\n", mode=0o644, pax=None):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    if pax:
        info.pax_headers = pax
    t.addfile(info, io.BytesIO(data))


def add(t, name, kind, linkname="", mode=0o755, devmajor=0, devminor=0):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    info.mode = mode
    info.devmajor = devmajor
    info.devminor = devminor
    t.addfile(info)


def main():
    out, case = sys.argv[1], sys.argv[2]
    outside = sys.argv[3] if len(sys.argv) > 3 else "/nonexistent"
    fmt = tarfile.PAX_FORMAT
    with tarfile.open(out, "w", format=fmt) as t:
        add(t, "etc", tarfile.DIRTYPE)
        add_file(t, "etc/ok", b"fine\n")
        if case == "dotdot":
            add_file(t, "etc/../../../../../.." + outside + "/dotdot", b"escaped\n")
        elif case == "absolute":
            add_file(t, outside + "/absolute", b"escaped\n")
        elif case == "symlink-write":
            add(t, "escape", tarfile.SYMTYPE, linkname=outside)
            add_file(t, "escape/through-link", b"escaped\n")
        elif case == "symlink-dir-write":
            add(t, "a", tarfile.DIRTYPE)
            add(t, "a/b", tarfile.SYMTYPE, linkname="../../../../../../.." + outside)
            add_file(t, "a/b/c/deep", b"escaped\n")
        elif case == "dir-then-symlink":
            add(t, "d", tarfile.DIRTYPE)
            add_file(t, "d/f", b"in the layer\n")
            add(t, "d", tarfile.SYMTYPE, linkname=outside)
            add_file(t, "d/g", b"escaped\n")
        elif case == "hardlink-outside":
            add(t, "etc/shadow-link", tarfile.LNKTYPE, linkname="../../../../../.." + outside + "/target")
        elif case == "hardlink-absolute":
            add(t, "etc/shadow-link", tarfile.LNKTYPE, linkname=outside + "/target")
        elif case == "device":
            add(t, "dev-sda", tarfile.CHRTYPE, mode=0o666, devmajor=1, devminor=3)
        elif case == "blockdev":
            add(t, "disk", tarfile.BLKTYPE, mode=0o666, devmajor=8, devminor=0)
        elif case == "whiteouts":
            add_file(t, ".wh.gone", b"")
            add(t, "opq", tarfile.DIRTYPE)
            add_file(t, "opq/.wh..wh..opq", b"")
            add_file(t, "opq/new", b"upper\n")
            add_file(t, "usr/local/bin/layer2", b"#!/bin/sh\necho from-layer-2\n", mode=0o755)
            add(t, "etc/ok-link", tarfile.LNKTYPE, linkname="etc/ok")
            add_file(t, "etc/xattr-file", b"x\n", pax={"SCHILY.xattr.user.corral": "kept",
                                                          "SCHILY.xattr.trusted.overlay.redirect": "/etc"})
        elif case == "modes":
            def entry(name, kind, mode, uid=0, gid=0, data=b""):
                info = tarfile.TarInfo(name)
                info.type, info.mode, info.uid, info.gid = kind, mode, uid, gid
                info.size = len(data) if kind == tarfile.REGTYPE else 0
                t.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
            entry("g", tarfile.DIRTYPE, 0o2775, gid=50)
            entry("g/f", tarfile.REGTYPE, 0o644, data=b"f\n")
            entry("g/sub", tarfile.DIRTYPE, 0o755)
            entry("g/own", tarfile.REGTYPE, 0o640, uid=1000, gid=1000, data=b"own\n")
            entry("suid", tarfile.REGTYPE, 0o4755, data=b"s\n")
            entry("sgid-owned", tarfile.REGTYPE, 0o2755, uid=1000, gid=1000, data=b"s\n")
            entry("gw", tarfile.REGTYPE, 0o664, data=b"w\n")
            entry("tmp", tarfile.DIRTYPE, 0o1777)
            entry("locked", tarfile.DIRTYPE, 0o700, uid=1000, gid=1000)
            entry("locked/x", tarfile.REGTYPE, 0o600, uid=1000, gid=1000, data=b"x\n")
            entry("implied/deep/file", tarfile.REGTYPE, 0o644, data=b"d\n")
            entry("etc", tarfile.DIRTYPE, 0o750, gid=42)
        else:
            sys.exit("unknown case " + case)


main()
