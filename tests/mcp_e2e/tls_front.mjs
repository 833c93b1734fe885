#!/usr/bin/env node
// tests/mcp_e2e/tls_front.mjs — TLS in front of a plain-HTTP server on
// loopback, for a real server that speaks only HTTP (server-everything's
// streamableHttp) behind corral, whose remote MCP servers are https:// only.
//
//   node tls_front.mjs --cert FILE --key FILE --to PORT
//
// Listens on 127.0.0.1 (any free port) and prints `ready {"port":N}`; each
// request goes to http://127.0.0.1:PORT with its method, path, headers and
// body, and the answer streams back as it comes (SSE included).
import { readFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";

function fail(why) {
  process.stderr.write(`tls_front.mjs: ${why}\n`);
  process.exit(2);
}

const opts = {};
for (let i = 2; i < process.argv.length; i += 2) {
  const [name, value] = [process.argv[i], process.argv[i + 1]];
  if (!["--cert", "--key", "--to"].includes(name) || value === undefined) fail(`usage: --cert FILE --key FILE --to PORT (got ${name})`);
  opts[name.slice(2)] = value;
}
if (!opts.cert || !opts.key || !opts.to) fail("usage: --cert FILE --key FILE --to PORT");

const server = https.createServer({ cert: readFileSync(opts.cert), key: readFileSync(opts.key) }, (req, res) => {
  const headers = { ...req.headers, host: `127.0.0.1:${opts.to}` };
  const back = http.request({ host: "127.0.0.1", port: Number(opts.to), method: req.method, path: req.url, headers }, (up) => {
    res.writeHead(up.statusCode, up.headers);
    up.pipe(res);
  });
  back.on("error", (e) => {
    if (!res.headersSent) res.writeHead(502).end(`tls_front.mjs: ${e.message}\n`);
    else res.destroy(e);
  });
  req.pipe(back);
});
server.on("error", (e) => fail(`listen: ${e.message}`));
server.listen(0, "127.0.0.1", () => process.stdout.write(`ready ${JSON.stringify({ port: server.address().port })}\n`));
