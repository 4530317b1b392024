// Lifecycle events through the real zot (`zot rpc` + mock model): the
// observer fixture records what its handlers receive.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, it } from "node:test";

import { MockModel } from "./helpers/mock-model.mjs";
import { cleanup, FIXTURES, jsonLines, sandbox } from "./helpers/proc.mjs";
import { validateFrameLogs } from "./helpers/schema.mjs";
import { Rpc } from "./helpers/zot.mjs";

after(cleanup);

it("handlers get every subscribed event, camelCased, in order", async () => {
  const box = sandbox();
  const log = join(box.root, "events.jsonl");
  const frameDir = join(box.root, "frames");
  const model = await new MockModel([
    { text: "Reading.", toolCalls: [{ id: "call_read", name: "read", args: { path: "a.txt" } }] },
    { text: "All done." },
  ]).start();
  try {
    const { writeFileSync } = await import("node:fs");
    writeFileSync(join(box.project, "a.txt"), "hello\n");
    const rpc = new Rpc(box, ["--ext", join(FIXTURES, "observer"), ...model.args()], {
      OBSERVER_LOG: log,
      ZOT_TS_FRAME_LOG: frameDir,
    });
    const events = await rpc.prompt("read a.txt");
    assert.ok(events.some((e) => e.type === "tool_result" && e.id === "call_read" && !e.is_error), rpc.dump());
    // Shutdown waits for queued events, so the log is complete after exit.
    const exit = await rpc.close();
    assert.equal(exit.code, 0, rpc.dump());

    const seen = jsonLines(readFileSync(log, "utf8"));
    const names = seen.map((e) => e.event);
    assert.equal(names[0], "session_start", names.join(" "));
    assert.deepEqual(seen[0], { event: "session_start" });
    const turnStarts = seen.filter((e) => e.event === "turn_start");
    assert.deepEqual(turnStarts, [
      { event: "turn_start", step: 1 },
      { event: "turn_start", step: 2 },
    ]);
    const toolCall = seen.find((e) => e.event === "tool_call");
    assert.deepEqual(toolCall, { event: "tool_call", toolId: "call_read", toolName: "read", toolArgs: { path: "a.txt" } });
    const messages = seen.filter((e) => e.event === "assistant_message").map((e) => e.text);
    assert.deepEqual(messages, ["Reading.", "All done."]);
    const ends = seen.filter((e) => e.event === "turn_end");
    assert.equal(ends.length, 2);
    assert.equal(ends[0].stop, "tool_use");
    assert.equal(ends[1].stop, "end_turn");
    // Order as sent: turn 1 (start … tool_call … end) before turn 2.
    const at = (pred) => seen.findIndex(pred);
    assert.ok(at((e) => e.event === "turn_start" && e.step === 1) < at((e) => e.event === "tool_call"));
    assert.ok(at((e) => e.event === "tool_call") < at((e) => e.event === "turn_start" && e.step === 2));
    assert.ok(at((e) => e === ends[0]) < at((e) => e.event === "turn_start" && e.step === 2));
    assert.equal(names.at(-1), "turn_end", names.join(" "));

    // The handler that threw on the first turn_start was logged, nothing else broke.
    const extLog = readFileSync(join(box.home, "logs", "ext-observer.log"), "utf8");
    assert.match(extLog, /turn_start handler failed: Error: observer handler exploded/);

    const { frames } = validateFrameLogs(frameDir);
    assert.deepEqual(frames.observer.find((f) => f.type === "subscribe"), {
      type: "subscribe",
      events: ["session_start", "turn_start", "turn_end", "tool_call", "assistant_message"],
    });
  } finally {
    await model.stop();
  }
});
