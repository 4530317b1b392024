// Tools through the real zot and a mock model (`zot --json`): the schema in
// the request, the result in the next request, images, error results,
// throwing handlers, and deferred activation.

import assert from "node:assert/strict";
import { join } from "node:path";
import { after, afterEach, it } from "node:test";

import { MockModel, requestTools, toolMessages } from "./helpers/mock-model.mjs";
import { cleanup, FIXTURES, sandbox } from "./helpers/proc.mjs";
import { validateFrameLogs } from "./helpers/schema.mjs";
import { zotJson } from "./helpers/zot.mjs";

const DIR = join(FIXTURES, "tools");
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

it("round trip: schema in the request, results (text, image, error, throw) in the next", async () => {
  const box = sandbox();
  const frameDir = join(box.root, "frames");
  const model = await mock([
    {
      text: "Let me check.",
      toolCalls: [
        { id: "call_weather", name: "weather", args: { city: "Berlin" } },
        { id: "call_pixel", name: "pixel", args: {} },
        { id: "call_fails", name: "fails", args: {} },
        { id: "call_explode", name: "explode", args: {} },
      ],
    },
    { text: "Berlin is foggy." },
  ]);
  const { code, events, stderr } = await zotJson(box, ["--ext", DIR, ...model.args()], "weather in Berlin?", {
    env: { ZOT_TS_FRAME_LOG: frameDir },
  });
  assert.equal(code, 0, `${stderr}\n${JSON.stringify(events)}`);
  assert.equal(model.requests.length, 2);

  // The first request advertises the tools with their schemas; not the deferred one.
  const tools = requestTools(model.requests[0]);
  assert.deepEqual(tools.weather, {
    name: "weather",
    description: "Current weather for a city.",
    parameters: {
      type: "object",
      properties: { city: { type: "string", description: "city name" } },
      required: ["city"],
    },
  });
  for (const name of ["pixel", "fails", "explode", "loader"]) assert.ok(tools[name], `${name} not advertised`);
  assert.equal(tools.secret, undefined, "a deferred tool must not be advertised before activation");

  // The second request carries every result.
  const second = model.requests[1];
  const results = toolMessages(second);
  assert.equal(results.call_weather, "Berlin: 16°C, fog");
  assert.equal(results.call_pixel, "a pixel");
  assert.match(results.call_fails, /nope, not today/);
  assert.match(results.call_explode, /boom in tool/);
  // The image travels as an image part after the tool messages.
  const imageParts = second.messages
    .filter((m) => m.role === "user" && Array.isArray(m.content))
    .flatMap((m) => m.content)
    .filter((p) => p.type === "image_url");
  assert.equal(imageParts.length, 1, JSON.stringify(second.messages));
  assert.match(imageParts[0].image_url.url, /^data:image\/png;base64,iVBORw0KGgo/);

  // zot's own view: is_error follows the result.
  const byId = Object.fromEntries(events.filter((e) => e.type === "tool_result").map((e) => [e.id, e]));
  assert.equal(byId.call_weather.is_error, false);
  assert.equal(byId.call_pixel.is_error, false);
  assert.equal(byId.call_fails.is_error, true);
  assert.equal(byId.call_explode.is_error, true);
  assert.ok(events.some((e) => e.type === "done"));

  const { frames } = validateFrameLogs(frameDir);
  const sent = frames.tools.filter((f) => f.type === "tool_result");
  assert.equal(sent.length, 4);
  assert.deepEqual(
    sent.find((f) => f.content[0].text === "boom in tool"),
    { type: "tool_result", id: sent.find((f) => f.content[0].text === "boom in tool").id, content: [{ type: "text", text: "boom in tool" }], is_error: true },
  );
});

it("deferred tools appear after a result activates them", async () => {
  const box = sandbox();
  const frameDir = join(box.root, "frames");
  const model = await mock([
    { toolCalls: [{ id: "call_loader", name: "loader", args: {} }] },
    { toolCalls: [{ id: "call_secret", name: "secret", args: { x: 21 } }] },
    { text: "The secret is 42." },
  ]);
  const { code, events, stderr } = await zotJson(box, ["--ext", DIR, ...model.args()], "use the secret tool", {
    env: { ZOT_TS_FRAME_LOG: frameDir },
  });
  assert.equal(code, 0, `${stderr}\n${JSON.stringify(events)}`);
  assert.equal(model.requests.length, 3);
  assert.equal(requestTools(model.requests[0]).secret, undefined);
  assert.deepEqual(requestTools(model.requests[1]).secret?.parameters, {
    type: "object",
    properties: { x: { type: "integer" } },
    required: ["x"],
  });
  assert.equal(toolMessages(model.requests[1]).call_loader, "secret tool enabled");
  assert.equal(toolMessages(model.requests[2]).call_secret, "secret says 42");
  const { frames } = validateFrameLogs(frameDir);
  const activation = frames.tools.find((f) => f.type === "tool_result" && f.activate_tools);
  assert.deepEqual(activation.activate_tools, ["secret"]);
});
