#!/usr/bin/env node
// tests/mcp_e2e/client.mjs — the protocol-level MCP client of corral's e2e
// tests, built on the official SDK's Client (@modelcontextprotocol/sdk,
// pinned in package.json). It connects to one server, runs the steps given
// on its command line in order and prints one JSON line per step on stdout.
//
//   node client.mjs [options] STEP... (--url URL | -- COMMAND ARG...)
//
// Transport (exactly one):
//   --url URL               Streamable HTTP (http:// or https://; for a test
//                           CA set NODE_EXTRA_CA_CERTS=FILE)
//   -- COMMAND ARG...       stdio: spawns COMMAND with ARGs
// Steps:
//   --list                  tools/list   -> {"step":"list","tools":[...]}
//   --call NAME JSON        tools/call   -> {"step":"call","name":..,"result":{...}}
// Options:
//   --header NAME:VALUE     an HTTP header on every request (repeatable)
//   --env NAME=VALUE        a variable in a stdio server's environment
//                           (repeatable; the SDK passes only a safe default set)
//   --sampling TEXT         declare the sampling capability and answer every
//                           sampling/createMessage with TEXT
//   --elicit JSON           declare elicitation and accept every
//                           elicitation/create with JSON as its content
//   --timeout MS            each step's timeout (default 30000; connecting,
//                           which starts a stdio server, always has 30000)
//
// A step the server answers with a JSON-RPC error prints
// {"step":..,"error":{"code":..,"message":..}} and the next step runs; a
// server→client request prints {"server_request":{"method":..,"params":..}}
// when it arrives. Exit 0 when every step was answered (result or error), 1
// when the connection failed, 2 on bad usage.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateMessageRequestSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

function usage(why) {
  process.stderr.write(`client.mjs: ${why}\nusage: node client.mjs [--header N:V] [--env N=V] [--sampling TEXT] ` +
    `[--elicit JSON] [--timeout MS] [--list] [--call NAME JSON]... (--url URL | -- COMMAND ARG...)\n`);
  process.exit(2);
}

function parseJson(text, what) {
  try { return JSON.parse(text); } catch (e) { usage(`${what} is not JSON (${e.message}): ${text}`); }
}

function parseArgs(argv) {
  const o = { steps: [], headers: {}, env: {}, timeout: 30000, url: null, command: null };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const next = () => { if (i + 1 >= argv.length) usage(`${a} needs a value`); return argv[++i]; };
    if (a === "--") { o.command = argv.slice(i + 1); break; }
    if (a === "--list") o.steps.push({ step: "list" });
    else if (a === "--call") { const name = next(); o.steps.push({ step: "call", name, args: parseJson(next(), `--call ${name}'s arguments`) }); }
    else if (a === "--url") o.url = next();
    else if (a === "--header") { const h = next(); const c = h.indexOf(":"); if (c <= 0) usage(`--header wants NAME:VALUE, got ${h}`); o.headers[h.slice(0, c).trim()] = h.slice(c + 1).trim(); }
    else if (a === "--env") { const e = next(); const q = e.indexOf("="); if (q <= 0) usage(`--env wants NAME=VALUE, got ${e}`); o.env[e.slice(0, q)] = e.slice(q + 1); }
    else if (a === "--sampling") o.sampling = next();
    else if (a === "--elicit") o.elicit = parseJson(next(), "--elicit");
    else if (a === "--timeout") { o.timeout = Number(next()); if (!Number.isInteger(o.timeout) || o.timeout <= 0) usage("--timeout wants milliseconds > 0"); }
    else usage(`unknown option ${a}`);
  }
  if ((o.url === null) === (o.command === null || o.command.length === 0)) usage("give exactly one of --url URL and -- COMMAND");
  if (o.steps.length === 0) usage("no step (--list, --call)");
  return o;
}

function out(obj) { process.stdout.write(JSON.stringify(obj) + "\n"); }
// Exits once stdout has taken every line: a pipe's writes are asynchronous,
// and process.exit() alone would drop what is still queued (a large result).
function finish(code) { process.stdout.write("", () => process.exit(code)); }

function makeTransport(o) {
  if (o.url !== null)
    return new StreamableHTTPClientTransport(new URL(o.url), { requestInit: { headers: o.headers } });
  return new StdioClientTransport({
    command: o.command[0], args: o.command.slice(1), env: { ...getDefaultEnvironment(), ...o.env }, stderr: "inherit",
  });
}

function makeClient(o) {
  const capabilities = {};
  if (o.sampling !== undefined) capabilities.sampling = {};
  if (o.elicit !== undefined) capabilities.elicitation = { form: {} };
  const client = new Client({ name: "corral-mcp-e2e-client", version: "1.0.0" }, { capabilities });
  if (o.sampling !== undefined)
    client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
      out({ server_request: { method: req.method, params: req.params } });
      return { role: "assistant", content: { type: "text", text: o.sampling }, model: "corral-mcp-e2e-client" };
    });
  if (o.elicit !== undefined)
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      out({ server_request: { method: req.method, params: req.params } });
      return { action: "accept", content: o.elicit };
    });
  return client;
}

async function runStep(client, s, timeout) {
  try {
    if (s.step === "list") {
      const r = await client.listTools(undefined, { timeout });
      out({ step: "list", tools: r.tools });
    } else {
      const r = await client.callTool({ name: s.name, arguments: s.args }, undefined, { timeout });
      out({ step: "call", name: s.name, result: r });
    }
  } catch (e) {
    out({ step: s.step, ...(s.name ? { name: s.name } : {}), error: { code: e.code ?? null, message: e.message } });
  }
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const client = makeClient(o);
  try {
    await client.connect(makeTransport(o), { timeout: 30000 });
  } catch (e) {
    out({ error: { stage: "connect", message: e.message } });
    return finish(1);
  }
  out({ connected: { server: client.getServerVersion(), protocol: client.transport?.protocolVersion ?? null } });
  for (const s of o.steps) await runStep(client, s, o.timeout);
  await client.close();
  finish(0);
}

main().catch((e) => { out({ error: { stage: "client", message: e.message } }); finish(1); });
