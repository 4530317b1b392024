/**
 * Constructors for command responses, tool results and interceptor decisions.
 */

import type { ContentBlock, PanelContent, Response, ToolArgs, ToolResult } from "./types.js";

// ------------------------------------------------------------------ command responses

/** Submit `text` as a fresh user message; the agent runs a turn. */
export function prompt(text: string): Response {
  return { action: "prompt", prompt: text };
}

/** Insert `text` into the editor at the cursor without submitting (TUI only). */
export function insert(text: string): Response {
  return { action: "insert", insert: text };
}

/** Show `text` as a one-shot note: no model call, not in the transcript. */
export function display(text: string): Response {
  return { action: "display", display: text };
}

/** Open an extension-owned panel (TUI only) with its first frame. */
export function openPanel(id: string, content: PanelContent = {}): Response {
  return { action: "open_panel", openPanel: { id, ...content } };
}

/** The command was handled; the host changes nothing. */
export function noop(): Response {
  return { action: "noop" };
}

/** Report a failure; the host shows `message` as an error line. */
export function error(message: string): Response {
  return { action: "noop", error: message };
}

// ------------------------------------------------------------------ tool results

/** A text block. */
export function text(value: string): ContentBlock {
  return { type: "text", text: value };
}

/** An image block from base64 data. */
export function image(mimeType: string, base64: string): ContentBlock {
  return { type: "image", mimeType, data: base64 };
}

/** An image block from raw bytes. */
export function imageBytes(mimeType: string, bytes: Uint8Array): ContentBlock {
  return { type: "image", mimeType, data: Buffer.from(bytes).toString("base64") };
}

/** A successful result with one text block. */
export function textResult(value: string): ToolResult {
  return { content: [text(value)] };
}

/** A failed result with one text block. */
export function errorResult(message: string): ToolResult {
  return { content: [text(message)], isError: true };
}

/** A result from blocks, with options. */
export function toolResult(
  content: ContentBlock[] | string,
  options: { isError?: boolean; activateTools?: string[] } = {},
): ToolResult {
  return { content, ...options };
}

// ------------------------------------------------------------------ interceptor decisions

/** Let it through unchanged (same as returning nothing). */
export function allow(): Record<string, never> {
  return {};
}

/**
 * Refuse: a tool call fails with `reason` (shown to the model), a turn or
 * an assistant message is stopped (`reason` shown to the user).
 */
export function block(reason?: string): { block: true; reason?: string } {
  return reason === undefined ? { block: true } : { block: true, reason };
}

/** Run the tool with these arguments instead (a plain object). */
export function rewrite(args: ToolArgs): { modifiedArgs: ToolArgs } {
  return { modifiedArgs: args };
}

/** Show the user this text instead of the assistant's (the model keeps its original). */
export function replaceText(value: string): { replaceText: string } {
  return { replaceText: value };
}
