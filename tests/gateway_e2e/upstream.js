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
//   /reflect/FORM   sends the injected credential header's value back (a
//                   misbehaving upstream): FORM = body, header, base64[?pad=N],
//                   base64url[?pad=N], percent, json, hex, split (two chunks,
//                   the value cut in the middle), sse, 401, gzip (a gzip body
//                   whatever the request accepted), close (no length: ends at
//                   close), interim (in a 103 head before the final one)
//   /ws-reflect     WebSocket: sends the value as a text message, split across
//                   the two frames of a fragmented message, base64 in a binary
//                   message, then closes
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
const zlib = require('zlib');
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

// The credential the gateway injected into this request.
const injected = (headers) => headers['x-api-key'] || headers['authorization'] || '';
const allBytesPercent = (s) => Buffer.from(s).toString('hex').toUpperCase().replace(/(..)/g, '%$1');
const jsonUnicode = (s) => Array.from(s).map((c) => '\\u00' + c.charCodeAt(0).toString(16).padStart(2, '0')).join('');

function reflect(form, url, req, res) {
  const v = injected(req.headers);
  const pad = 'x'.repeat(Number(url.searchParams.get('pad') || 0));
  const json = (status, obj) => {
    const body = JSON.stringify(obj);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };
  const raw = (text) => { req.socket.end(text); };
  switch (form) {
    case 'body': return json(200, { echo: v });
    case 'header': res.writeHead(200, { 'x-echo': v, 'content-length': 2 }); return res.end('ok');
    case 'base64': return json(200, { b64: Buffer.from(pad + v + '!').toString('base64') });
    case 'base64url': return json(200, { b64u: Buffer.from(pad + v + '!').toString('base64url') });
    case 'percent': return json(200, { q: allBytesPercent(v), c: encodeURIComponent(v) });
    case 'json': {
      const body = '{"u":"' + jsonUnicode(v) + '","s":"' + v.replace(/\//g, '\\/') + '"}';
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      return res.end(body);
    }
    case 'hex': return json(200, { hex: Buffer.from(v).toString('hex'), HEX: Buffer.from(v).toString('hex').toUpperCase() });
    case 'split': {
      res.writeHead(200, { 'content-type': 'text/plain' });  // chunked
      const half = Math.floor(v.length / 2);
      res.write('first chunk: ' + v.slice(0, half));
      return setTimeout(() => res.end(v.slice(half) + ' :second chunk'), 100);
    }
    case 'sse': {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write('event: first\ndata: {"text":"hello"}\n\n');
      res.write('event: leak\ndata: {"key":"' + v.slice(0, 10));
      return setTimeout(() => res.end(v.slice(10) + '"}\n\nevent: last\ndata: {}\n\n'), 100);
    }
    case '401': return json(401, { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key: ' + v } });
    case 'gzip': {
      const body = zlib.gzipSync(JSON.stringify({ echo: v }));
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': body.length });
      return res.end(body);
    }
    case 'close':
      return raw('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\nuntil close: ' + v + '\n');
    case 'interim':
      return raw('HTTP/1.1 103 Early Hints\r\nlink: </hint?k=' + v + '>; rel=preload\r\n\r\n' +
                 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok');
    default: return json(404, { error: 'unknown reflect form' });
  }
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
    if (url.pathname.startsWith('/reflect/')) return reflect(url.pathname.slice(9), url, req, res);
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
  const wss = new WebSocketServer({ server: mainServer });
  wss.on('connection', (ws, req) => {
    stats.seen.push({ url: req.url, headers: req.headers });
    if (req.url === '/ws-reflect') {
      const v = injected(req.headers);
      ws.send('text: ' + v);
      ws.send('fragmented: ' + v.slice(0, 12), { fin: false });
      ws.send(v.slice(12) + ' :end', { fin: true });
      ws.send(Buffer.from('bin:' + Buffer.from('ab' + v).toString('base64')), { binary: true });
      ws.close(1000, 'done');
      return;
    }
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
