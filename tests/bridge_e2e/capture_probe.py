# tests/bridge_e2e/capture_probe.py — run inside a box (test_capture.cpp):
# programs that ignore the proxy variables, with those variables removed,
# and the refusals transparent capture must give. One "== NAME" section each.
import errno
import os
import socket
import ssl
import struct
import subprocess
import sys
import time
import http.client
import urllib.request

for k in list(os.environ):
    # The proxy variables, and git's http.proxy (GIT_CONFIG_KEY_0 and friends).
    if k.lower().endswith("_proxy") or k.startswith("GIT_CONFIG_"):
        del os.environ[k]
KEY = os.environ["PLACEHOLDER"]
BODY = '{"model":"m","max_tokens":1,"messages":[]}'


def section(name):
    print("== " + name, flush=True)


def ms(t):
    return int((time.monotonic() - t) * 1000)


def err(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if e.errno else type(e).__name__


def wire(name):
    return b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0"


def query(name_wire, qtype=1, qid=0x1234, qdcount=1):
    return struct.pack(">HHHHHH", qid, 0x0100, qdcount, 0, 0, 0) + name_wire + struct.pack(">HH", qtype, 1)


def ask(msg, timeout=1.0):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.settimeout(timeout)
    u.sendto(msg, ("127.0.0.1", 53))
    try:
        return u.recv(600)
    except socket.timeout:
        return None


section("getaddrinfo")
t = time.monotonic()
addrs = socket.getaddrinfo("api.anthropic.com", 443, type=socket.SOCK_STREAM)
print("addrs=" + ",".join(sorted({a[4][0] for a in addrs})))
print("ms=%d" % ms(t))
# AI_ADDRCONFIG (node's net.connect, getent ahosts): glibc answers only for a
# family the box has an address of besides the loopback one.
addrs = socket.getaddrinfo("api.anthropic.com", 443, type=socket.SOCK_STREAM, flags=socket.AI_ADDRCONFIG)
print("addrconfig=" + ",".join(sorted({a[4][0] for a in addrs})))

section("curl")
r = subprocess.run(["curl", "-sS", "--noproxy", "*", "-w", "\nstatus=%{http_code}\n", "-H", "x-api-key: " + KEY,
                    "-H", "content-type: application/json", "-d", BODY, "https://api.anthropic.com/v1/messages"],
                   capture_output=True, text=True, timeout=30)
print(r.stdout + r.stderr)

section("python")
c = http.client.HTTPSConnection("api.anthropic.com", 443, context=ssl.create_default_context(), timeout=20)
c.request("POST", "/v1/messages", body=BODY, headers={"x-api-key": KEY, "content-type": "application/json"})
resp = c.getresponse()
print("status=%d" % resp.status)
print(resp.read().decode(errors="replace"))

# urllib with its proxy handler emptied (proxies={}): it would read the
# proxy variables otherwise.
section("urllib")
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}),
                                     urllib.request.HTTPSHandler(context=ssl.create_default_context()))
req = urllib.request.Request("https://api.anthropic.com/v1/messages", data=BODY.encode(),
                             headers={"x-api-key": KEY, "content-type": "application/json"})
with opener.open(req, timeout=20) as resp:
    print("status=%d" % resp.status)
    print(resp.read().decode(errors="replace"))

# node's `ws` (it reads no proxy variable at all) to the stand-in's /ws echo,
# trusting corral's CA through NODE_EXTRA_CA_CERTS as the box sets it.
if os.path.isdir("/workspace/node_modules/ws"):
    section("ws")
    js = ("const WebSocket = require('/workspace/node_modules/ws');"
          "const ws = new WebSocket('wss://api.anthropic.com/ws', {headers: {'x-api-key': process.env.PLACEHOLDER}});"
          "const t = setTimeout(() => { console.log('timeout'); process.exit(0); }, 20000);"
          "ws.on('open', () => ws.send('hello-capture'));"
          "ws.on('message', (m) => { console.log('echo=' + m); clearTimeout(t); ws.close(); });"
          "ws.on('error', (e) => { console.log('error=' + e.message); process.exit(0); });")
    r = subprocess.run(["node", "-e", js], capture_output=True, text=True, timeout=40)
    print(r.stdout + r.stderr)

# git over HTTPS (smart HTTP) from the git stand-in: the box's git sends no
# credential; the gateway adds the real token (the stand-in refuses without).
if os.path.exists("/usr/bin/git"):
    section("git")
    r = subprocess.run(["git", "clone", "-q", "https://git.capture.test/repo.git", "/tmp/clone"],
                       env=dict(os.environ, GIT_TERMINAL_PROMPT="0"), capture_output=True, text=True, timeout=60)
    print("rc=%d %s" % (r.returncode, r.stderr.strip()[-300:]))
    if r.returncode == 0:
        print("content=" + open("/tmp/clone/hello.txt").read().strip())

if os.path.exists("/workspace/cclient"):
    section("c-client")
    r = subprocess.run(["/workspace/cclient", "api.anthropic.com", "443"], capture_output=True, text=True, timeout=30)
    print(r.stdout + r.stderr)

section("ungranted")
t = time.monotonic()
try:
    socket.getaddrinfo("ungranted.example", 443)
    print("resolved")
except socket.gaierror as e:
    print("gaierror=%d" % e.errno)
print("ms=%d" % ms(t))

section("other-port")
try:
    socket.create_connection(("api.anthropic.com", 8443), timeout=5)
    print("connected")
except OSError as e:
    print("errno=" + err(e))

section("ssh")
s = socket.create_connection(("api.anthropic.com", 443), timeout=10)
s.sendall(b"SSH-2.0-OpenSSH_9.2p1\r\n")
try:
    print("got=%r" % s.recv(100))
except OSError as e:
    print("errno=" + err(e))

section("sni")
raw = socket.create_connection(("api.anthropic.com", 443), timeout=10)
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
try:
    ctx.wrap_socket(raw, server_hostname="evil.example")
    print("handshake")
except (ssl.SSLError, OSError) as e:
    print("refused=" + type(e).__name__)

section("dns-tcp")
try:
    socket.create_connection(("127.0.0.1", 53), timeout=5)
    print("connected")
except OSError as e:
    print("errno=" + err(e))

section("long-name")
d = ask(query(wire(".".join(["a" * 63] * 4))))  # 257 bytes on the wire
print("rcode=%s" % (d[3] & 15 if d else "none"))

section("malformed")
print("short=%s" % ("silent" if ask(b"\x12\x34\x01", 0.5) is None else "answered"))
d = ask(struct.pack(">HHHHHH", 0x4321, 0x0100, 0, 0, 0, 0))
print("noquestion=%s" % (d[3] & 15 if d else "none"))

section("flood")
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.setblocking(False)
sent = 0
for i in range(20000):
    try:
        u.sendto(query(wire("flood%d.example" % i), qid=i & 0xFFFF), ("127.0.0.1", 53))
        sent += 1
    except BlockingIOError:
        pass
print("sent=%d" % sent)
time.sleep(1.5)
t = time.monotonic()
socket.getaddrinfo("api.anthropic.com", 443, type=socket.SOCK_STREAM)
print("after=ok ms=%d" % ms(t))
sys.stdout.flush()
