// The SDK in-process, on in-memory streams: registration checks, helpers,
// line splitting, and the run() life cycle's edge cases.

import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { describe, it } from "node:test";

import * as sdk from "@zot/ext";

import { assertExtFrames } from "./helpers/schema.mjs";

const { Extension, LineSplitter } = sdk;

/** An extension on in-memory streams; `frames` collects what it writes. */
function harness(name = "unit", version = "0.0.1") {
  const input = new PassThrough();
  const frames = [];
  const raw = [];
  let waiter = null;
  const output = {
    write(chunk) {
      raw.push(chunk);
      for (const line of chunk.split("\n").filter(Boolean)) frames.push(JSON.parse(line));
      waiter?.();
      return true;
    },
  };
  const logs = [];
  const stderr = { write: (s) => logs.push(s) };
  const ext = new Extension(name, version, { input, output, stderr });
  const until = (pred, what) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}: ${JSON.stringify(frames)}`)), 3000);
      const check = () => {
        const found = frames.find(pred);
        if (found) {
          clearTimeout(timer);
          waiter = null;
          resolve(found);
        }
      };
      waiter = check;
      check();
    });
  const send = (frame) => input.write(JSON.stringify(frame) + "\n");
  const ack = () =>
    send({
      type: "hello_ack",
      protocol_version: 1,
      zot_version: "1",
      provider: "p",
      model: "m",
      cwd: "/c",
      extension_dir: "/e",
      data_dir: "/d",
    });
  return { ext, input, frames, raw, logs, until, send, ack };
}

describe("registration checks", () => {
  it("rejects bad names, duplicates, bad schemas and bad levels with clear errors", () => {
    assert.throws(() => new Extension(""), /name must be a non-empty string/);
    const ext = new Extension("x", "1");
    assert.throws(() => ext.command("/slash", "", () => {}), /command name "\/slash" is invalid/);
    assert.throws(() => ext.command("two words", "", () => {}), /is invalid/);
    assert.throws(() => ext.command("ok", "", "not a function"), /handler of command ok must be a function/);
    ext.command("Dup", "", () => {});
    assert.throws(() => ext.command("dup", "", () => {}), /already registered \(names are case-insensitive\)/);
    assert.throws(() => ext.tool("bad name", "", {}, () => ""), /tool name "bad name" is invalid/);
    assert.throws(() => ext.tool("t", "", "{}", () => ""), /schema of tool t must be a JSON Schema object/);
    assert.throws(() => ext.tool("t", "", [], () => ""), /must be a JSON Schema object/);
    ext.tool("t", "", { type: "object" }, () => "");
    assert.throws(() => ext.tool("t", "", { type: "object" }, () => ""), /already registered/);
    assert.throws(() => ext.notify("loud", "x"), /notify level must be one of info, success, warn, error/);
    assert.throws(() => ext.on("", () => {}), /event name/);
    assert.throws(() => ext.interceptToolCall(null), /tool_call interceptor must be a function/);
    assert.throws(() => ext.panel(""), /panel id/);
    // Registration methods chain.
    assert.equal(ext.on("turn_start", () => {}), ext);
  });
});

describe("helpers", () => {
  it("build the documented shapes", () => {
    assert.deepEqual(sdk.prompt("p"), { action: "prompt", prompt: "p" });
    assert.deepEqual(sdk.insert("i"), { action: "insert", insert: "i" });
    assert.deepEqual(sdk.display("d"), { action: "display", display: "d" });
    assert.deepEqual(sdk.openPanel("id", { title: "T", lines: ["a"] }), {
      action: "open_panel",
      openPanel: { id: "id", title: "T", lines: ["a"] },
    });
    assert.deepEqual(sdk.noop(), { action: "noop" });
    assert.deepEqual(sdk.error("e"), { action: "noop", error: "e" });
    assert.deepEqual(sdk.textResult("t"), { content: [{ type: "text", text: "t" }] });
    assert.deepEqual(sdk.errorResult("t"), { content: [{ type: "text", text: "t" }], isError: true });
    assert.deepEqual(sdk.imageBytes("image/png", new Uint8Array([1, 2, 3])), { type: "image", mimeType: "image/png", data: "AQID" });
    assert.deepEqual(sdk.image("image/gif", "R0lG"), { type: "image", mimeType: "image/gif", data: "R0lG" });
    assert.deepEqual(sdk.toolResult("x", { activateTools: ["a"] }), { content: "x", activateTools: ["a"] });
    assert.deepEqual(sdk.allow(), {});
    assert.deepEqual(sdk.block("r"), { block: true, reason: "r" });
    assert.deepEqual(sdk.block(), { block: true });
    assert.deepEqual(sdk.rewrite({ a: 1 }), { modifiedArgs: { a: 1 } });
    assert.deepEqual(sdk.replaceText("x"), { replaceText: "x" });
    assert.equal(sdk.PROTOCOL_VERSION, 1);
    assert.deepEqual(sdk.EVENT_NAMES, [
      "session_start",
      "turn_start",
      "turn_end",
      "tool_call",
      "tool_confirmation_requested",
      "assistant_message",
    ]);
    assert.equal(sdk.encodeFrame({ type: "notify", level: "info", message: "a\u2028b" }), '{"type":"notify","level":"info","message":"a\\u2028b"}\n');
  });
});

describe("LineSplitter", () => {
  it("splits on LF only, strips one CR, keeps UTF-8 split across chunks", () => {
    const s = new LineSplitter();
    const bytes = Buffer.from("ab\u2028c\rd\r\nü🎉\n\nlast");
    const lines = [];
    for (const b of bytes) lines.push(...s.push(Buffer.from([b])));
    assert.deepEqual(lines, ["ab\u2028c\rd", "ü🎉", ""]);
    assert.equal(s.end(), "last");
    assert.equal(s.end(), undefined);
  });

  it("drops over-long lines and recovers at the next LF", () => {
    const dropped = [];
    const s = new LineSplitter(8, (n) => dropped.push(n));
    assert.deepEqual(s.push("0123"), []);
    assert.deepEqual(s.push("456789abc"), []);
    assert.deepEqual(s.push("def\nok\n"), ["ok"]);
    assert.deepEqual(s.push("123456789\nfine\n"), ["fine"]);
    assert.equal(dropped.length, 2);
  });
});

describe("run()", () => {
  it("queues runtime frames until ready and honours shutdown", async () => {
    const h = harness();
    h.ext.notify("warn", "early");
    h.ext.submit("go");
    const done = h.ext.run();
    await h.until((f) => f.type === "hello", "hello");
    assert.equal(h.frames.length, 1);
    h.ack();
    await h.until((f) => f.type === "ready", "ready");
    await h.until((f) => f.type === "submit", "the queued submit");
    assert.deepEqual(
      h.frames.map((f) => f.type),
      ["hello", "ready", "notify", "submit"],
    );
    assert.deepEqual(h.ext.host, {
      protocolVersion: 1,
      zotVersion: "1",
      provider: "p",
      model: "m",
      cwd: "/c",
      extensionDir: "/e",
      dataDir: "/d",
    });
    await assert.rejects(h.ext.run(), /already called/);
    h.send({ type: "shutdown" });
    await done;
    assert.deepEqual(h.frames.at(-1), { type: "shutdown_ack" });
    // Every write is exactly one whole frame.
    assert.ok(h.raw.every((chunk) => chunk.endsWith("\n") && chunk.indexOf("\n") === chunk.length - 1));
    assertExtFrames(h.frames);
    // Nothing is written after the run ended.
    h.ext.notify("info", "too late");
    assert.deepEqual(h.frames.at(-1), { type: "shutdown_ack" });
  });

  it("rejects when the host closes stdin before hello_ack", async () => {
    const h = harness("early-eof");
    const done = h.ext.run();
    h.input.end();
    await assert.rejects(done, /early-eof: the host closed stdin before hello_ack/);
  });

  it("rejects when the hello cannot be written", async () => {
    const input = new PassThrough();
    const logs = [];
    const ext = new Extension("nowrite", "1", {
      input,
      output: {
        write() {
          throw new Error("EPIPE");
        },
      },
      stderr: { write: (s) => logs.push(s) },
    });
    await assert.rejects(ext.run(), /nowrite: cannot write to the host \(EPIPE\) before hello_ack/);
    assert.match(logs.join(""), /\[nowrite\] cannot write to the host/);
  });

  it("resolves at EOF after the handshake; a failing onHello is logged, ready still sent", async () => {
    const h = harness();
    h.ext.onHello(() => {
      throw new Error("hello handler broke");
    });
    h.ext.command("c", "d", () => "x");
    const done = h.ext.run();
    h.ack();
    await h.until((f) => f.type === "ready", "ready");
    assert.deepEqual(
      h.frames.map((f) => f.type),
      ["hello", "register_command", "ready"],
    );
    h.input.end();
    await done;
    assert.match(h.logs.join(""), /onHello handler failed: Error: hello handler broke/);
  });

  it("converts command and tool returns, rejecting malformed ones as errors", async () => {
    const h = harness();
    h.ext.command("panel-no-id", "", () => ({ action: "open_panel" }));
    h.ext.command("bad-action", "", () => ({ action: "explode" }));
    h.ext.command("with-error", "", () => ({ action: "display", display: "x", error: "but also this" }));
    h.ext.tool("blocks", "", { type: "object" }, () => ({
      content: [sdk.text("a"), { type: "image", mime_type: "image/png", data: "AA==" }],
      isError: true,
      activateTools: [],
    }));
    h.ext.tool("bad-block", "", { type: "object" }, () => [{ type: "audio" }]);
    h.ext.tool("nothing", "", { type: "object" }, () => undefined);
    const done = h.ext.run();
    h.ack();
    await h.until((f) => f.type === "ready", "ready");
    const ask = async (frame) => {
      h.send(frame);
      return h.until((f) => f.id === frame.id && f.type !== frame.type, `reply ${frame.id}`);
    };
    assert.match((await ask({ type: "command_invoked", id: "1", name: "panel-no-id" })).error, /needs openPanel/);
    assert.match((await ask({ type: "command_invoked", id: "2", name: "bad-action" })).error, /unknown action "explode"/);
    assert.deepEqual(await ask({ type: "command_invoked", id: "3", name: "with-error" }), {
      type: "command_response",
      id: "3",
      action: "display",
      display: "x",
      error: "but also this",
    });
    assert.deepEqual(await ask({ type: "tool_call", id: "4", name: "blocks", args: {} }), {
      type: "tool_result",
      id: "4",
      content: [
        { type: "text", text: "a" },
        { type: "image", mime_type: "image/png", data: "AA==" },
      ],
      is_error: true,
    });
    const bad = await ask({ type: "tool_call", id: "5", name: "bad-block", args: {} });
    assert.equal(bad.is_error, true);
    assert.match(bad.content[0].text, /invalid content block/);
    assert.deepEqual(await ask({ type: "tool_call", id: "6", name: "nothing" }), { type: "tool_result", id: "6", content: [] });
    assertExtFrames(h.frames);
    h.input.end();
    await done;
  });
});
