#!/usr/bin/env python3
# tools/bench/mcp-call-client.py — the MCP client of tools/bench/mcp-call.sh:
# one Streamable HTTP session on one keep-alive connection (initialize, then
# notifications/initialized), then timed tools/call and tools/list requests.
# The same client runs on the host against the server directly (TLS) and in a
# corral box against the box's MCP listener (plain HTTP on loopback), so the
# difference of the two is what corral adds. Python's own cost is on both
# sides and cancels out of the difference.
#
#   mcp-call-client.py --url URL [--cafile F] [--calls N] [--lists M]
#   mcp-call-client.py --url URL --hold K --release FILE
#
# Prints one JSON line: {"call_us": [...], "list_us": [...], "listed": n}.
# --hold K opens K sessions (each its own connection, initialized), prints
# "held K", and keeps them open until FILE exists (the RSS measurement).
import argparse
import http.client
import json
import os
import ssl
import sys
import time
import urllib.parse


def connect(url, cafile):
    u = urllib.parse.urlsplit(url)
    if u.scheme == "https":
        # The server's certificate names 127.0.0.1 too: verified as usual.
        conn = http.client.HTTPSConnection(u.hostname, u.port, context=ssl.create_default_context(cafile=cafile))
    else:
        conn = http.client.HTTPConnection(u.hostname, u.port)
    return conn, u.path or "/"


def messages_of(resp, body):
    ctype = resp.getheader("Content-Type", "")
    if ctype.startswith("text/event-stream"):
        out = []
        for block in body.decode().replace("\r\n", "\n").split("\n\n"):
            data = "\n".join(l[5:].lstrip(" ") for l in block.split("\n") if l.startswith("data:"))
            if data:
                out.append(json.loads(data))
        return out
    if not body:
        return []
    doc = json.loads(body)
    return doc if isinstance(doc, list) else [doc]


class Session:
    def __init__(self, url, cafile):
        self.conn, self.path = connect(url, cafile)
        self.sid = None
        self.next_id = 1

    def post(self, message):
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self.sid:
            headers["Mcp-Session-Id"] = self.sid
        self.conn.request("POST", self.path, body=json.dumps(message), headers=headers)
        resp = self.conn.getresponse()
        body = resp.read()
        if resp.status >= 300:
            sys.exit(f"mcp-call-client: {message.get('method')} answered HTTP {resp.status}: {body[:300]!r}")
        if resp.getheader("Mcp-Session-Id"):
            self.sid = resp.getheader("Mcp-Session-Id")
        return messages_of(resp, body)

    def request(self, method, params):
        self.next_id += 1
        answers = self.post({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        for a in answers:
            if a.get("id") == self.next_id:
                if "error" in a:
                    sys.exit(f"mcp-call-client: {method} refused: {json.dumps(a['error'])[:300]}")
                return a["result"]
        sys.exit(f"mcp-call-client: {method}: no answer in {answers!r:.300}")

    def initialize(self):
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "corral-bench", "version": "1"}})
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--cafile")
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--lists", type=int, default=50)
    p.add_argument("--hold", type=int, default=0)
    p.add_argument("--release")
    a = p.parse_args()
    if a.hold:
        sessions = []
        for _ in range(a.hold):
            s = Session(a.url, a.cafile)
            s.initialize()
            sessions.append(s)
        print(f"held {a.hold}", flush=True)
        while not os.path.exists(a.release):
            time.sleep(0.05)
        return
    s = Session(a.url, a.cafile)
    s.initialize()
    s.request("tools/call", {"name": "echo", "arguments": {"text": "warm"}})
    calls, lists, listed = [], [], 0
    for i in range(a.calls):
        t = time.perf_counter_ns()
        r = s.request("tools/call", {"name": "echo", "arguments": {"text": f"call {i}"}})
        calls.append((time.perf_counter_ns() - t) / 1000)
        if r["content"][0]["text"] != f"call {i}":
            sys.exit(f"mcp-call-client: echo answered {r!r:.200}")
    for _ in range(a.lists):
        t = time.perf_counter_ns()
        r = s.request("tools/list", {})
        lists.append((time.perf_counter_ns() - t) / 1000)
        listed = len(r["tools"])
    print(json.dumps({"call_us": calls, "list_us": lists, "listed": listed}), flush=True)


if __name__ == "__main__":
    main()
