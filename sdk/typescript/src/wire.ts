/**
 * The zot extension protocol on the wire: one JSON object per line, `type`
 * is the discriminator. Field names are the wire's snake_case; the
 * idiomatic camelCase API lives in `extension.ts`.
 *
 * These types mirror `crates/protocol/src/zot.rs` and the spec
 * (`zot-extensions.txt`, "Wire format").
 */

/** The protocol version this SDK speaks. */
export const PROTOCOL_VERSION = 1;

export type NotifyLevel = "info" | "success" | "warn" | "error";

/** Normalised key names sent in `panel_key` while a panel is focused. */
export type KeyName =
  | "up"
  | "down"
  | "left"
  | "right"
  | "enter"
  | "esc"
  | "tab"
  | "pageup"
  | "pagedown"
  | "home"
  | "end"
  | "backspace"
  | "delete"
  | "rune";

/** Lifecycle events an extension may observe. */
export type EventName =
  | "session_start"
  | "turn_start"
  | "turn_end"
  | "tool_call"
  | "tool_confirmation_requested"
  | "assistant_message";

/** Events an extension may intercept. */
export type InterceptName = "tool_call" | "turn_start" | "assistant_message" | "before_agent_start";

export const EVENT_NAMES: readonly EventName[] = [
  "session_start",
  "turn_start",
  "turn_end",
  "tool_call",
  "tool_confirmation_requested",
  "assistant_message",
];

export const INTERCEPT_NAMES: readonly InterceptName[] = [
  "tool_call",
  "turn_start",
  "assistant_message",
  "before_agent_start",
];

export type CommandAction = "prompt" | "insert" | "display" | "open_panel" | "noop";

// ------------------------------------------------------------ extension → host

export interface WireHello {
  type: "hello";
  name: string;
  version?: string;
  capabilities?: string[];
}

export interface WireRegisterCommand {
  type: "register_command";
  name: string;
  description?: string;
}

export interface WireRegisterTool {
  type: "register_tool";
  name: string;
  description?: string;
  schema: Record<string, unknown>;
  deferred?: boolean;
}

export interface WireReady {
  type: "ready";
}

export type WireContentBlock =
  | { type: "text"; text: string }
  | { type: "image"; mime_type: string; data: string };

export interface WireToolResult {
  type: "tool_result";
  id: string;
  content: WireContentBlock[];
  is_error?: boolean;
  activate_tools?: string[];
}

export interface WireSubscribe {
  type: "subscribe";
  events?: string[];
  intercept?: string[];
}

export interface WireInterceptResponse {
  type: "event_intercept_response";
  id: string;
  block?: boolean;
  reason?: string;
  modified_args?: Record<string, unknown>;
  replace_text?: string;
  system_prompt?: string;
}

export interface WirePanelContent {
  id: string;
  title?: string;
  lines?: string[];
  footer?: string;
}

export interface WireCommandResponse {
  type: "command_response";
  id: string;
  action: CommandAction;
  prompt?: string;
  insert?: string;
  display?: string;
  open_panel?: WirePanelContent;
  error?: string;
}

export interface WireSubmit {
  type: "submit";
  text: string;
}

export interface WirePanelRender {
  type: "panel_render";
  panel_id: string;
  title?: string;
  lines?: string[];
  footer?: string;
}

export interface WirePanelClose {
  type: "panel_close";
  panel_id: string;
}

export interface WireNotify {
  type: "notify";
  level: NotifyLevel;
  message: string;
}

export interface WireClearNotes {
  type: "clear_notes";
}

export interface WireShutdownAck {
  type: "shutdown_ack";
}

/** Every frame an extension sends. */
export type ExtFrame =
  | WireHello
  | WireRegisterCommand
  | WireRegisterTool
  | WireReady
  | WireToolResult
  | WireSubscribe
  | WireInterceptResponse
  | WireCommandResponse
  | WireSubmit
  | WirePanelRender
  | WirePanelClose
  | WireNotify
  | WireClearNotes
  | WireShutdownAck;

// ------------------------------------------------------------ host → extension

export interface WireHelloAck {
  type: "hello_ack";
  protocol_version: number;
  zot_version: string;
  provider: string;
  model: string;
  cwd: string;
  extension_dir: string;
  data_dir: string;
}

export interface WireCommandInvoked {
  type: "command_invoked";
  id: string;
  name: string;
  args?: string;
}

export interface WireToolCall {
  type: "tool_call";
  id: string;
  name: string;
  args: unknown;
}

export interface WireEvent {
  type: "event";
  event: string;
  [field: string]: unknown;
}

export interface WireEventIntercept {
  type: "event_intercept";
  id: string;
  event: string;
  [field: string]: unknown;
}

export interface WirePanelKey {
  type: "panel_key";
  panel_id: string;
  key: string;
  text?: string;
}

export interface WireHostPanelClose {
  type: "panel_close";
  panel_id: string;
}

export interface WireShutdown {
  type: "shutdown";
}

/** Every frame the host sends. */
export type HostFrame =
  | WireHelloAck
  | WireCommandInvoked
  | WireToolCall
  | WireEvent
  | WireEventIntercept
  | WirePanelKey
  | WireHostPanelClose
  | WireShutdown;

/**
 * Serialises a frame as one protocol line, LF included. U+2028 and U+2029
 * are escaped so readers that treat them as line breaks cannot split a frame.
 */
export function encodeFrame(frame: ExtFrame): string {
  return JSON.stringify(frame).replace(/[\u2028\u2029]/g, (c) =>
    c === "\u2028" ? "\\u2028" : "\\u2029",
  ) + "\n";
}
