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
//   POST /script {"calls":[{"tool":NAME,"arguments":{...}}, ...]}  scripted tool calls (the
//                governed-tools tests): a model request that offers MCP tools (a tool name with
//                "__", as the CLIs name them: claude mcp__SERVER__TOOL, codex SERVER__TOOL) gets
//                the next call as a tool_use (Messages) or function_call (Responses) item, for the
//                offered tool named NAME or ending in "__NAME" (text TOOL-NOT-OFFERED NAME when none
//                is); each later call only once the request carries the previous one's result;
//                a call with "builtin": true names a CLI's own tool exactly (pi's write, bash) and
//                goes to any request that offers it;
//                after the last, "DONE". /stats entries then carry `tools` (the tool names the
//                request offered) and `tool_results` (the result texts it carried back).
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

// Scripted tool calls (POST /script), issued in order across the conversation.
let script = [];
let scriptCursor = 0;
const scriptedIds = new Set();  // the tool_use / call ids of scripted calls (not ToolSearch's)

// A tool result's text, whatever shape the CLI gave it.
function resultText(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((c) => (c && typeof c.text === 'string' ? c.text : JSON.stringify(c))).join('');
  return JSON.stringify(content);
}

// The scripted call this request gets: null (answer DONE), {missing: NAME},
// or {name, arguments}. `offered` are the request's tool names, `afterResult`
// whether its last item is a tool's result.
function scriptedCall(offered, afterResult) {
  if (scriptCursor >= script.length) return null;
  const want = script[scriptCursor];
  // An MCP tool waits for a request that offers MCP tools; a CLI's own tool
  // ("builtin": true, its exact name: pi's write, bash) for any request.
  if (!want.builtin && !offered.some((n) => n.includes('__'))) return null;
  if (scriptCursor > 0 && !afterResult) return null;  // a side request mid-conversation
  const name = offered.find((n) => n === want.tool || (!want.builtin && n.endsWith('__' + want.tool)));
  if (!name) return { missing: want.tool };
  ++scriptCursor;
  return { name, arguments: want.arguments || {} };
}

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

// What a Messages request offers and carries back (the scripted calls').
// claude defers MCP tools behind its ToolSearch tool: their names are in the
// request's text (not in `tools`) until the model asks ToolSearch to load
// them ("select:NAME,..."), which this stand-in does first, as a model would.
function anthropicToolState(parsed, body, entry) {
  const loaded = Array.isArray(parsed.tools) ? parsed.tools.map((t) => String(t && t.name)) : [];
  const deferred = Array.from(new Set(body.match(/mcp__[A-Za-z0-9_-]+__[A-Za-z0-9_-]+/g) || []))
    .filter((n) => !loaded.includes(n));
  const messages = Array.isArray(parsed.messages) ? parsed.messages : [];
  const last = messages[messages.length - 1];
  const results = last && last.role === 'user' && Array.isArray(last.content)
    ? last.content.filter((c) => c && c.type === 'tool_result') : [];
  entry.tools = loaded.concat(deferred);
  entry.tool_results = results.filter((r) => scriptedIds.has(r.tool_use_id)).map((r) => resultText(r.content));
  const call = scriptedCall(entry.tools, results.length > 0);
  if (call && call.name && deferred.includes(call.name) && loaded.includes('ToolSearch')) {
    --scriptCursor;  // asked again once ToolSearch has loaded it
    return { name: 'ToolSearch', arguments: { query: 'select:' + deferred.join(',') }, search: true };
  }
  return call;
}

