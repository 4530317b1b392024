// Compile-only: the public types as an extension author meets them.
// `tsc -p test/types` must pass; every @ts-expect-error must be an error.

import {
  block,
  display,
  error,
  Extension,
  imageBytes,
  openPanel,
  prompt,
  replaceText,
  rewrite,
  text,
  toolResult,
  type HostInfo,
  type PanelKeyEvent,
  type Response,
  type ToolResult,
  type wire,
} from "@zot/ext";

const ext = new Extension("typed", "1.0.0");

ext.command("hello", "say hi", async (args: string): Promise<Response> => prompt(`Greet ${args}`));
ext.command("plain", "returns a string", (args) => `you said ${args}`);
ext.command("nothing", "returns nothing", () => {});
ext.command("panel", "opens a panel", (_args, ctx) => openPanel(`p-${ctx.id}`, { title: "T", lines: ["a"], footer: "f" }));
ext.command("oops", "fails", () => error("nope"));
// @ts-expect-error a command handler cannot return a number
ext.command("bad", "returns a number", () => 42);

interface WeatherArgs {
  city: string;
}
ext.tool<WeatherArgs>(
  "weather",
  "Current weather.",
  { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  async ({ city }) => `${city.toUpperCase()}: sunny`,
);
ext.tool(
  "blocks",
  "Blocks.",
  { type: "object" },
  (): ToolResult => toolResult([text("a"), imageBytes("image/png", new Uint8Array([0]))], { activateTools: ["x"] }),
  { deferred: true },
);
// @ts-expect-error a schema is an object, not a string
ext.tool("bad", "bad", "{}", () => "");

ext.on("turn_start", (e) => {
  const step: number = e.step;
  void step;
});
ext.on("tool_call", (e) => {
  const name: string = e.toolName;
  void name;
  // @ts-expect-error tool_call events have no step
  void e.step;
});
ext.on("turn_end", (e) => void e.stop);
ext.on("custom_future_event", (e) => void e.event);

ext.interceptToolCall(({ toolName, args }) => {
  if (toolName === "bash" && String(args.command).includes("rm -rf")) return block("no");
  if (toolName === "bash") return rewrite({ ...args, command: "echo safe" });
  return undefined;
});
ext.interceptTurnStart((step) => (step > 10 ? block("too many steps") : {}));
ext.interceptAssistantMessage((t) => (t.includes("SECRET") ? replaceText("[redacted]") : undefined));
ext.beforeAgentStart((e) => `${e.systemPrompt}\nBe brief.`);
ext.beforeAgentStart(() => undefined);
// @ts-expect-error beforeAgentStart returns a string or nothing
ext.beforeAgentStart(() => 42);

const panel = ext.panel("main", {
  onKey: (event: PanelKeyEvent, p) => {
    if (event.key === "rune" && event.text === "q") p.close();
    else p.render({ lines: [event.key] });
  },
  onClose: () => {},
});
ext.command("show", "show the panel", () => panel.open({ title: "Main" }));
const open: boolean = panel.isOpen;
void open;

ext.onHello(async (host: HostInfo) => {
  const dir: string = host.dataDir;
  ext.command("where", "where am I", () => display(`${host.cwd} ${dir}`));
});
ext.onShutdown(() => {});
ext.notify("success", "done");
// @ts-expect-error not a level
ext.notify("loud", "done");
ext.clearNotes();
ext.submit("go on");
const cwd: string = ext.host.cwd;
void cwd;

const frame: wire.ExtFrame = { type: "notify", level: "info", message: "m" };
void frame;

await ext.run();
