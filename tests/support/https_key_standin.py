#!/usr/bin/env python3
"""tests/support/https_key_standin.py — an API stand-in on the host's
loopback for shell tests: HTTPS on 127.0.0.1 (a port the kernel picks), a
certificate the test made, and one check: does the request carry the real
credential?

    https_key_standin.py --cert CRT --key KEY --secret-file F

Prints "port N" once listening. Every request is answered 200 "authorized"
when its x-api-key (or Authorization: Bearer) header is the secret in F,
else 401 "denied"; the header's value is never sent back (a box must not
learn the secret from the answer). Each request's line on stderr says which
it was, for the test's diagnostics.
"""
import argparse
import http.server
import sys

from tls_standin import serve_tls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--secret-file", required=True)
    args = ap.parse_args()
    secret = open(args.secret_file).read().strip()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            key = self.headers.get("x-api-key", "")
            bearer = self.headers.get("authorization", "")
            ok = secret and (key == secret or bearer == "Bearer " + secret)
            body = b"authorized\n" if ok else b"denied\n"
            self.send_response(200 if ok else 401)
            self.send_header("content-type", "text/plain")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            sys.stderr.write("%s %s %s\n" % (self.command, self.path, "authorized" if ok else "denied"))

        do_POST = do_GET

    serve_tls(Handler, args.cert, args.key)


if __name__ == "__main__":
    main()
