// tests/gateway_e2e/model_upstream.js — a stand-in model API that reports
// known usage, for the metering and budget tests.
//
//   node model_upstream.js DIR
// DIR holds good.{crt,key} (the e2e test CA's leaf). Listens on 127.0.0.1 only
// and prints one line
//   ready {"main":P,"control":P}
// main (HTTPS + WebSocket), every answer in the provider's real shape:
//   POST /v1/messages             Anthropic Messages: SSE when the body says stream=true,
//                                 else a JSON message. Usage: input 25, cache write 3,
//                                 cache read 7, output 11 (the SSE stream's message_delta
//                                 carries the running output total: 4, then 11).
//   POST /v1/messages/count_tokens  {"input_tokens": 25}
//   POST /v1/responses            OpenAI Responses SSE (or JSON without stream): input 40
//                                 (cached 8), output 13 (reasoning 5)
//   POST /v1/chat/completions     Chat Completions SSE with include_usage: prompt 30
//                                 (cached 4), completion 9; JSON without stream
//   GET  /v1/responses            WebSocket: each response.create message answered with
//                                 the Responses events above
// A request whose body has "metadata": {"standin": "..."} changes the answer:
//   "nousage"   the stream ends without its usage (a cut-off provider)
//   "hold"      the answer waits for GET /release on control (concurrency tests)
//   "error429"  a 429 rate_limit_error before any message (provider_error)
// control (plain HTTP, for the harness only):
//   GET /stats    {requests: N, byPath: {...}, held: N}
//   GET /release  lets every held answer go
'use strict';
const fs = require('fs');
const http = require('http');
const https = require('https');
const path = require('path');
const { WebSocketServer } = require(path.join(process.env.CORRAL_SOURCE_ROOT || path.join(__dirname, '..', '..'),
                                              'node_modules', 'ws'));

const dir = process.argv[2];
const pem = (name) => fs.readFileSync(path.join(dir, name));
const stats = { requests: 0, byPath: {}, held: 0 };
let waiters = [];
const gate = (hold) => (hold ? new Promise((resolve) => { stats.held++; waiters.push(resolve); }) : Promise.resolve());

const sse = (res) => {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  return (name, data) => res.write((name ? `event: ${name}\n` : '') + `data: ${JSON.stringify(data)}\n\n`);
};

