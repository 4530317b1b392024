// The SDK on the raw protocol: this test plays the host against
// fixtures/protocol, so every frame the SDK writes is visible.

import assert from "node:assert/strict";
import { join } from "node:path";
import { after, afterEach, describe, it } from "node:test";

import { FakeHost } from "./helpers/host.mjs";
import { cleanup, FIXTURES, sleep } from "./helpers/proc.mjs";
import { assertExtFrames, assertHostFrames } from "./helpers/schema.mjs";

const DIR = join(FIXTURES, "protocol");
const hosts = [];

function start(env) {
  const host = new FakeHost(DIR, ["node", "main.mjs"], { env });
  hosts.push(host);
  return host;
}

afterEach(() => {
  // Every frame the SDK wrote in the test must be a valid extension frame.
  for (const host of hosts.splice(0)) {
    const unparsable = host.frames.filter((f) => f.type === "__unparsable__");
    assert.deepEqual(unparsable, [], "stdout carried something that is not a JSON frame");
    assertExtFrames(host.frames, "written by fixtures/protocol");
  }
});
after(cleanup);

let nextId = 0;
const id = () => `req-${++nextId}`;

async function command(host, name, args) {
  const rid = id();
  host.send({ type: "command_invoked", id: rid, name, ...(args === undefined ? {} : { args }) });
  return host.reply(rid);
}

describe("handshake", () => {
  it("sends hello, waits for hello_ack, runs onHello, announces, then ready", async () => {
    const host = start();
    const hello = await host.next("hello");
    assert.deepEqual(hello, {
      type: "hello",
      name: "protocol",
      version: "1.2.3",
      capabilities: ["commands", "tools", "events", "panels"],
    });
    // Nothing may follow hello until the host answers.
    await sleep(300);
    assert.equal(host.frames.length, 1, `frames before hello_ack: ${JSON.stringify(host.frames)}`);
    const ack = {
      type: "hello_ack",
      protocol_version: 1,
      zot_version: "9.9.9",
      provider: "openai",
      model: "gpt-test",
      cwd: "/some/project",
      extension_dir: "/ext/dir",
      data_dir: "/data/dir",
    };
    assertHostFrames([ack]);
    host.send(ack);
    const frames = [];
    for (;;) {
      const frame = await host.next("registrations");
      frames.push(frame);
      if (frame.type === "ready") break;
    }
    const types = frames.map((f) => f.type);
    // Commands, then tools, then exactly one subscribe, then ready.
    const lastCommand = types.lastIndexOf("register_command");
    const firstTool = types.indexOf("register_tool");
    assert.ok(lastCommand < firstTool, types.join(" "));
    assert.equal(types.filter((t) => t === "subscribe").length, 1, types.join(" "));
    assert.deepEqual(types.slice(-2), ["subscribe", "ready"]);
    const commands = frames.filter((f) => f.type === "register_command").map((f) => f.name);
    assert.deepEqual(commands, ["slow", "fast", "echo", "throw", "weird", "late", "panel", "render", "log", "whoami"]);
    const tools = frames.filter((f) => f.type === "register_tool");
    assert.deepEqual(
      tools.map((t) => t.name),
      ["echo_tool", "bad_tool", "weird_tool"],
    );
    assert.deepEqual(tools[0], {
      type: "register_tool",
      name: "echo_tool",
      description: "echoes its args",
      schema: { type: "object" },
    });
    // Only the kinds that have handlers (no turn_start interceptor here).
    const subscribe = frames.find((f) => f.type === "subscribe");
    assert.deepEqual(subscribe, {
      type: "subscribe",
      events: ["turn_start", "tool_call"],
      intercept: ["tool_call", "assistant_message", "before_agent_start"],
    });
    // The notify from onHello waited for ready.
    const note = await host.next("the notify queued during onHello");
    assert.deepEqual(note, { type: "notify", level: "info", message: "queued during onHello" });
    // onHello saw the host info, camelCased.
    const who = await command(host, "whoami");
    assert.deepEqual(JSON.parse(who.display), {
      protocolVersion: 1,
      zotVersion: "9.9.9",
      provider: "openai",
      model: "gpt-test",
      cwd: "/some/project",
      extensionDir: "/ext/dir",
      dataDir: "/data/dir",
    });
    await host.shutdown();
  });

  it("fails clearly when the host goes away before hello_ack", async () => {
    const host = start();
    await host.next("hello");
    host.closeInput();
    const exit = await host.exited;
    assert.equal(exit.code, 3, host.dump());
    assert.match(host.stderr, /run failed: protocol: the host closed stdin before hello_ack/);
  });
});

