#!/usr/bin/env python3
"""tests/support/git_https_standin.py — a git server on the host's loopback
for tests: `git http-backend` (git's own smart-HTTP CGI) behind HTTPS on
127.0.0.1, a port the kernel picks.

    git_https_standin.py --cert CRT --key KEY --root DIR --token-file F

Prints "port N" once listening. DIR holds the repositories (each served,
GIT_HTTP_EXPORT_ALL). A request must carry "Authorization: Bearer TOKEN"
(TOKEN the content of F, the real credential a gateway injects), else it
gets 401 and git fails; the header is never sent back. Each request's line
on stderr: METHOD PATH authorized|denied.
"""
import argparse
import http.server
import os
import subprocess
import sys

from tls_standin import serve_tls


def cgi_response(out):
    """git http-backend's CGI output: (status, headers, body)."""
    for sep in (b"\r\n\r\n", b"\n\n"):
        if sep in out:
            head, body = out.split(sep, 1)
            break
    else:
        head, body = out, b""
    status, headers = 200, []
    for line in head.splitlines():
        if b":" not in line:
            continue
        name, value = line.split(b":", 1)
        name, value = name.strip().decode(), value.strip().decode()
        if name.lower() == "status":
            status = int(value.split()[0])
        elif name.lower() != "content-length":
            headers.append((name, value))
    return status, headers, body


def main():
    ap = argparse.ArgumentParser()
    for a in ("--cert", "--key", "--root", "--token-file"):
        ap.add_argument(a, required=True)
    args = ap.parse_args()
    token = open(args.token_file).read().strip()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def reply(self, status, headers, body):
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            ok = bool(token) and self.headers.get("authorization", "") == "Bearer " + token
            sys.stderr.write("%s %s %s\n" % (self.command, self.path, "authorized" if ok else "denied"))
            if not ok:
                return self.reply(401, [("content-type", "text/plain")], b"denied\n")
            path, _, query = self.path.partition("?")
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_PROJECT_ROOT": args.root,
                   "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path, "QUERY_STRING": query,
                   "REQUEST_METHOD": self.command, "CONTENT_TYPE": self.headers.get("content-type", ""),
                   "CONTENT_LENGTH": str(len(body)), "REMOTE_ADDR": "127.0.0.1",
                   "HTTP_CONTENT_ENCODING": self.headers.get("content-encoding", ""),
                   "GIT_PROTOCOL": self.headers.get("git-protocol", "")}
            out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, timeout=60)
            self.reply(*cgi_response(out.stdout))

        do_POST = do_GET

    serve_tls(Handler, args.cert, args.key)


if __name__ == "__main__":
    main()
