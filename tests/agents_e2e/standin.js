// tests/agents_e2e/standin.js — stand-in model backends for the real agent CLIs.
//
//   node standin.js DIR
// DIR holds standin.{crt,key} (signed by the test's CA; names api.anthropic.com,
// chatgpt.com, api.openai.com). Listens on 127.0.0.1 only and prints one line
//   ready {"main":P,"control":P}
// then serves until killed. The gateway reaches `main` through each grant's
// connect_to, so the CLIs' real host names never touch DNS.
//
// main (HTTPS + WebSocket), routed by Host; 401 without the credential header
// the real service reads (anthropic: x-api-key or Bearer; OpenAI/ChatGPT: Bearer):
//   api.anthropic.com  POST /v1/messages        a Messages API answer "DONE" (SSE when stream=true)
//                      GET /api/oauth/profile   a minimal profile
//                      GET /api/claude_code/policy_limits  no restrictions (claude retries a bare {})
//                      GET /api/claude_code/*   {} (settings)
//   chatgpt.com        GET /backend-api/wham/accounts/check  routing discovery listing ACCOUNT
//                      GET /backend-api/wham/settings/user   {}
//                      GET /backend-api/codex/models         {"models":[]}
//                      GET /backend-api/codex/responses      WebSocket (Responses events)
//                      POST /backend-api/codex/responses     SSE (Responses events)
//   api.openai.com     GET|POST /v1/responses                as above (API-key mode)
//   anything else      404, recorded
// dns (UDP 127.0.0.1:53, only with STANDIN_DNS_TRIPWIRE=1): a tripwire. The test
//   points the resolver here; every query is recorded (method "DNS", host = the
//   name asked for) and answered REFUSED. A correct run asks nothing.
// control (plain HTTP, for the harness only, never through the gateway):
//   GET /stats   JSON {seen:[{host, method, url, headers, ws, markers, usage?}]} — every request's
//                full headers, so the test can check which credential arrived, and the
//                CORRAL-MARKER-* words its body (or WebSocket message) carried, so it can
//                check the prompt and the system prompt reached the model; `usage`, on
//                each model answer, the usage it reported (the tests sum it).
//   GET /hold    model answers (a Messages answer, a Responses turn) wait from now on...
//   GET /release ...until this: the test sees what the CLI printed before its model answered.
'use strict';
const dgram = require('dgram');
const fs = require('fs');
const http = require('http');
const https = require('https');
const path = require('path');
const zlib = require('zlib');
const { WebSocketServer } = require(path.join(process.env.CORRAL_SOURCE_ROOT || path.join(__dirname, '..', '..'),
                                              'node_modules', 'ws'));

const dir = process.argv[2];
const account = process.env.STANDIN_CHATGPT_ACCOUNT || 'acct-standin';
const pem = (name) => fs.readFileSync(path.join(dir, name));
const seen = [];
let counter = 0;
let holding = false;
const held = [];
// Resolves at once, or when the test releases held answers.
const answerGate = () => (holding ? new Promise((resolve) => held.push(resolve)) : Promise.resolve());
const markersIn = (text) => Array.from(new Set(String(text).match(/CORRAL-MARKER-[A-Za-z0-9-]+/g) || []));
const nextId = (prefix) => `${prefix}_standin${++counter}`;

function record(req, extra) {
  const entry = Object.assign({ host: (req.headers.host || '').replace(/:\d+$/, ''), method: req.method, url: req.url,
                                headers: req.headers }, extra || {});
  seen.push(entry);
  return entry;
}

function json(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function readBody(req) {
  return new Promise((resolve) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      let buf = Buffer.concat(chunks);
      try {
        if (req.headers['content-encoding'] === 'zstd' && zlib.zstdDecompressSync) buf = zlib.zstdDecompressSync(buf);
        if (req.headers['content-encoding'] === 'gzip') buf = zlib.gunzipSync(buf);
      } catch (e) { /* leave it raw; parsing below tolerates that */ }
      resolve(buf.toString('utf8'));
    });
  });
}

// --- Anthropic Messages API -------------------------------------------------

function anthropicMessage(model) {
  return { id: nextId('msg'), type: 'message', role: 'assistant', model: model || 'claude-standin',
           content: [], stop_reason: null, stop_sequence: null,
           usage: { input_tokens: 12, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 } };
}

