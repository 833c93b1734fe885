// tests/gateway_e2e/upstream.js — the local TLS upstream the gateway tests talk to.
//
//   node upstream.js DIR
// DIR holds the PEM files the test made with openssl: good.{crt,key} (signed
// by the test CA, names the test hosts), expired.{crt,key}, selfsigned.{crt,key},
// wronghost.{crt,key}. Everything listens on 127.0.0.1 only. Prints one line
//   ready {"main":P,"expired":P,"selfsigned":P,"wronghost":P,"control":P}
// then serves until killed.
//
// main (HTTPS + WebSocket):
//   /sse            event "first", then holds "second" until GET /release on control
//   /large?bytes=N  N bytes of 'x'
//   /ws             WebSocket echo
//   anything else   JSON {method, url, headers, bodyBytes}; credential header
//                   values are replaced by "sha256:<hex>" so the client never sees
//                   the real secret echoed back
// control (plain HTTP, for the test harness only, never through the gateway):
//   /stats    JSON {requests, maxBodyBytes, totalBodyBytes, badCertHits, seen:[{url, headers}]}
//   /release  lets every held SSE stream send its second event
'use strict';
const fs = require('fs');
const http = require('http');
const https = require('https');
const path = require('path');
const crypto = require('crypto');
const { WebSocketServer } = require(path.join(process.env.CORRAL_SOURCE_ROOT || path.join(__dirname, '..', '..'),
                                              'node_modules', 'ws'));

const dir = process.argv[2];
const pem = (name) => fs.readFileSync(path.join(dir, name));
const credentialHeaders = new Set(['authorization', 'x-api-key', 'proxy-authorization', 'cookie']);

const stats = { requests: 0, maxBodyBytes: 0, totalBodyBytes: 0, badCertHits: 0, seen: [] };
let releaseWaiters = [];
let released = false;

function redactedHeaders(headers) {
  const out = {};
  for (const [k, v] of Object.entries(headers)) {
    if (credentialHeaders.has(k)) {
      const values = Array.isArray(v) ? v : [v];
      out[k] = values.map((x) => 'sha256:' + crypto.createHash('sha256').update(x).digest('hex')).join(', ');
    } else {
      out[k] = v;
    }
  }
  return out;
}

function main(req, res) {
  stats.requests++;
  stats.seen.push({ url: req.url, headers: req.headers });
  let bytes = 0;
  const record = () => {
    stats.totalBodyBytes += bytes;
    stats.maxBodyBytes = Math.max(stats.maxBodyBytes, bytes);
  };
  req.on('data', (chunk) => { bytes += chunk.length; });
  req.on('aborted', record);
  req.on('end', () => {
    record();
    const url = new URL(req.url, 'https://upstream');
    if (url.pathname === '/sse') {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write('event: first\ndata: 1\n\n');
      const second = () => { res.end('event: second\ndata: 2\n\n'); };
      if (released) { released = false; second(); } else releaseWaiters.push(second);
      return;
    }
    if (url.pathname === '/large') {
      let left = Number(url.searchParams.get('bytes') || 0);
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(left) });
      const chunk = Buffer.alloc(64 * 1024, 'x');
      const pump = () => {
        while (left > 0) {
          const n = Math.min(left, chunk.length);
          left -= n;
          if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) { res.once('drain', pump); return; }
        }
        res.end();
      };
      pump();
      return;
    }
    const body = JSON.stringify({ method: req.method, url: req.url, headers: redactedHeaders(req.headers), bodyBytes: bytes });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
}

function badCert(req, res) {
  stats.badCertHits++;
  res.end('this upstream has a bad certificate and must never be reached\n');
}

const listen = (server) => new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));

(async () => {
  const mainServer = https.createServer({ cert: pem('good.crt'), key: pem('good.key') }, main);
  const wss = new WebSocketServer({ server: mainServer, path: '/ws' });
  wss.on('connection', (ws, req) => {
    stats.seen.push({ url: req.url, headers: req.headers });
    ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));
  });
  const servers = {
    main: mainServer,
    expired: https.createServer({ cert: pem('expired.crt'), key: pem('expired.key') }, badCert),
    selfsigned: https.createServer({ cert: pem('selfsigned.crt'), key: pem('selfsigned.key') }, badCert),
    wronghost: https.createServer({ cert: pem('wronghost.crt'), key: pem('wronghost.key') }, badCert),
    control: http.createServer((req, res) => {
      if (req.url === '/release') {
        released = releaseWaiters.length === 0;  // a release before the stream arrives is kept for it
        const waiters = releaseWaiters;
        releaseWaiters = [];
        waiters.forEach((f) => f());
        res.end('released\n');
      } else if (req.url === '/stats') {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify(stats));
      } else {
        res.statusCode = 404;
        res.end();
      }
    }),
  };
  const ports = {};
  for (const [name, server] of Object.entries(servers)) ports[name] = await listen(server);
  process.stdout.write('ready ' + JSON.stringify(ports) + '\n');
})();
