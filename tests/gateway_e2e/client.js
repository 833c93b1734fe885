// tests/gateway_e2e/client.js — a real node client going through the gateway.
//
//   node client.js '<json spec>'
// Node 20 honours no proxy environment by default, so this does what an agent
// CLI's proxy support does: CONNECT host:port to the gateway, then TLS over
// that socket (trusting corral's CA, with SNI), then HTTP/1.1 or a WebSocket.
// spec: {proxy, ca?, host, port, sni?, mode: "http"|"sse"|"ws"|"ws-collect"|"ws-turns"|"raw", method?, path?,
//        headers?, body?, raw?, control?, messages?, settleMs?}
// proxy "env": the proxy named by HTTPS_PROXY (an agent CLI's way). Without
// ca, node's default trust plus NODE_EXTRA_CA_CERTS decide (again a CLI's way).
// Prints one JSON object on stdout:
//   {connectStatus, connectReason?, status?, headers?, body?, events?, echo?, messages?, closeCode?,
//    tlsError?, raw?}
'use strict';
const fs = require('fs');
const http = require('http');
const https = require('https');
const path = require('path');
const tls = require('tls');

const spec = JSON.parse(process.argv[2]);
const out = {};
const finish = () => { process.stdout.write(JSON.stringify(out) + '\n'); process.exit(0); };
const fail = (key) => (err) => { out[key] = String(err && err.message || err); finish(); };

function tunnel() {
  return new Promise((resolve) => {
    let proxyHost = '127.0.0.1', proxyPort = spec.proxy;
    if (spec.proxy === 'env') {
      const u = new URL(process.env.HTTPS_PROXY);
      proxyHost = u.hostname.replace(/^\[|\]$/g, '');
      proxyPort = Number(u.port);
    }
    const req = http.request({ host: proxyHost, port: proxyPort, method: 'CONNECT',
                               path: `${spec.host}:${spec.port}`, headers: { host: `${spec.host}:${spec.port}` } });
    req.on('connect', (res, socket, head) => {
      out.connectStatus = res.statusCode;
      if (res.headers['x-corral-reason']) out.connectReason = res.headers['x-corral-reason'];
      if (res.statusCode !== 200) {
        let body = head.toString();
        socket.on('data', (d) => { body += d; });
        socket.on('close', () => { out.body = body; finish(); });
        return;
      }
      resolve(socket);
    });
    req.on('error', fail('connectError'));
    req.end();
  });
}

function secure(socket) {
  return new Promise((resolve) => {
    const options = { socket, servername: spec.sni || spec.host, ALPNProtocols: ['http/1.1'] };
    if (spec.ca) options.ca = fs.readFileSync(spec.ca);
    const s = tls.connect(options);
    s.once('secureConnect', () => { out.alpn = s.alpnProtocol; resolve(s); });
    s.once('error', fail('tlsError'));
  });
}

(async () => {
  const socket = await tunnel();
  const s = await secure(socket);
  if (spec.mode === 'raw') {
    let raw = '';
    s.on('data', (d) => { raw += d.toString('latin1'); });
    s.on('close', () => { out.raw = raw; finish(); });
    s.on('error', () => {});
    s.write(spec.raw);
    return;
  }
  if (spec.mode === 'ws-collect') {
    // Every message until the server closes (binary ones as latin1 text).
    const { WebSocket } = require(path.join(process.env.CORRAL_SOURCE_ROOT, 'node_modules', 'ws'));
    const ws = new WebSocket(`wss://${spec.host}:${spec.port}${spec.path}`,
                             { createConnection: () => s, headers: spec.headers || {} });
    out.messages = [];
    ws.on('message', (data, isBinary) => out.messages.push((isBinary ? 'binary ' : '') + data.toString('latin1')));
    ws.on('close', (code) => { out.closeCode = code; finish(); });
    ws.on('unexpected-response', (req, res) => { out.status = res.statusCode; finish(); });
    ws.on('error', fail('wsError'));
    return;
  }
  if (spec.mode === 'ws-turns') {
    // Sends each of spec.messages in turn, each after the last one's
    // response.completed (or, for a turn that never completes, after
    // spec.settleMs), then closes; every message received is kept.
    const { WebSocket } = require(path.join(process.env.CORRAL_SOURCE_ROOT, 'node_modules', 'ws'));
    const ws = new WebSocket(`wss://${spec.host}:${spec.port}${spec.path}`,
                             { createConnection: () => s, headers: spec.headers || {} });
    out.messages = [];
    let turn = 0, timer = null;
    const next = () => {
      clearTimeout(timer);
      if (turn === spec.messages.length) { ws.close(); return; }
      ws.send(spec.messages[turn++]);
      timer = setTimeout(next, spec.settleMs || 1000);
    };
    ws.on('open', next);
    ws.on('message', (data) => {
      const text = data.toString();
      out.messages.push(text);
      if (text.includes('"response.completed"')) next();
    });
    ws.on('close', (code) => { out.closeCode = code; finish(); });
    ws.on('unexpected-response', (req, res) => {
      out.status = res.statusCode;
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => { out.body = body; finish(); });
    });
    ws.on('error', fail('wsError'));
    return;
  }
  if (spec.mode === 'ws') {
    const { WebSocket } = require(path.join(process.env.CORRAL_SOURCE_ROOT, 'node_modules', 'ws'));
    const ws = new WebSocket(`wss://${spec.host}:${spec.port}${spec.path || '/ws'}`,
                             { createConnection: () => s, headers: spec.headers || {} });
    ws.on('open', () => ws.send(spec.body || 'hello through corral'));
    ws.on('message', (data) => { out.echo = data.toString(); ws.close(); });
    ws.on('close', finish);
    ws.on('unexpected-response', (req, res) => { out.status = res.statusCode; finish(); });
    ws.on('error', fail('wsError'));
    return;
  }
  const req = https.request({ host: spec.host, port: spec.port, method: spec.method || 'GET', path: spec.path || '/',
                              headers: spec.headers || {}, createConnection: () => s });
  req.on('response', (res) => {
    out.status = res.statusCode;
    out.headers = res.headers;
    let body = '';
    const events = [];
    res.setEncoding('utf8');
    res.on('data', (d) => {
      body += d;
      if (spec.mode === 'sse') {
        let i;
        while ((i = body.indexOf('\n\n')) >= 0) {
          const ev = body.slice(0, i);
          body = body.slice(i + 2);
          const name = (ev.match(/^event: (.*)$/m) || [])[1];
          events.push(name);
          // Only now, with the first event in hand, let the upstream send the second:
          // a gateway that buffers the stream would never deliver it and this would hang.
          if (name === 'first') http.get({ host: '127.0.0.1', port: spec.control, path: '/release' }, (r) => r.resume());
        }
      }
    });
    res.on('end', () => { out.body = body; if (spec.mode === 'sse') out.events = events; finish(); });
    res.on('error', fail('responseError'));
  });
  req.on('error', fail('requestError'));
  if (spec.body) req.write(spec.body);
  req.end();
})();