describe("dispatch", () => {
  it("answers every command response kind and keeps running after errors", async () => {
    const host = start();
    await host.handshake();
    assert.deepEqual(await command(host, "echo", "hi there"), {
      type: "command_response",
      id: `req-${nextId}`,
      action: "display",
      display: "hi there",
    });
    // A missing args field is "".
    assert.equal((await command(host, "echo")).display, "");
    // Names are matched case-insensitively, like the host does.
    assert.equal((await command(host, "ECHO", "x")).display, "x");
    const thrown = await command(host, "throw");
    assert.equal(thrown.action, "noop");
    assert.equal(thrown.error, "command kaboom");
    const weird = await command(host, "weird");
    assert.equal(weird.action, "noop");
    assert.match(weird.error, /returned number; expected a Response, a string or nothing/);
    const unknown = await command(host, "nope");
    assert.deepEqual(unknown, { type: "command_response", id: unknown.id, action: "noop", error: "no handler for /nope" });
    // Still alive and well.
    assert.equal((await command(host, "echo", "still here")).display, "still here");
    assert.match(host.stderr, /\/throw failed: TypeError: command kaboom/);
    await host.shutdown();
  });

  it("runs commands concurrently", async () => {
    const host = start();
    await host.handshake();
    const slow = id();
    const fast = id();
    host.send({ type: "command_invoked", id: slow, name: "slow" });
    host.send({ type: "command_invoked", id: fast, name: "fast" });
    await host.reply(slow);
    const order = host.frames.filter((f) => f.type === "command_response").map((f) => f.id);
    assert.deepEqual(order, [fast, slow], "the fast command must not wait for the slow one");
    await host.shutdown();
  });

  it("handles events one at a time, in order", async () => {
    const host = start();
    await host.handshake();
    for (let step = 1; step <= 20; step++) host.send({ type: "event", event: "turn_start", step });
    const note = await host.expect((f) => f.type === "notify" && f.message.startsWith("order"), "the order note");
    assert.equal(note.message, `order ${Array.from({ length: 20 }, (_, i) => i + 1).join(",")}`);
    // Events arrive camelCased.
    host.send({ type: "event", event: "tool_call", tool_id: "t1", tool_name: "read", tool_args: { path: "a" } });
    const event = await host.expect((f) => f.type === "notify" && f.message.startsWith("event"), "the event note");
    assert.deepEqual(JSON.parse(event.message.slice("event ".length)), {
      event: "tool_call",
      toolId: "t1",
      toolName: "read",
      toolArgs: { path: "a" },
    });
    await host.shutdown();
  });

  it("answers tools with text, and errors for throws, bad returns and unknown tools", async () => {
    const host = start();
    await host.handshake();
    const call = async (name, args) => {
      const rid = id();
      host.send({ type: "tool_call", id: rid, name, args });
      return host.reply(rid);
    };
    assert.deepEqual(await call("echo_tool", { a: [1, "ü"] }), {
      type: "tool_result",
      id: `req-${nextId}`,
      content: [{ type: "text", text: JSON.stringify({ args: { a: [1, "ü"] }, name: "echo_tool" }) }],
    });
    const bad = await call("bad_tool", {});
    assert.deepEqual(bad, { type: "tool_result", id: bad.id, content: [{ type: "text", text: "tool kaboom" }], is_error: true });
    const weird = await call("weird_tool", {});
    assert.equal(weird.is_error, true);
    assert.match(weird.content[0].text, /returned number/);
    const unknown = await call("nope", {});
    assert.equal(unknown.is_error, true);
    assert.equal(unknown.content[0].text, 'no handler for tool "nope"');
    await host.shutdown();
  });

  it("answers interceptors: allow, rewrite chains, throws fail open", async () => {
    const host = start();
    await host.handshake();
    const intercept = async (fields, { valid = true } = {}) => {
      const rid = id();
      const frame = { type: "event_intercept", id: rid, ...fields };
      if (valid) assertHostFrames([frame]);
      host.send(frame);
      return host.reply(rid);
    };
    const tool = (name, args = { command: "ls" }) => ({ event: "tool_call", tool_id: "t", tool_name: name, tool_args: args });
    const bare = (reply) => assert.deepEqual(Object.keys(reply).sort(), ["id", "type"], JSON.stringify(reply));

    bare(await intercept(tool("read")));
    // A throwing interceptor allows (fail-open), and the SDK keeps running.
    bare(await intercept(tool("explode")));
    // Rewrites chain through both interceptors.
    const rewritten = await intercept(tool("rewrite"));
    assert.deepEqual(rewritten.modified_args, { command: "safe", seen: true });
    // An identical rewrite is no rewrite; a non-object one is dropped.
    bare(await intercept(tool("same")));
    bare(await intercept(tool("bad_rewrite")));
    // No turn_start interceptor: a bare allow.
    bare(await intercept({ event: "turn_start", step: 1 }));
    // replace_text equal to the input is no change.
    bare(await intercept({ event: "assistant_message", text: "same" }));
    // Unknown intercept kinds (not in the host schema) allow.
    bare(await intercept({ event: "teleport" }, { valid: false }));

    const prompt = (system_prompt) => ({
      event: "before_agent_start",
      session_id: "s1",
      agent_run_id: "r1",
      cwd: "/p",
      provider: "openai",
      model: "m",
      system_prompt,
    });
    assert.equal((await intercept(prompt("base"))).system_prompt, "base+s1");
    bare(await intercept(prompt("keep")));
    // "" is a real answer: it removes the prompt.
    const empty = await intercept(prompt("empty"));
    assert.equal(empty.system_prompt, "");
    assert.match(host.stderr, /tool_call interceptor failed \(allowing\)/);
    await host.shutdown();
  });

  it("drives panels: keys in order, renders while open, close handler", async () => {
    const host = start();
    await host.handshake();
    const open = await command(host, "panel");
    assert.deepEqual(open.open_panel, { id: "p1", title: "P", lines: ["start"], footer: "keys" });
    const keys = [
      { key: "down" },
      { key: "up" },
      { key: "rune", text: "x" },
      { key: "pageup" },
      { key: "rune", text: "é" },
      { key: "enter" },
      { key: "backspace" },
    ];
    for (const k of keys) {
      const frame = { type: "panel_key", panel_id: "p1", ...k };
      assertHostFrames([frame]);
      host.send(frame);
    }
    for (const k of keys) {
      const render = await host.expect((f) => f.type === "panel_render", "a panel_render");
      assert.deepEqual(render, { type: "panel_render", panel_id: "p1", lines: [`${k.key}:${k.text ?? ""}`] });
    }
    // Keys for a panel nobody owns are skipped with a log line.
    host.send({ type: "panel_key", panel_id: "ghost", key: "up" });
    host.send({ type: "panel_close", panel_id: "p1" });
    await host.expect((f) => f.type === "notify" && f.message === "p1 closed", "the close note");
    // After the host closed it, Panel.render sends nothing.
    assert.equal((await command(host, "render")).display, "false");
    assert.equal(host.frames.filter((f) => f.type === "panel_render").length, keys.length);
    assert.match(host.stderr, /panel_key for unknown panel "ghost"/);
    await host.shutdown();
  });

  it("registers late: commands and new subscriptions after ready", async () => {
    const host = start();
    await host.handshake();
    await command(host, "late");
    const reg = host.frames.find((f) => f.type === "register_command" && f.name === "later");
    assert.deepEqual(reg, { type: "register_command", name: "later", description: "registered late" });
    const subs = host.frames.filter((f) => f.type === "subscribe");
    assert.deepEqual(subs.at(-1), { type: "subscribe", events: ["turn_end"] });
    assert.equal((await command(host, "later")).display, "later");
    await host.shutdown();
  });
});

