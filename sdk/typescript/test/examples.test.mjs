// The examples under examples/extensions: clock (POSIX sh + jq) and todo
// (the SDK), loaded by the real zot with --ext and after `zot ext install`,
// and driven directly on the protocol where zot cannot (panels are TUI-only).

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, afterEach, describe, it } from "node:test";

import { FakeHost } from "./helpers/host.mjs";
import { MockModel, toolMessages } from "./helpers/mock-model.mjs";
import { cleanup, EXAMPLES, run, sandbox, SDK_DIR, tempDir } from "./helpers/proc.mjs";
import { assertExtFrames, assertHostFrames } from "./helpers/schema.mjs";
import { doctor, Rpc, zot } from "./helpers/zot.mjs";

const CLOCK = join(EXAMPLES, "clock");
const NO_JQ = spawnSync("jq", ["--version"]).status !== 0 && "jq is not installed (the clock example needs it)";
const TODO = join(EXAMPLES, "todo");
const hosts = [];
const models = [];

afterEach(async () => {
  for (const host of hosts.splice(0)) {
    assert.deepEqual(host.frames.filter((f) => f.type === "__unparsable__"), [], "stdout is not all JSON frames");
    assertExtFrames(host.frames, "written by an example");
  }
  for (const m of models.splice(0)) {
    await m.stop();
    assert.deepEqual(m.errors, [], "mock model errors");
  }
});
after(cleanup);

function direct(dir, command) {
  const host = new FakeHost(dir, command);
  hosts.push(host);
  return host;
}

async function mock(script) {
  const model = await new MockModel(script).start();
  models.push(model);
  return model;
}

describe("clock (sh + jq)", { skip: NO_JQ }, () => {
  it("has what the examples need", () => {
    for (const file of ["extension.json", "clock.sh", "README.md"]) assert.ok(existsSync(join(CLOCK, file)), file);
    assert.equal(readFileSync(join(CLOCK, "README.md"), "utf8").trim().split("\n").length, 3);
  });

  it("/now displays and /remind notifies, via zot rpc --ext", async () => {
    const box = sandbox();
    const rpc = new Rpc(box, ["--ext", CLOCK, "--provider", "openai", "--api-key", "test", "--base-url", "http://127.0.0.1:9"]);
    let events = await rpc.prompt("/now");
    const now = events.find((e) => e.type === "ext_display");
    assert.equal(now?.extension, "clock", rpc.dump());
    assert.match(now.text, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} /);
    events = await rpc.prompt("/now %Y");
    assert.equal(events.find((e) => e.type === "ext_display")?.text, String(new Date().getFullYear()));

    events = await rpc.prompt("/remind 1 stretch  your legs");
    assert.equal(events.find((e) => e.type === "ext_display")?.text, 'Reminder set: "stretch  your legs" in 1s.');
    const note = await rpc.waitFor((e) => e.type === "ext_notify", { what: "the reminder", timeout: 10000 });
    assert.deepEqual(note, { type: "ext_notify", extension: "clock", level: "info", message: "Reminder: stretch  your legs" });

    events = await rpc.prompt("/remind soon");
    assert.match(events.find((e) => e.type === "error")?.message ?? "", /^\/remind: usage: \/remind <N\[s\|m\|h\]> <text>/);
    const exit = await rpc.close();
    assert.equal(exit.code, 0, rpc.dump());
  });

  it("installs with zot ext install and loads from ZOT_HOME", async () => {
    const box = sandbox();
    const install = await zot(box, ["ext", "install", CLOCK]);
    assert.equal(install.code, 0, install.stderr);
    const list = await zot(box, ["ext", "list", "--json"]);
    const entry = JSON.parse(list.stdout).find((e) => e.name === "clock");
    assert.equal(entry?.state, "ok", list.stdout);
    assert.equal(entry.scope, "global");
    const rpc = new Rpc(box, ["--provider", "openai", "--api-key", "test", "--base-url", "http://127.0.0.1:9"]);
    const events = await rpc.prompt("/now %H");
    assert.match(events.find((e) => e.type === "ext_display")?.text ?? "", /^\d{2}$/, rpc.dump());
    assert.equal((await rpc.close()).code, 0);
  });

  it("speaks valid frames and survives malformed input", async () => {
    const host = direct(CLOCK, ["./clock.sh"]);
    const { hello, registrations } = await host.handshake();
    assert.deepEqual(hello, { type: "hello", name: "clock", version: "1.0.0", capabilities: ["commands"] });
    assert.deepEqual(
      registrations.map((r) => r.name),
      ["now", "remind"],
    );
    host.sendRaw("not json\n[1]\n");
    host.sendRaw('{"type":"command_invoked","id":"a","name":"now","args":"%%"}\r\n');
    assert.deepEqual(await host.reply("a"), { type: "command_response", id: "a", action: "display", display: "%" });
    host.send({ type: "command_invoked", id: "b", name: "remind", args: "2x tea" });
    assert.match((await host.reply("b")).error, /usage/);
    assert.deepEqual(await host.shutdown(), { code: 0, signal: null });
    assert.match(host.stderr, /skipping a malformed frame: not json/);
  });
});

