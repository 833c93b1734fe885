#!/usr/bin/env python3
# tools/capture_kernel_check.py — checks, as root, that this kernel supports
# the capture design of docs/capture.md (fake-IP DNS + listeners held outside
# the box, no netfilter). It re-executes itself under `unshare -n -m`: every
# socket lives in a fresh network namespace that has only `lo` (no packet can
# leave it), and /etc/resolv.conf and /etc/nsswitch.conf are bind-mounted
# over in a private mount namespace, so getaddrinfo asks only the stub below.
# Prints one line per check; exit 0 when all pass. docs/capture.md quotes its
# output under "Verified on this kernel".
import errno
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

# The ranges of capture/synthetic_addresses.hpp.
V4_RANGE, V6_RANGE = "198.18.0.0/15", "fd63:6f72:7261:6c00::/64"
V4_FAKE, V6_FAKE = "198.18.3.4", "fd63:6f72:7261:6c00::c612:304"
OUTSIDE, OUTSIDE_V6 = "192.0.2.1", "2001:db8::1"  # documentation ranges: only looked up in the routing table
failed = []


def check(name, ok, detail):
    print(("ok    " if ok else "FAIL  ") + name + ": " + detail)
    if not ok:
        failed.append(name)


def sh(*argv):
    r = subprocess.run(argv, capture_output=True, text=True)
    return r.returncode, (r.stdout + r.stderr).strip()


def connect_errno(family, addr, port):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect((addr, port))
        return 0
    except OSError as e:
        return e.errno
    finally:
        s.close()


def listener(family, addr, port):
    s = socket.socket(family, socket.SOCK_STREAM)
    if family == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s.bind((addr, port))
    s.listen(8)
    return s


def captured_local_address(lst, family, dest, port):
    c = socket.create_connection((dest, port), timeout=2) if family == socket.AF_INET else \
        socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    if family == socket.AF_INET6:
        c.connect((dest, port))
    a, _ = lst.accept()
    local = a.getsockname()[0]
    a.close()
    c.close()
    return local


def dns_stub(sock):
    # Answers every A query with V4_FAKE, every other type with NOERROR and no answer.
    while True:
        q, peer = sock.recvfrom(512)
        qid, flags, qd = struct.unpack("!HHH", q[:6])
        end = 12
        while q[end] != 0:
            end += q[end] + 1
        question = q[12:end + 5]
        qtype = struct.unpack("!H", q[end + 1:end + 3])[0]
        answers = 1 if qtype == 1 else 0
        head = struct.pack("!HHHHHH", qid, 0x8180, 1, answers, 0, 0)
        body = question
        if answers:
            body += struct.pack("!HHHIH", 0xC00C, 1, 1, 5, 4) + socket.inet_aton(V4_FAKE)
        sock.sendto(head + body, peer)


def routes():
    rc, out = sh("ip", "link", "set", "lo", "up")
    check("lo up", rc == 0, out or "ip link set lo up")
    rc, out = sh("ip", "route", "add", "local", V4_RANGE, "dev", "lo")
    check("v4 local route", rc == 0, out or "ip route add local " + V4_RANGE + " dev lo")
    rc, out = sh("ip", "-6", "route", "add", "local", V6_RANGE, "dev", "lo")
    check("v6 local route", rc == 0, out or "ip -6 route add local " + V6_RANGE + " dev lo")
    print("      links: " + sh("ip", "-o", "link")[1].replace("\n", " | "))
    print("      v4 local table: " + sh("ip", "route", "show", "table", "local")[1].replace("\n", " | "))
    print("      v6 routes: " + sh("ip", "-6", "route", "show", "table", "local")[1].replace("\n", " | "))


def v6_one_address():
    # Unlike IPv4, IPv6 does not treat an address under a `local` route as
    # the host's own for bind(): a per-address v6 listener needs IPV6_FREEBIND.
    for freebind in (False, True):
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        if freebind:
            s.setsockopt(socket.IPPROTO_IPV6, 78, 1)  # IPV6_FREEBIND (not in Python 3.11's socket module)
        try:
            s.bind(("fd63:6f72:7261:6c00::5", 8443))
            s.listen(8)
            got = captured_local_address(s, socket.AF_INET6, "fd63:6f72:7261:6c00::5", 8443)
            detail = "bind [fd63:6f72:7261:6c00::5]:8443%s ok, accepted at %s" % (" with IPV6_FREEBIND" if freebind else "", got)
        except OSError as err:
            detail = "bind [fd63:6f72:7261:6c00::5]:8443%s -> %s" % (" with IPV6_FREEBIND" if freebind else "", errno.errorcode[err.errno])
        finally:
            s.close()
        print("      " + detail)