describe("framing", () => {
  it("skips malformed frames (logged to stderr), splits on LF only, strips CR", async () => {
    const host = start();
    await host.handshake();
    host.sendRaw("this is not json\n");
    host.sendRaw("[1,2,3]\n");
    host.sendRaw('{"no":"type"}\n');
    host.sendRaw('{"type":"mystery"}\n');
    host.sendRaw('{"type":"command_invoked"}\n');
    host.sendRaw("\n   \n");
    // CRLF line ending.
    host.sendRaw('{"type":"command_invoked","id":"crlf","name":"echo","args":"with CR"}\r\n');
    // U+2028 / U+2029 inside a string are not line breaks; multi-byte
    // characters arrive split across writes, one byte at a time.
    const tricky = "a\u2028b\u2029c — ü 🎉";
    const bytes = Buffer.from(JSON.stringify({ type: "command_invoked", id: "tricky", name: "echo", args: tricky }) + "\n");
    for (const byte of bytes) {
      host.sendRaw(Buffer.from([byte]));
      await sleep(0);
    }
    // Two frames in one write.
    host.sendRaw(
      '{"type":"command_invoked","id":"two-a","name":"echo","args":"A"}\n{"type":"command_invoked","id":"two-b","name":"echo","args":"B"}\n',
    );
    assert.equal((await host.reply("crlf")).display, "with CR");
    const reply = await host.reply("tricky");
    assert.equal(reply.display, tricky);
    // U+2028/2029 are escaped on the wire, so no reader can split the frame.
    const raw = host.lines.find((l) => l.includes('"tricky"'));
    assert.ok(raw.includes("\\u2028") && raw.includes("\\u2029"), raw);
    assert.equal((await host.reply("two-a")).display, "A");
    assert.equal((await host.reply("two-b")).display, "B");
    assert.match(host.stderr, /malformed frame from the host/);
    assert.match(host.stderr, /frame without a "type"/);
    assert.match(host.stderr, /unknown frame type "mystery"/);
    assert.match(host.stderr, /command_invoked without id or name/);
    // console.log in a handler goes to stderr, never stdout.
    assert.equal((await command(host, "log")).display, "logged");
    await host.until(() => host.stderr.includes("console.info too"), "console output on stderr");
    assert.ok(!host.lines.some((l) => l.includes("console.log goes")), "console.log reached stdout");
    await host.shutdown();
  });

  it("answers shutdown with shutdown_ack after onShutdown, then exits 0", async () => {
    const host = start();
    await host.handshake();
    const exit = await host.shutdown();
    assert.deepEqual(exit, { code: 0, signal: null });
    const tail = host.frames.slice(-2);
    assert.deepEqual(tail, [{ type: "notify", level: "info", message: "bye" }, { type: "shutdown_ack" }]);
  });

  it("exits 0 at EOF", async () => {
    const host = start();
    await host.handshake();
    host.closeInput();
    const exit = await host.exited;
    assert.deepEqual(exit, { code: 0, signal: null });
  });
});
