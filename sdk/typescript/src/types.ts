/**
 * The idiomatic (camelCase) types of the SDK's public API.
 */

import type { CommandAction, EventName, KeyName } from "./wire.js";

export type { CommandAction, EventName, InterceptName, KeyName, NotifyLevel } from "./wire.js";

/** Something that may be returned directly or as a promise. */
export type Awaitable<T> = T | Promise<T>;

/** What the host told us in `hello_ack`. Empty strings (and version 0) until then. */
export interface HostInfo {
  protocolVersion: number;
  zotVersion: string;
  provider: string;
  model: string;
  /** The user's project directory (not this process's working directory). */
  cwd: string;
  /** The extension's own directory. */
  extensionDir: string;
  /** Where the extension should persist its state. */
  dataDir: string;
}

// ------------------------------------------------------------------ commands

/** What a panel shows. */
export interface PanelContent {
  title?: string;
  lines?: string[];
  footer?: string;
}

/** A panel to open: its id plus its first frame. */
export interface PanelSpec extends PanelContent {
  id: string;
}

/** The answer to a slash command. Build it with `prompt`, `display`, … */
export interface Response {
  action: CommandAction;
  prompt?: string;
  insert?: string;
  display?: string;
  openPanel?: PanelSpec;
  /** When non-empty, the host shows it as an error (and skips the action). */
  error?: string;
}

/**
 * A command handler may return a `Response`, a string (shown with
 * `display`), or nothing (`noop`).
 */
export type CommandReturn = Response | string | void | undefined;

export interface CommandContext {
  /** The correlation id of this invocation. */
  id: string;
  /** The command name as registered. */
  name: string;
}

export type CommandHandler = (args: string, ctx: CommandContext) => Awaitable<CommandReturn>;

// ------------------------------------------------------------------ tools

export type ContentBlock =
  | { type: "text"; text: string }
  | { type: "image"; mimeType: string; data: string };

export interface ToolResult {
  /** Blocks, or a string for a single text block. */
  content: ContentBlock[] | string;
  /** Marks the call as failed. */
  isError?: boolean;
  /** Registered deferred tools that become available after this result. */
  activateTools?: string[];
}

/** A tool handler may return a `ToolResult`, a string (one text block), or blocks. */
export type ToolReturn = ToolResult | string | ContentBlock[];

export interface ToolContext {
  /** The correlation id of this call. */
  id: string;
  /** The tool name as registered. */
  name: string;
}

/** Tool arguments as the model sent them (validate before use). */
export type ToolArgs = Record<string, any>;

export type ToolHandler<A = ToolArgs> = (args: A, ctx: ToolContext) => Awaitable<ToolReturn>;

export interface ToolOptions {
  /** Register without advertising; a tool result's `activateTools` makes it visible. */
  deferred?: boolean;
}

/** A JSON Schema object describing a tool's arguments. */
export type JsonSchema = Record<string, unknown>;

// ------------------------------------------------------------------ events

export interface SessionStartEvent {
  event: "session_start";
}
export interface TurnStartEvent {
  event: "turn_start";
  step: number;
}
export interface TurnEndEvent {
  event: "turn_end";
  stop: string;
  error?: string;
}
export interface ToolCallEvent {
  event: "tool_call";
  toolId: string;
  toolName: string;
  toolArgs: ToolArgs;
}
export interface ToolConfirmationRequestedEvent {
  event: "tool_confirmation_requested";
  toolId: string;
  toolName: string;
  toolPreview: string;
}
export interface AssistantMessageEvent {
  event: "assistant_message";
  text: string;
}

/** Each event name and the object its handlers receive. */
export interface EventMap {
  session_start: SessionStartEvent;
  turn_start: TurnStartEvent;
  turn_end: TurnEndEvent;
  tool_call: ToolCallEvent;
  tool_confirmation_requested: ToolConfirmationRequestedEvent;
  assistant_message: AssistantMessageEvent;
}

/** Any lifecycle event; fields are the wire's, in camelCase. */
export interface GenericEvent {
  event: string;
  [field: string]: unknown;
}

export type LifecycleEvent = EventMap[EventName];

export type EventHandler<E = GenericEvent> = (event: E) => Awaitable<void>;

// ------------------------------------------------------------------ interceptors

export interface ToolCallInfo {
  toolId: string;
  toolName: string;
  /** The arguments as they stand (after earlier interceptors' rewrites). */
  args: ToolArgs;
}

/** Allow (`{}` or nothing), `block(reason)`, or `rewrite(args)`. */
export interface ToolCallDecision {
  block?: boolean;
  reason?: string;
  /** New arguments for the tool; must be a plain object. */
  modifiedArgs?: ToolArgs;
}

/** Allow (`{}` or nothing) or `block(reason)`. */
export interface TurnStartDecision {
  block?: boolean;
  reason?: string;
}

/** Allow (`{}` or nothing), `block(reason)`, or `replaceText(text)`. */
export interface AssistantMessageDecision {
  block?: boolean;
  reason?: string;
  /** Replaces the user-visible text (the model keeps its original). */
  replaceText?: string;
}

export interface BeforeAgentStartEvent {
  sessionId: string;
  agentRunId: string;
  cwd: string;
  provider: string;
  model: string;
  /** The complete current system prompt. */
  systemPrompt: string;
}

export type ToolCallInterceptor = (call: ToolCallInfo) => Awaitable<ToolCallDecision | void | undefined>;
export type TurnStartInterceptor = (step: number) => Awaitable<TurnStartDecision | void | undefined>;
export type AssistantMessageInterceptor = (
  text: string,
) => Awaitable<AssistantMessageDecision | void | undefined>;
/** Returns the complete replacement system prompt, or nothing to keep it ("" removes it). */
export type BeforeAgentStartInterceptor = (
  event: BeforeAgentStartEvent,
) => Awaitable<string | void | undefined>;

// ------------------------------------------------------------------ panels

export interface PanelKeyEvent {
  panelId: string;
  key: KeyName;
  /** The typed character when `key` is "rune". */
  text?: string;
}
