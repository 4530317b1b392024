// Interceptors through the real zot and a mock model (`zot --json`).

import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, afterEach, it } from "node:test";

import { MockModel, systemPrompt, toolMessages } from "./helpers/mock-model.mjs";
import { cleanup, FIXTURES, sandbox } from "./helpers/proc.mjs";
import { validateFrameLogs } from "./helpers/schema.mjs";
import { zotJson } from "./helpers/zot.mjs";

const DIR = join(FIXTURES, "guard");
const models = [];

async function mock(script) {
  const model = await new MockModel(script).start();
  models.push(model);
  return model;
}

afterEach(async () => {
  for (const m of models.splice(0)) {
    await m.stop();
    assert.deepEqual(m.errors, [], "mock model errors");
  }
});
after(cleanup);

function messageText(event) {
  return event.content.filter((b) => b.type === "text").map((b) => b.text).join("");
}

it("tool_call: block and rewrite; a throwing interceptor allows; assistant text replaced", async () => {
  const box = sandbox();
  const frameDir = join(box.root, "frames");
  mkdirSync(join(box.project, "important"));
  writeFileSync(join(box.project, "important", "keep.txt"), "precious");
  const model = await mock([
    {
      toolCalls: [
        { id: "call_rm", name: "bash", args: { command: "rm -rf important" } },
        { id: "call_echo", name: "bash", args: { command: "echo original > out.txt" } },
        { id: "call_throw", name: "bash", args: { command: "echo THROW > thrown.txt" } },
      ],
    },
    { text: "The SECRET is safe." },
  ]);
  const { code, events, stderr } = await zotJson(box, ["--ext", DIR, ...model.args()], "clean up", {
    env: { ZOT_TS_FRAME_LOG: frameDir },
  });
  assert.equal(code, 0, `${stderr}\n${JSON.stringify(events)}`);

  // Blocked: the tool never ran and the model saw the reason.
  assert.equal(readFileSync(join(box.project, "important", "keep.txt"), "utf8"), "precious");
  const results = toolMessages(model.requests[1]);
  assert.match(results.call_rm, /refused: matches danger pattern "rm -rf"/);
  // Rewritten: the tool ran with the new args.
  assert.equal(readFileSync(join(box.project, "out.txt"), "utf8").trim(), "REWRITTEN");
  // The interceptor threw: fail-open, the original command ran.
  assert.equal(readFileSync(join(box.project, "thrown.txt"), "utf8").trim(), "THROW");
  const toolResults = Object.fromEntries(events.filter((e) => e.type === "tool_result").map((e) => [e.id, e]));
  assert.equal(toolResults.call_rm.is_error, true);
  assert.equal(toolResults.call_echo.is_error, false);
  assert.equal(toolResults.call_throw.is_error, false);
  // The tool_call events keep the original args.
  const echoCall = events.find((e) => e.type === "tool_call" && e.id === "call_echo");
  assert.equal(echoCall.args.command, "echo original > out.txt");

  // assistant_message: the user sees the replacement.
  const shown = events.filter((e) => e.type === "assistant_message").map(messageText);
  assert.ok(shown.includes("The [redacted] is safe."), JSON.stringify(shown));
  assert.ok(!shown.some((t) => t.includes("SECRET")));

  // No replacement configured: the default system prompt went out.
  assert.ok(systemPrompt(model.requests[0]).length > 0);
  assert.doesNotMatch(systemPrompt(model.requests[0]), /REPLACED/);

  const { frames } = validateFrameLogs(frameDir);
  const replies = frames.guard.filter((f) => f.type === "event_intercept_response");
  assert.ok(replies.some((r) => r.block === true && r.reason?.includes("rm -rf")));
  assert.ok(replies.some((r) => r.modified_args?.command === "echo REWRITTEN > out.txt"));
  assert.ok(replies.some((r) => r.replace_text === "The [redacted] is safe."));
});

it("before_agent_start replaces the system prompt in the request", async () => {
  const box = sandbox();
  const frameDir = join(box.root, "frames");
  const model = await mock([{ text: "ok" }]);
  const { code, stderr } = await zotJson(box, ["--ext", DIR, ...model.args()], "hi", {
    env: { GUARD_SYSTEM_PROMPT: "REPLACED SYSTEM PROMPT.", ZOT_TS_FRAME_LOG: frameDir },
  });
  assert.equal(code, 0, stderr);
  const prompt = systemPrompt(model.requests[0]);
  assert.match(prompt, /^REPLACED SYSTEM PROMPT\. \[was \d+ chars; openai\/gpt-4\.1\]$/);
  assert.notEqual(prompt.match(/was (\d+) chars/)[1], "0", "the handler saw the assembled prompt");
  const { frames } = validateFrameLogs(frameDir);
  assert.ok(frames.guard.some((f) => f.type === "event_intercept_response" && f.system_prompt === prompt));
});

it("turn_start: a block stops the turn before the model is called", async () => {
  const box = sandbox();
  const model = await mock([]);
  const { code, events, stderr } = await zotJson(box, ["--ext", DIR, ...model.args()], "hi", {
    env: { GUARD_BLOCK_TURNS: "outside business hours" },
  });
  assert.equal(code, 0, `${stderr}\n${JSON.stringify(events)}`);
  assert.equal(model.requests.length, 0, "the model must not be called");
  const end = events.find((e) => e.type === "turn_end");
  assert.equal(end.stop, "error");
  // zot adds who blocked it.
  assert.match(end.error, /^outside business hours \(step 1\)/);
});

it("assistant_message: a block hides the message; a throwing interceptor shows it unchanged", async () => {
  const box = sandbox();
  const model = await mock([{ text: "FORBIDDEN knowledge" }]);
  const blocked = await zotJson(box, ["--ext", DIR, ...model.args()], "tell me");
  assert.equal(blocked.code, 0, blocked.stderr);
  assert.equal(blocked.events.filter((e) => e.type === "assistant_message").length, 0);
  const note = blocked.events.find((e) => e.type === "assistant_blocked");
  assert.deepEqual(note, { type: "assistant_blocked", extension: "guard", reason: "hidden by guard" });

  const model2 = await mock([{ text: "please THROW" }]);
  const thrown = await zotJson(box, ["--ext", DIR, ...model2.args()], "tell me");
  assert.equal(thrown.code, 0, thrown.stderr);
  const shown = thrown.events.filter((e) => e.type === "assistant_message").map(messageText);
  assert.deepEqual(shown, ["please THROW"]);
  assert.ok(!existsSync(join(box.project, "out.txt")));
});
