"""tests/support/tls_standin.py — what the HTTPS stand-ins for tests share
(https_key_standin.py, git_https_standin.py): a threading HTTP server on
127.0.0.1 (a port the kernel picks) speaking TLS with the test's
certificate, its port announced as "port N" on stdout."""
import http.server
import ssl


def serve_tls(handler, cert, key):
    """Serves `handler` (a BaseHTTPRequestHandler class) forever. Each
    connection's TLS handshake runs in its own thread, bounded: a client that
    connects and never speaks TLS holds up no one else."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)

    class TlsHandler(handler):
        def setup(self):
            self.request.settimeout(30)
            self.request = ctx.wrap_socket(self.request, server_side=True)
            super().setup()

        def log_message(self, *a):
            pass  # the stand-ins say what they saw themselves

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), TlsHandler)
    print("port %d" % server.server_address[1], flush=True)
    server.serve_forever()
