// A loopback OpenAI chat-completions server speaking the real SSE format:
// `data: {chunk}\n\n` with choices[0].delta content / tool_calls by index, a
// finish_reason chunk, a usage chunk, then `data: [DONE]`. Every request
// body is recorded.

import { createServer } from "node:http";

import { withTimeout } from "./proc.mjs";

/**
 * A scripted turn: `{ text?: string, toolCalls?: [{ id, name, args }] }`.
 * `respond` is a list of turns (one per request, in order) or a function
 * `(body, index) => turn`.
 */
export class MockModel {
  constructor(respond = []) {
    this.respond = respond;
    this.requests = [];
    this.errors = [];
    this.server = createServer((req, res) => this.handle(req, res));
    this.sockets = new Set();
    this.server.on("connection", (s) => {
      this.sockets.add(s);
      s.on("close", () => this.sockets.delete(s));
    });
  }

  async start() {
    await new Promise((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(0, "127.0.0.1", resolve);
    });
    const { port } = this.server.address();
    this.url = `http://127.0.0.1:${port}`;
    return this;
  }

  /** The zot flags that point the openai provider here. */
  args(model = "gpt-4.1") {
    return ["--provider", "openai", "--api-key", "test", "--base-url", this.url, "--model", model];
  }

  async stop() {
    for (const s of this.sockets) s.destroy();
    await withTimeout(new Promise((r) => this.server.close(r)), 5000, "mock server to close").catch(() => {});
  }

  handle(req, res) {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      if (req.method !== "POST" || !req.url.endsWith("/chat/completions")) {
        this.errors.push(`unexpected ${req.method} ${req.url}`);
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "not found" } }));
        return;
      }
      let parsed;
      try {
        parsed = JSON.parse(body);
      } catch (err) {
        this.errors.push(`request body is not JSON: ${err.message}`);
        res.writeHead(400).end();
        return;
      }
      const index = this.requests.length;
      this.requests.push(parsed);
      let turn;
      try {
        turn = typeof this.respond === "function" ? this.respond(parsed, index) : this.respond[index];
      } catch (err) {
        this.errors.push(`script failed: ${err.stack}`);
      }
      if (!turn) {
        this.errors.push(`no scripted response for request #${index + 1}`);
        turn = { text: `(mock: no scripted response for request #${index + 1})` };
      }
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      for (const chunk of chunks(parsed.model ?? "mock", turn)) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      res.end("data: [DONE]\n\n");
    });
  }
}

/** Splits a string into `n` roughly equal pieces (at least one). */
function pieces(text, n = 3) {
  if (text.length === 0) return [""];
  const size = Math.ceil(text.length / n);
  const out = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

function chunks(model, turn) {
  const base = { id: "chatcmpl-mock", object: "chat.completion.chunk", created: 1700000000, model };
  const chunk = (delta, finish = null) => ({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] });
  const out = [chunk({ role: "assistant", content: "" })];
  if (turn.text) for (const p of pieces(turn.text)) out.push(chunk({ content: p }));
  const calls = turn.toolCalls ?? [];
  calls.forEach((call, index) => {
    out.push(
      chunk({
        tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }],
      }),
    );
  });
  // Argument fragments of parallel calls interleave, told apart by index.
  const fragments = calls.map((call) => pieces(JSON.stringify(call.args ?? {})));
  const rounds = Math.max(0, ...fragments.map((f) => f.length));
  for (let r = 0; r < rounds; r++) {
    fragments.forEach((f, index) => {
      if (r < f.length) out.push(chunk({ tool_calls: [{ index, function: { arguments: f[r] } }] }));
    });
  }
  out.push(chunk({}, calls.length > 0 ? "tool_calls" : "stop"));
  out.push({ ...base, choices: [], usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 } });
  return out;
}

/** The `tools` of a request as `{ name: function }`. */
export function requestTools(body) {
  return Object.fromEntries((body.tools ?? []).map((t) => [t.function.name, t.function]));
}

/** The `tool` messages of a request as `{ tool_call_id: content }`. */
export function toolMessages(body) {
  return Object.fromEntries(
    (body.messages ?? []).filter((m) => m.role === "tool").map((m) => [m.tool_call_id, m.content]),
  );
}

/** The system prompt of a request (undefined when there is none). */
export function systemPrompt(body) {
  const first = (body.messages ?? [])[0];
  return first && first.role === "system" ? first.content : undefined;
}
