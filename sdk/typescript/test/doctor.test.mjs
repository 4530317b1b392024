// Handshake and registration as zot sees them: `zot ext doctor --json`.

import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { after, it } from "node:test";

import { cleanup, FIXTURES, sandbox, SDK_DIR } from "./helpers/proc.mjs";
import { validateFrameLogs } from "./helpers/schema.mjs";
import { doctor } from "./helpers/zot.mjs";

after(cleanup);

const fixture = (name) => join(FIXTURES, name);

it("every fixture handshakes, registers and sends ready", async () => {
  const box = sandbox();
  const frameDir = join(box.root, "frames");
  const names = ["commands", "tools", "guard", "observer"];
  const { code, report, stderr } = await doctor(box, names.map(fixture), { env: { ZOT_TS_FRAME_LOG: frameDir } });
  assert.equal(code, 0, `${JSON.stringify(report, null, 2)}\n${stderr}`);
  assert.equal(report.ok, true);
  assert.deepEqual(report.conflicts, []);
  const byName = Object.fromEntries(report.extensions.map((e) => [e.name, e]));
  for (const name of names) {
    const ext = byName[name];
    assert.ok(ext, `${name} missing from the report`);
    assert.equal(ext.state, "ready", `${name}: ${JSON.stringify(ext)}`);
    assert.equal(ext.error, null);
    assert.equal(ext.version, "1.2.3");
    assert.equal(ext.dir, fixture(name));
    assert.deepEqual(ext.warnings, [], `${name} warnings`);
  }

  // Commands, including the one registered in onHello.
  assert.deepEqual(
    byName.commands.commands.map((c) => c.name),
    ["show", "str", "ask", "ins", "panel", "nothing", "void", "fail", "throw", "reject", "note", "unnote", "submit", "log", "where"],
  );
  assert.deepEqual(byName.commands.commands[0], { name: "show", description: "display the args" });
  // Only the kinds with handlers are subscribed.
  assert.deepEqual(byName.commands.events, []);
  assert.deepEqual(byName.commands.intercepts, []);

  assert.deepEqual(
    byName.tools.tools.map((t) => [t.name, t.deferred]),
    [
      ["weather", false],
      ["pixel", false],
      ["fails", false],
      ["explode", false],
      ["loader", false],
      ["secret", true],
    ],
  );
  assert.equal(byName.tools.tools[0].description, "Current weather for a city.");
  assert.deepEqual(byName.tools.events, []);

  assert.deepEqual(byName.guard.events, []);
  assert.deepEqual(
    [...byName.guard.intercepts].sort(),
    ["assistant_message", "before_agent_start", "tool_call", "turn_start"],
  );
  assert.deepEqual(byName.guard.commands, []);

  assert.deepEqual(
    [...byName.observer.events].sort(),
    ["assistant_message", "session_start", "tool_call", "turn_end", "turn_start"],
  );
  assert.deepEqual(byName.observer.intercepts, []);

  // On the wire: hello first, ready after every registration, one subscribe,
  // shutdown_ack last; every frame schema-valid.
  const { frames } = validateFrameLogs(frameDir);
  for (const name of names) {
    const types = frames[name].map((f) => f.type);
    assert.equal(types[0], "hello", `${name}: ${types}`);
    assert.equal(types.at(-1), "shutdown_ack", `${name}: ${types}`);
    const ready = types.indexOf("ready");
    assert.ok(ready > 0, `${name}: no ready`);
    assert.ok(types.slice(ready + 1).every((t) => !t.startsWith("register_") && t !== "subscribe"), `${name}: ${types}`);
    assert.ok(types.filter((t) => t === "subscribe").length <= 1, `${name}: ${types}`);
  }
  assert.ok(!frames.commands.some((f) => f.type === "subscribe"), "commands has no handlers to subscribe");
});

it("a hello name that does not match the manifest is reported by zot", async () => {
  const box = sandbox();
  const dir = join(box.root, "misnamed");
  mkdirSync(dir);
  const sdk = pathToFileURL(join(SDK_DIR, "dist", "index.js")).href;
  writeFileSync(
    join(dir, "main.mjs"),
    `import { Extension } from ${JSON.stringify(sdk)};\nawait new Extension("other-name", "1.0.0").run();\n`,
  );
  writeFileSync(join(dir, "extension.json"), JSON.stringify({ name: "misnamed", exec: "node", args: ["main.mjs"] }));
  const { code, report } = await doctor(box, [dir]);
  assert.equal(code, 1);
  const ext = report.extensions[0];
  assert.equal(ext.state, "failed");
  assert.match(ext.error, /hello name "other-name" does not match the manifest name "misnamed"/);
});