def tcp_checks():
    wild4 = listener(socket.AF_INET, "0.0.0.0", 443)
    got = captured_local_address(wild4, socket.AF_INET, V4_FAKE, 443)
    check("v4 wildcard listener captures", got == V4_FAKE, "connect %s:443 -> accepted getsockname %s" % (V4_FAKE, got))
    wild6 = listener(socket.AF_INET6, "::", 443)
    got = captured_local_address(wild6, socket.AF_INET6, V6_FAKE, 443)
    check("v6 wildcard listener captures", got == V6_FAKE, "connect [%s]:443 -> accepted getsockname %s" % (V6_FAKE, got))
    one = listener(socket.AF_INET, "198.18.200.1", 8443)  # no IP_FREEBIND: the local route makes it local
    got = captured_local_address(one, socket.AF_INET, "198.18.200.1", 8443)
    check("v4 bind one synthetic address", got == "198.18.200.1", "bind 198.18.200.1:8443 without FREEBIND, accepted at " + got)
    e = connect_errno(socket.AF_INET, "198.18.200.2", 8443)
    check("other address, same port, not captured", e == errno.ECONNREFUSED, "connect 198.18.200.2:8443 -> " + errno.errorcode.get(e, str(e)))
    v6_one_address()
    start = time.monotonic()
    e = connect_errno(socket.AF_INET, V4_FAKE, 9999)
    took = (time.monotonic() - start) * 1000
    check("fake IP, port without listener", e == errno.ECONNREFUSED,
          "connect %s:9999 -> %s in %.2f ms" % (V4_FAKE, errno.errorcode.get(e, str(e)), took))
    e = connect_errno(socket.AF_INET6, "fd63:6f72:7261:6c00::9", 9999)
    check("v6 fake IP, port without listener", e == errno.ECONNREFUSED, "connect [fd63:6f72:7261:6c00::9]:9999 -> " + errno.errorcode.get(e, str(e)))
    # A raw IP outside the ranges: asked of the routing table, never
    # connected to (no test dials an address that is not loopback, even one
    # meant to fail): with no route, connect(2) fails ENETUNREACH at this
    # same lookup, before any packet exists.
    for addr in (OUTSIDE, OUTSIDE_V6):
        rc, out = sh("ip", "route", "get", addr)
        check("raw IP outside the ranges has no route", rc != 0 and "unreachable" in out.lower(),
              "ip route get %s -> %s" % (addr, out))
    squat = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    squat.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        squat.bind(("127.0.0.1", 443))
        detail = "bind 127.0.0.1:443 next to the 0.0.0.0:443 listener succeeded"
    except OSError as err:
        detail = "bind 127.0.0.1:443 next to the 0.0.0.0:443 listener -> " + errno.errorcode[err.errno]
    check("a wildcard listener holds the port on every box address", "EADDRINUSE" in detail, detail)
    with open("/proc/sys/net/ipv4/ip_unprivileged_port_start") as f:
        print("      ip_unprivileged_port_start in the new namespace: " + f.read().strip())


def dns_checks(tmp):
    stub = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    stub.bind(("127.0.0.1", 53))
    threading.Thread(target=dns_stub, args=(stub,), daemon=True).start()
    for name, text in (("resolv.conf", "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n"),
                       ("nsswitch.conf", "hosts: files dns\n")):
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            f.write(text)
        subprocess.run(["mount", "--bind", path, "/etc/" + name], check=True)
    infos = socket.getaddrinfo("api.example.com", 443, socket.AF_INET, socket.SOCK_STREAM)
    got = infos[0][4][0] if infos else "(none)"
    check("getaddrinfo via a UDP stub on 127.0.0.1:53", got == V4_FAKE, "api.example.com -> " + got)
    wild4 = listener(socket.AF_INET, "0.0.0.0", 8080)
    c = socket.create_connection(("api.example.com", 8080), timeout=2)
    a, _ = wild4.accept()
    check("name -> fake IP -> captured", a.getsockname()[0] == V4_FAKE, "create_connection(api.example.com:8080) accepted at " + a.getsockname()[0])
    a.close()
    c.close()


def main():
    if os.environ.get("CORRAL_CAPTURE_CHECK_INSIDE") != "1":
        if os.geteuid() != 0:
            sys.exit("tools/capture_kernel_check.py: needs root (unshare -n -m)")
        env = dict(os.environ, CORRAL_CAPTURE_CHECK_INSIDE="1")
        sys.exit(subprocess.run(["unshare", "-n", "-m", "--propagation", "private", sys.executable,
                                 os.path.abspath(__file__)], env=env).returncode)
    print("kernel " + os.uname().release)
    routes()
    tcp_checks()
    with tempfile.TemporaryDirectory() as tmp:
        dns_checks(tmp)
    print("all passed" if not failed else "failed: " + ", ".join(failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