describe("todo (the SDK)", () => {
  it("has what the examples need", () => {
    for (const file of ["extension.json", "launch.mjs", "todo.mjs", "README.md"]) assert.ok(existsSync(join(TODO, file)), file);
    assert.equal(readFileSync(join(TODO, "README.md"), "utf8").trim().split("\n").length, 3);
  });

  it("loads from the repo with --ext (the launcher finds sdk/typescript)", async () => {
    const box = sandbox();
    const { code, report } = await doctor(box, [TODO]);
    assert.equal(code, 0, JSON.stringify(report, null, 2));
    const ext = report.extensions[0];
    assert.equal(ext.state, "ready");
    assert.deepEqual(ext.commands.map((c) => c.name), ["todo"]);
    assert.deepEqual(ext.tools.map((t) => t.name), ["todo_add", "todo_list"]);
  });

  it("installed: fails clearly without the SDK, works after npm install, tools persist to data_dir", async () => {
    const box = sandbox();
    const install = await zot(box, ["ext", "install", TODO]);
    assert.equal(install.code, 0, install.stderr);
    const installed = join(box.home, "extensions", "todo");

    const missing = await doctor(box, []);
    assert.equal(missing.code, 1);
    assert.equal(missing.report.extensions[0].state, "failed");
    const log = readFileSync(join(box.home, "logs", "ext-todo.log"), "utf8");
    assert.match(log, /cannot find the @zot\/ext SDK/);
    assert.match(log, /npm install --install-links --prefix "[^"]+\/extensions\/todo" /);

    // The documented fix: install the SDK package beside the extension.
    const npm = await run("npm", ["install", "--install-links", "--prefix", installed, SDK_DIR, "--no-audit", "--no-fund", "--offline"], {
      cwd: box.root,
      timeout: 120000,
    });
    assert.equal(npm.code, 0, npm.stderr);
    const fixed = await doctor(box, []);
    assert.equal(fixed.code, 0, JSON.stringify(fixed.report, null, 2));

    const model = await mock([
      { toolCalls: [{ id: "call_add", name: "todo_add", args: { text: "  buy\nmilk " } }] },
      { text: "Added." },
      { toolCalls: [{ id: "call_list", name: "todo_list", args: {} }] },
      { text: "Two things." },
    ]);
    const rpc = new Rpc(box, model.args());
    let events = await rpc.prompt("/todo water the plants");
    assert.equal(events.find((e) => e.type === "ext_display")?.text, 'added "water the plants" (1 open)', rpc.dump());
    await rpc.prompt("remind me to buy milk");
    assert.equal(toolMessages(model.requests[1]).call_add, 'Added "buy milk" to the todo list (2 open).');
    await rpc.prompt("what is on my list?");
    assert.equal(toolMessages(model.requests[3]).call_list, "- [ ] water the plants\n- [ ] buy milk");
    assert.equal((await rpc.close()).code, 0, rpc.dump());

    const saved = JSON.parse(readFileSync(join(installed, "todos.json"), "utf8"));
    assert.deepEqual(
      saved.items.map((i) => [i.text, i.done]),
      [
        ["water the plants", false],
        ["buy milk", false],
      ],
    );
  });

  it("panel: open via command, arrow keys move, keys add and complete, state persisted", async () => {
    const data = tempDir();
    const ack = { data_dir: data, extension_dir: TODO };
    let host = direct(TODO, ["node", "launch.mjs"]);
    await host.handshake(ack);
    const open = (id) => {
      const frame = { type: "command_invoked", id, name: "todo" };
      assertHostFrames([frame]);
      host.send(frame);
      return host.reply(id);
    };
    let reply = await open("o1");
    assert.equal(reply.action, "open_panel");
    assert.deepEqual(reply.open_panel, {
      id: "todo-main",
      title: "Todos (0 open, 0 done)",
      lines: ["  nothing to do; press a to add a todo"],
      footer: "↑/↓ move · a add · x toggle · d delete · c clear done · esc close",
    });

    const keys = async (...list) => {
      const before = host.frames.filter((f) => f.type === "panel_render").length;
      for (const k of list) {
        const frame = { type: "panel_key", panel_id: "todo-main", ...(typeof k === "string" ? { key: k } : k) };
        assertHostFrames([frame]);
        host.send(frame);
      }
      await host.until(
        () => host.frames.filter((f) => f.type === "panel_render").length >= before + list.length,
        `${list.length} panel_render frames`,
      );
      const last = host.frames.filter((f) => f.type === "panel_render").at(-1);
      assert.equal(last.panel_id, "todo-main");
      return last;
    };
    const type = (text) => [...text].map((ch) => ({ key: "rune", text: ch }));

    let render = await keys({ key: "rune", text: "a" });
    assert.deepEqual(render.lines, ["+ ▏"]);
    assert.match(render.footer, /enter save/);
    render = await keys(...type("buy breadd"), "backspace", "enter");
    assert.deepEqual(render.lines, ["› □ buy bread"]);
    render = await keys({ key: "rune", text: "a" }, ...type("walk the dög"), "enter");
    assert.deepEqual(render.lines, ["  □ buy bread", "› □ walk the dög"]);
    render = await keys("up");
    assert.deepEqual(render.lines, ["› □ buy bread", "  □ walk the dög"]);
    render = await keys({ key: "rune", text: "x" });
    assert.deepEqual(render.lines, ["› ✓ buy bread", "  □ walk the dög"]);
    assert.equal(render.title, "Todos (1 open, 1 done)");
    render = await keys("down", "down");
    assert.deepEqual(render.lines, ["  ✓ buy bread", "› □ walk the dög"], "the cursor stops at the end");
    // Cancel an add with tab: nothing changes.
    render = await keys({ key: "rune", text: "a" }, ...type("nope"), "tab");
    assert.deepEqual(render.lines, ["  ✓ buy bread", "› □ walk the dög"]);

    const file = join(data, "todos.json");
    const saved = () => JSON.parse(readFileSync(file, "utf8")).items.map((i) => [i.text, i.done]);
    assert.deepEqual(saved(), [
      ["buy bread", true],
      ["walk the dög", false],
    ]);

    // The tool adds while the panel is open: the panel is redrawn.
    host.send({ type: "tool_call", id: "t1", name: "todo_add", args: { text: "call mum" } });
    assert.deepEqual((await host.reply("t1")).content, [{ type: "text", text: 'Added "call mum" to the todo list (2 open).' }]);
    await host.until(() => host.frames.filter((f) => f.type === "panel_render").at(-1).lines.length === 3, "a redraw");

    // The user closes the panel; no more renders for it.
    host.send({ type: "panel_close", panel_id: "todo-main" });
    host.send({ type: "tool_call", id: "t2", name: "todo_add", args: { text: "" } });
    const empty = await host.reply("t2");
    assert.equal(empty.is_error, true);
    const renders = host.frames.filter((f) => f.type === "panel_render").length;
    host.send({ type: "tool_call", id: "t3", name: "todo_add", args: { text: "later" } });
    await host.reply("t3");
    assert.equal(host.frames.filter((f) => f.type === "panel_render").length, renders, "rendered a closed panel");
    assert.deepEqual(await host.shutdown(), { code: 0, signal: null });

    // A new process reads the same file.
    host = direct(TODO, ["node", "launch.mjs"]);
    await host.handshake(ack);
    reply = await open("o2");
    assert.deepEqual(reply.open_panel.lines, ["› ✓ buy bread", "  □ walk the dög", "  □ call mum", "  □ later"]);
    render = await keys({ key: "rune", text: "c" });
    assert.deepEqual(render.lines, ["› □ walk the dög", "  □ call mum", "  □ later"]);
    assert.deepEqual(saved(), [
      ["walk the dög", false],
      ["call mum", false],
      ["later", false],
    ]);
    assert.deepEqual(await host.shutdown(), { code: 0, signal: null });
  });
});