function anthropic(res, body, variant) {
  const model = body.model || 'claude-test';
  const startUsage = { input_tokens: 25, cache_creation_input_tokens: 3, cache_read_input_tokens: 7, output_tokens: 1 };
  if (!body.stream) {
    const msg = { id: 'msg_1', type: 'message', role: 'assistant', model, content: [{ type: 'text', text: 'DONE' }],
                  stop_reason: 'end_turn', usage: { ...startUsage, output_tokens: 11 } };
    if (variant === 'nousage') delete msg.usage;
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end(JSON.stringify(msg));
  }
  const send = sse(res);
  send('message_start', { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model,
                                                             content: [], usage: startUsage } });
  send('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
  send('ping', { type: 'ping' });
  send('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'DO' } });
  send('message_delta', { type: 'message_delta', delta: {}, usage: { output_tokens: 4 } });
  send('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'NE' } });
  send('content_block_stop', { type: 'content_block_stop', index: 0 });
  if (variant === 'nousage') return res.end();  // cut before the final usage
  send('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 11 } });
  send('message_stop', { type: 'message_stop' });
  res.end();
}

const responsesUsage = { input_tokens: 40, input_tokens_details: { cached_tokens: 8 }, output_tokens: 13,
                         output_tokens_details: { reasoning_tokens: 5 }, total_tokens: 53 };
function responseEvents(model, variant) {
  const base = { id: 'resp_1', object: 'response', model, status: 'in_progress', output: [] };
  const events = [
    { type: 'response.created', response: base },
    { type: 'response.output_text.delta', item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'DONE' },
  ];
  if (variant !== 'nousage')
    events.push({ type: 'response.completed', response: { ...base, status: 'completed', usage: responsesUsage } });
  return events;
}

function chat(res, body, variant) {
  const model = body.model || 'gpt-test';
  // n choices, each of them 9 completion tokens (as a provider bills them).
  const completionTokens = 9 * (Number.isInteger(body.n) && body.n > 0 ? body.n : 1);
  if (!body.stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end(JSON.stringify({ id: 'c1', object: 'chat.completion', model,
      choices: [{ index: 0, message: { role: 'assistant', content: 'DONE' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 30, completion_tokens: completionTokens, total_tokens: 30 + completionTokens, prompt_tokens_details: { cached_tokens: 4 } } }));
  }
  const send = sse(res);
  send('', { id: 'c1', object: 'chat.completion.chunk', model, choices: [{ index: 0, delta: { content: 'DONE' } }], usage: null });
  send('', { id: 'c1', object: 'chat.completion.chunk', model, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: null });
  if (variant !== 'nousage')
    send('', { id: 'c1', object: 'chat.completion.chunk', model, choices: [],
               usage: { prompt_tokens: 30, completion_tokens: completionTokens, total_tokens: 30 + completionTokens, prompt_tokens_details: { cached_tokens: 4 } } });
  res.write('data: [DONE]\n\n');
  res.end();
}

async function main(req, res) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const text = Buffer.concat(chunks).toString('utf8');
  let body = {};
  try { body = JSON.parse(text || '{}'); } catch (e) { body = {}; }
  const p = new URL(req.url, 'https://standin').pathname;
  stats.requests++;
  stats.byPath[p] = (stats.byPath[p] || 0) + 1;
  const variant = (body.metadata && body.metadata.standin) || '';
  await gate(variant === 'hold');
  if (variant === 'error429') {
    res.writeHead(429, { 'content-type': 'application/json' });
    return res.end(JSON.stringify({ type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } }));
  }
  if (req.method === 'POST' && p === '/v1/messages') return anthropic(res, body, variant);
  if (req.method === 'POST' && p === '/v1/messages/count_tokens') {
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end(JSON.stringify({ input_tokens: 25 }));
  }
  if (req.method === 'POST' && p === '/v1/responses') {
    const events = responseEvents(body.model || 'gpt-test', variant);
    if (!body.stream) {
      const last = events[events.length - 1];
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify(last.response || {}));
    }
    const send = sse(res);
    for (const e of events) send(e.type, e);
    return res.end();
  }
  if (req.method === 'POST' && p === '/v1/chat/completions') return chat(res, body, variant);
  res.writeHead(404, { 'content-type': 'application/json' });
  res.end('{"error":"not found"}');
}

(async () => {
  const server = https.createServer({ cert: pem('good.crt'), key: pem('good.key') },
                                    (req, res) => { main(req, res).catch((e) => res.destroy(e)); });
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    stats.requests++;
    stats.byPath['ws'] = (stats.byPath['ws'] || 0) + 1;
    wss.handleUpgrade(req, socket, head, (ws) => {
      ws.on('message', (data) => {
        let msg = {};
        try { msg = JSON.parse(data.toString('utf8')); } catch (e) { msg = {}; }
        const variant = (msg.metadata && msg.metadata.standin) || '';
        for (const e of responseEvents(msg.model || 'gpt-test', variant)) ws.send(JSON.stringify(e));
      });
    });
  });
  const control = http.createServer((req, res) => {
    if (req.url === '/release') {
      waiters.splice(0).forEach((w) => w());
      stats.held = 0;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(stats));
  });
  const listen = (s) => new Promise((resolve) => s.listen(0, '127.0.0.1', () => resolve(s.address().port)));
  const ports = { main: await listen(server), control: await listen(control) };
  process.stdout.write('ready ' + JSON.stringify(ports) + '\n');
})();
