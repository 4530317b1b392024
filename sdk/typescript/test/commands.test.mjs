// Slash commands through the real zot (`zot rpc`): every response kind,
// notify / clear_notes / submit, onHello host info, and failing handlers.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

import { MockModel } from "./helpers/mock-model.mjs";
import { cleanup, eventually, FIXTURES, sandbox } from "./helpers/proc.mjs";
import { validateFrameLogs } from "./helpers/schema.mjs";
import { Rpc } from "./helpers/zot.mjs";

const DIR = join(FIXTURES, "commands");

describe("commands over zot rpc", () => {
  let box;
  let model;
  let rpc;
  let frameDir;

  before(async () => {
    box = sandbox();
    frameDir = join(box.root, "frames");
    model = await new MockModel([{ text: "Forty-two." }]).start();
    rpc = new Rpc(box, ["--ext", DIR, ...model.args()], { ZOT_TS_FRAME_LOG: frameDir });
    // The notify sent from onHello arrives once the extension is ready.
    await rpc.waitFor((e) => e.type === "ext_notify", { what: "the onHello notify" });
  });

  after(async () => {
    try {
      if (rpc) {
        const exit = await rpc.close();
        assert.equal(exit.code, 0, rpc.dump());
      }
      // Every frame the SDK wrote during the session is schema-valid.
      const { count, frames } = validateFrameLogs(frameDir);
      assert.ok(count > 10, `only ${count} frames logged`);
      const responses = frames.commands.filter((f) => f.type === "command_response");
      // insert and open_panel never show in RPC output: check the wire instead.
      assert.ok(responses.some((r) => r.action === "insert" && r.insert === "inserted text"));
      assert.ok(
        responses.some(
          (r) =>
            r.action === "open_panel" &&
            JSON.stringify(r.open_panel) ===
              JSON.stringify({ id: "cmd-panel", title: "Panel", lines: ["one", "two"], footer: "esc close" }),
        ),
      );
      assert.ok(frames.commands.some((f) => f.type === "submit" && f.text === "do the thing"));
      assert.equal(frames.commands.at(-1).type, "shutdown_ack");
    } finally {
      await model?.stop();
      await cleanup();
    }
  });

  it("notify from onHello is delivered as ext_notify", () => {
    const note = rpc.events.find((e) => e.type === "ext_notify");
    assert.deepEqual(note, {
      type: "ext_notify",
      extension: "commands",
      level: "info",
      message: "hello from onHello: openai/gpt-4.1",
    });
  });

  it("display → ext_display", async () => {
    const events = await rpc.prompt("/show hello  world");
    const display = events.find((e) => e.type === "ext_display");
    assert.deepEqual(display, { type: "ext_display", extension: "commands", command: "show", text: "shown: hello  world" });
  });

  it("a returned string is displayed, case-insensitive names work", async () => {
    const events = await rpc.prompt("/STR abc");
    assert.equal(events.find((e) => e.type === "ext_display")?.text, "plain abc");
  });

  it("prompt → the model gets the text as a user message", async () => {
    const events = await rpc.prompt("/ask what is six times seven");
    const body = model.requests.at(-1);
    const last = body.messages.at(-1);
    assert.equal(last.role, "user");
    const content = typeof last.content === "string" ? last.content : last.content.map((p) => p.text).join("");
    assert.equal(content, "Answer briefly: what is six times seven");
    const answer = events.find((e) => e.type === "assistant_message");
    assert.ok(answer, rpc.dump());
    assert.deepEqual(answer.content, [{ type: "text", text: "Forty-two." }]);
  });

  it("insert and open_panel need the TUI (the host says so)", async () => {
    for (const name of ["ins", "panel"]) {
      const events = await rpc.prompt(`/${name}`);
      const error = events.find((e) => e.type === "error");
      assert.match(error?.message ?? "", new RegExp(`/${name}: .*needs the interactive TUI`), rpc.dump());
    }
  });

  it("noop and returning nothing change nothing", async () => {
    for (const name of ["nothing", "void"]) {
      const events = await rpc.prompt(`/${name}`);
      assert.deepEqual(
        events.filter((e) => e.type !== "response").map((e) => e.type),
        ["done"],
      );
    }
  });

  it("the error form is an error line", async () => {
    const events = await rpc.prompt("/fail zzz");
    assert.equal(events.find((e) => e.type === "error")?.message, "/fail: bad input: zzz");
  });

  it("a throwing or rejecting handler answers with an error, and the extension keeps running", async () => {
    let events = await rpc.prompt("/throw");
    assert.equal(events.find((e) => e.type === "error")?.message, "/throw: kaboom");
    events = await rpc.prompt("/reject");
    assert.equal(events.find((e) => e.type === "error")?.message, "/reject: async kaboom");
    events = await rpc.prompt("/show still alive");
    assert.equal(events.find((e) => e.type === "ext_display")?.text, "shown: still alive");
  });

  it("onHello: host info and a command registered there", async () => {
    const events = await rpc.prompt("/where");
    const info = JSON.parse(events.find((e) => e.type === "ext_display").text);
    assert.equal(info.protocolVersion, 1);
    assert.match(info.zotVersion, /^\d+\.\d+\.\d+/);
    assert.equal(info.provider, "openai");
    assert.equal(info.model, "gpt-4.1");
    assert.equal(info.cwd, box.project);
    assert.equal(info.extensionDir, DIR);
    assert.equal(info.dataDir, DIR);
  });

  it("notify at every level → ext_notify; clearNotes → ext_clear_notes", async () => {
    for (const level of ["info", "success", "warn", "error"]) {
      const from = rpc.events.length;
      await rpc.prompt(`/note ${level} careful now`);
      const note = await rpc.waitFor((e) => e.type === "ext_notify" && e.level === level, { from, what: `${level} note` });
      assert.deepEqual(note, { type: "ext_notify", extension: "commands", level, message: "careful now" });
    }
    const from = rpc.events.length;
    await rpc.prompt("/unnote");
    const cleared = await rpc.waitFor((e) => e.type === "ext_clear_notes", { from, what: "ext_clear_notes" });
    assert.deepEqual(cleared, { type: "ext_clear_notes", extension: "commands" });
  });

  it("submit is accepted (and ignored outside the TUI)", async () => {
    const events = await rpc.prompt("/submit do the thing");
    assert.ok(!events.some((e) => e.type === "error"), rpc.dump());
  });

  it("console.log inside a handler never corrupts the protocol", async () => {
    const events = await rpc.prompt("/log");
    assert.equal(events.find((e) => e.type === "ext_display")?.text, "logged");
    const logFile = join(box.home, "logs", "ext-commands.log");
    const log = await eventually(() => {
      const text = readFileSync(logFile, "utf8");
      return text.includes("console.log goes to stderr") && text;
    }, "the console.log line in the extension log");
    assert.doesNotMatch(log, /malformed json/);
  });
});