async function anthropicMessages(req, res, body, entry) {
  let parsed = {};
  try { parsed = JSON.parse(body); } catch (e) { /* answered below anyway */ }
  await answerGate();
  const message = anthropicMessage(parsed.model);
  entry.usage = { input_tokens: 12, output_tokens: 1, cache_write_tokens: 0, cache_read_tokens: 0 };
  if (!parsed.stream) {
    message.content = [{ type: 'text', text: 'DONE' }];
    message.stop_reason = 'end_turn';
    return json(res, 200, message);
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const send = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify(Object.assign({ type }, data))}\n\n`);
  send('message_start', { message });
  send('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
  send('ping', {});
  send('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'DONE' } });
  send('content_block_stop', { index: 0 });
  send('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 1 } });
  send('message_stop', {});
  res.end();
}

function anthropic(req, res, body, url, entry) {
  if (req.method === 'POST' && url.pathname === '/v1/messages') return anthropicMessages(req, res, body, entry);
  if (req.method === 'POST' && url.pathname === '/v1/messages/count_tokens') {
    entry.usage = {};  // a metered request that counts no tokens
    return json(res, 200, { input_tokens: 12 });
  }
  if (req.method === 'GET' && url.pathname === '/api/oauth/profile') {
    return json(res, 200, {
      account: { uuid: '00000000-0000-4000-8000-000000000001', email: 'standin@example.invalid', display_name: 'standin',
                 has_claude_max: true, has_claude_pro: false },
      organization: { uuid: '00000000-0000-4000-8000-000000000002', name: 'standin', organization_type: 'claude_max',
                      billing_type: 'stripe_subscription', rate_limit_tier: 'default_claude_max_20x' },
    });
  }
  if (req.method === 'GET' && url.pathname === '/api/claude_code/policy_limits') {
    return json(res, 200, { restrictions: {}, compliance_taints: [] });
  }
  if (req.method === 'GET' && url.pathname.startsWith('/api/claude_code/')) return json(res, 200, {});
  return json(res, 404, { type: 'error', error: { type: 'not_found_error', message: 'stand-in: unknown path' } });
}

// --- OpenAI Responses API (codex) ---------------------------------------------

// What every Responses answer reports (a prewarm too), and what /stats says it sent.
const responsesUsage = { input_tokens: 12, input_tokens_details: { cached_tokens: 0 }, output_tokens: 1,
                         output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 13 };
const responsesSent = { input_tokens: 12, output_tokens: 1, cached_input_tokens: 0, reasoning_tokens: 0 };

// The event sequence of one turn; a prewarm (generate:false) gets only created+completed.
function responseEvents(generate) {
  const id = nextId('resp');
  const usage = responsesUsage;
  const response = (status, output) => ({ id, object: 'response', status, model: 'gpt-standin', output,
                                          usage: status === 'completed' ? usage : null });
  if (!generate) {
    return [{ type: 'response.created', response: response('in_progress', []) },
            { type: 'response.completed', response: response('completed', []) }];
  }
  const itemId = nextId('msg');
  const done = { id: itemId, type: 'message', role: 'assistant', status: 'completed',
                 content: [{ type: 'output_text', text: 'DONE', annotations: [] }] };
  return [
    { type: 'response.created', response: response('in_progress', []) },
    { type: 'response.output_item.added', output_index: 0,
      item: { id: itemId, type: 'message', role: 'assistant', status: 'in_progress', content: [] } },
    { type: 'response.content_part.added', item_id: itemId, output_index: 0, content_index: 0,
      part: { type: 'output_text', text: '', annotations: [] } },
    { type: 'response.output_text.delta', item_id: itemId, output_index: 0, content_index: 0, delta: 'DONE' },
    { type: 'response.output_text.done', item_id: itemId, output_index: 0, content_index: 0, text: 'DONE' },
    { type: 'response.content_part.done', item_id: itemId, output_index: 0, content_index: 0,
      part: { type: 'output_text', text: 'DONE', annotations: [] } },
    { type: 'response.output_item.done', output_index: 0, item: done },
    { type: 'response.completed', response: response('completed', [done]) },
  ];
}

async function responsesSse(req, res, body, entry) {
  let parsed = {};
  try { parsed = JSON.parse(body); } catch (e) { /* a turn anyway */ }
  entry.usage = responsesSent;
  if (parsed.generate !== false) await answerGate();
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const e of responseEvents(parsed.generate !== false)) res.write(`event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`);
  res.end();
}

function openai(req, res, body, url, entry) {
  const p = url.pathname;
  if (req.method === 'GET' && p === '/backend-api/wham/accounts/check') {
    return json(res, 200, { accounts: [{ id: account, name: 'standin', structure: 'personal', plan_type: 'plus',
                                         workspace_backend_origin: 'NO_CONSTRAINT',
                                         account_routing_override: 'NO_CONSTRAINT' }] });
  }
  if (req.method === 'GET' && p === '/backend-api/wham/settings/user') return json(res, 200, {});
  if (req.method === 'GET' && (p === '/backend-api/codex/models' || p === '/v1/models')) return json(res, 200, { models: [] });
  if (req.method === 'POST' && (p === '/backend-api/codex/responses' || p === '/v1/responses')) {
    return responsesSse(req, res, body, entry);
  }
  return json(res, 404, { error: { message: 'stand-in: unknown path', type: 'invalid_request_error' } });
}

// Anthropic takes x-api-key or a Bearer token; OpenAI and ChatGPT only a Bearer token.
function authenticated(host, headers) {
  const bearer = /^Bearer \S+$/.test(headers.authorization || '');
  if (host === 'api.anthropic.com') return bearer || Boolean(headers['x-api-key']);
  return bearer;
}

async function main(req, res) {
  const entry = record(req);
  const body = await readBody(req);
  entry.markers = markersIn(body);
  const url = new URL(req.url, 'https://standin');
  const host = (req.headers.host || '').replace(/:\d+$/, '');
  // Like the real services: no credential in the header they read, no answer.
  if (!authenticated(host, req.headers)) return json(res, 401, { error: 'stand-in: no credential for ' + host });
  if (host === 'api.anthropic.com') return anthropic(req, res, body, url, entry);
  if (host === 'chatgpt.com' || host === 'api.openai.com') return openai(req, res, body, url, entry);
  return json(res, 404, { error: 'stand-in: unknown host ' + host });
}

// The first question's name of a DNS query (labels until the zero byte).
function dnsName(msg) {
  const labels = [];
  let i = 12;
  while (i < msg.length && msg[i] !== 0 && labels.length < 128) {
    labels.push(msg.subarray(i + 1, i + 1 + msg[i]).toString('latin1'));
    i += 1 + msg[i];
  }
  return labels.join('.');
}

function startDnsTripwire() {
  return new Promise((resolve, reject) => {
    const sock = dgram.createSocket('udp4');
    sock.on('error', reject);
    sock.on('message', (msg, peer) => {
      if (msg.length < 12) return;
      seen.push({ host: dnsName(msg), method: 'DNS', url: '', headers: {} });
      const answer = Buffer.from(msg);
      answer[2] = 0x80 | (msg[2] & 0x79);  // QR=1, keep opcode and RD
      answer[3] = 0x05;                     // REFUSED
      sock.send(answer, peer.port, peer.address);
    });
    sock.bind(53, '127.0.0.1', () => resolve(53));
  });
}

const listen = (server) => new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));

(async () => {
  const mainServer = https.createServer({ cert: pem('standin.crt'), key: pem('standin.key') },
                                        (req, res) => { main(req, res).catch((e) => { res.destroy(e); }); });
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: true });
  mainServer.on('upgrade', (req, socket, head) => {
    const p = new URL(req.url, 'https://standin').pathname;
    record(req, { ws: true });
    const host = (req.headers.host || '').replace(/:\d+$/, '');
    if (!authenticated(host, req.headers)) {
      socket.end('HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    if (p !== '/backend-api/codex/responses' && p !== '/v1/responses') {
      socket.end('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      ws.on('message', async (data) => {
        const text = data.toString('utf8');
        let msg = {};
        try { msg = JSON.parse(text); } catch (e) { /* a turn anyway */ }
        seen.push({ host: (req.headers.host || '').replace(/:\d+$/, ''), method: 'WS', url: req.url,
                    headers: {}, ws: true, message_type: msg.type || '', markers: markersIn(text),
                    usage: responsesSent });
        if (msg.generate !== false) await answerGate();
        for (const e of responseEvents(msg.generate !== false)) ws.send(JSON.stringify(e));
      });
    });
  });
  const control = http.createServer((req, res) => {
    if (req.url === '/stats') return json(res, 200, { seen });
    if (req.url === '/hold') { holding = true; return json(res, 200, { holding }); }
    if (req.url === '/release') {
      holding = false;
      held.splice(0).forEach((resolve) => resolve());
      return json(res, 200, { holding });
    }
    res.statusCode = 404;
    res.end();
  });
  const ports = { main: await listen(mainServer), control: await listen(control) };
  if (process.env.STANDIN_DNS_TRIPWIRE === '1') ports.dns = await startDnsTripwire();
  process.stdout.write('ready ' + JSON.stringify(ports) + '\n');
})();