async function anthropicMessages(req, res, body, entry) {
  let parsed = {};
  try { parsed = JSON.parse(body); } catch (e) { /* answered below anyway */ }
  const call = anthropicToolState(parsed, body, entry);
  await answerGate();
  const message = anthropicMessage(parsed.model);
  entry.usage = { input_tokens: 12, output_tokens: 1, cache_write_tokens: 0, cache_read_tokens: 0 };
  const text = call && call.missing ? 'TOOL-NOT-OFFERED ' + call.missing : 'DONE';
  const toolUse = call && call.name ? { type: 'tool_use', id: nextId('toolu'), name: call.name, input: call.arguments } : null;
  if (toolUse && !call.search) scriptedIds.add(toolUse.id);
  const stop = toolUse ? 'tool_use' : 'end_turn';
  if (!parsed.stream) {
    message.content = [toolUse || { type: 'text', text }];
    message.stop_reason = stop;
    return json(res, 200, message);
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const send = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify(Object.assign({ type }, data))}\n\n`);
  send('message_start', { message });
  if (toolUse) {
    send('content_block_start', { index: 0, content_block: Object.assign({}, toolUse, { input: {} }) });
    send('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: JSON.stringify(toolUse.input) } });
  } else {
    send('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
    send('ping', {});
    send('content_block_delta', { index: 0, delta: { type: 'text_delta', text } });
  }
  send('content_block_stop', { index: 0 });
  send('message_delta', { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 1 } });
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

// codex's code mode (0.171): MCP tools are deferred namespaces, callable only
// from JavaScript run by its `exec` custom tool (`await tools.mcp__S__T(args)`),
// and listed in that script's ALL_TOOLS. The stand-in asks exec for the list
// first, as a model would, then makes each scripted call through exec.
let codexDiscovery = null;  // the call id of the exec that lists ALL_TOOLS
let codexTools = null;      // the MCP tool names it reported

function execCall(js) {
  return { exec: js, call_id: nextId('call') };
}

// What a Responses request offers and carries back (the scripted calls').
function responsesToolState(parsed, entry) {
  const input = Array.isArray(parsed.input) ? parsed.input : [];
  let tail = [];
  for (let i = input.length - 1; i >= 0 && input[i] && /_call_output$/.test(String(input[i].type)); --i) tail.unshift(input[i]);
  entry.tool_results = tail.filter((o) => scriptedIds.has(o.call_id)).map((o) => resultText(o.output));
  const listed = tail.find((o) => o.call_id === codexDiscovery);
  if (listed) {
    const names = resultText(listed.output).match(/\[[^\]]*\]/);
    codexTools = names ? JSON.parse(names[0]) : [];
  }
  const codeMode = codexTools !== null || JSON.stringify(input).includes('Deferred tool namespaces');
  if (!codeMode) {
    const offered = Array.isArray(parsed.tools) ? parsed.tools.map((t) => String(t && (t.name || (t.function && t.function.name)))) : [];
    entry.tools = offered;
    const call = scriptedCall(offered, tail.length > 0);
    if (call && call.name) call.call_id = nextId('call'), scriptedIds.add(call.call_id);
    return call;
  }
  if (scriptCursor >= script.length) return null;
  if (codexTools === null) {
    if (codexDiscovery !== null) return null;  // a side request while the list is awaited
    const call = execCall('text(JSON.stringify(ALL_TOOLS.map((t) => t.name).filter((n) => n.startsWith("mcp__"))));');
    codexDiscovery = call.call_id;
    return call;
  }
  if (listed) entry.tools = codexTools;
  const call = scriptedCall(codexTools, tail.length > 0);
  if (!call || !call.name) return call;
  const exec = execCall(`try { text(JSON.stringify(await tools.${call.name}(${JSON.stringify(call.arguments)}))); } ` +
                        'catch (e) { text("ERROR " + String((e && e.message) || e)); }');
  scriptedIds.add(exec.call_id);
  return exec;
}

// The events of a turn that runs JavaScript through codex's exec tool.
function execCallEvents(call) {
  const id = nextId('resp');
  const item = { id: nextId('ctc'), type: 'custom_tool_call', status: 'completed', call_id: call.call_id, name: 'exec',
                 input: call.exec };
  const response = (status, output) => ({ id, object: 'response', status, model: 'gpt-standin', output,
                                          usage: status === 'completed' ? responsesUsage : null });
  return [
    { type: 'response.created', response: response('in_progress', []) },
    { type: 'response.output_item.added', output_index: 0, item: Object.assign({}, item, { status: 'in_progress', input: '' }) },
    { type: 'response.custom_tool_call_input.delta', item_id: item.id, output_index: 0, delta: item.input },
    { type: 'response.custom_tool_call_input.done', item_id: item.id, output_index: 0, input: item.input },
    { type: 'response.output_item.done', output_index: 0, item },
    { type: 'response.completed', response: response('completed', [item]) },
  ];
}

// The events of a turn that calls a tool.
function functionCallEvents(call) {
  const id = nextId('resp');
  const item = { id: nextId('fc'), type: 'function_call', status: 'completed', call_id: call.call_id, name: call.name,
                 arguments: JSON.stringify(call.arguments) };
  const response = (status, output) => ({ id, object: 'response', status, model: 'gpt-standin', output,
                                          usage: status === 'completed' ? responsesUsage : null });
  return [
    { type: 'response.created', response: response('in_progress', []) },
    { type: 'response.output_item.added', output_index: 0, item: Object.assign({}, item, { status: 'in_progress', arguments: '' }) },
    { type: 'response.function_call_arguments.delta', item_id: item.id, output_index: 0, delta: item.arguments },
    { type: 'response.function_call_arguments.done', item_id: item.id, output_index: 0, arguments: item.arguments },
    { type: 'response.output_item.done', output_index: 0, item },
    { type: 'response.completed', response: response('completed', [item]) },
  ];
}

// The events of one turn: a scripted call's, or text (DONE).
function turnEvents(generate, call) {
  if (generate && call && call.exec) return execCallEvents(call);
  if (generate && call && call.name) return functionCallEvents(call);
  return responseEvents(generate, call && call.missing ? 'TOOL-NOT-OFFERED ' + call.missing : 'DONE');
}

// The event sequence of one turn; a prewarm (generate:false) gets only created+completed.
function responseEvents(generate, text = 'DONE') {
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
                 content: [{ type: 'output_text', text, annotations: [] }] };
  return [
    { type: 'response.created', response: response('in_progress', []) },
    { type: 'response.output_item.added', output_index: 0,
      item: { id: itemId, type: 'message', role: 'assistant', status: 'in_progress', content: [] } },
    { type: 'response.content_part.added', item_id: itemId, output_index: 0, content_index: 0,
      part: { type: 'output_text', text: '', annotations: [] } },
    { type: 'response.output_text.delta', item_id: itemId, output_index: 0, content_index: 0, delta: text },
    { type: 'response.output_text.done', item_id: itemId, output_index: 0, content_index: 0, text },
    { type: 'response.content_part.done', item_id: itemId, output_index: 0, content_index: 0,
      part: { type: 'output_text', text, annotations: [] } },
    { type: 'response.output_item.done', output_index: 0, item: done },
    { type: 'response.completed', response: response('completed', [done]) },
  ];
}

async function responsesSse(req, res, body, entry) {
  let parsed = {};
  try { parsed = JSON.parse(body); } catch (e) { /* a turn anyway */ }
  entry.usage = responsesSent;
  const call = parsed.generate !== false ? responsesToolState(parsed, entry) : null;
  if (parsed.generate !== false) await answerGate();
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const e of turnEvents(parsed.generate !== false, call)) res.write(`event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`);
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
        const entry = { host: (req.headers.host || '').replace(/:\d+$/, ''), method: 'WS', url: req.url,
                        headers: {}, ws: true, message_type: msg.type || '', markers: markersIn(text),
                        usage: responsesSent };
        seen.push(entry);
        const call = msg.generate !== false ? responsesToolState(msg, entry) : null;
        if (msg.generate !== false) await answerGate();
        for (const e of turnEvents(msg.generate !== false, call)) ws.send(JSON.stringify(e));
      });
    });
  });
  const control = http.createServer(async (req, res) => {
    if (req.url === '/stats') return json(res, 200, { seen });
    if (req.url === '/script' && req.method === 'POST') {
      script = JSON.parse(await readBody(req)).calls || [];
      scriptCursor = 0;
      codexDiscovery = codexTools = null;
      return json(res, 200, { calls: script.length });
    }
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
