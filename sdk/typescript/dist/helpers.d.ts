/**
 * Constructors for command responses, tool results and interceptor decisions.
 */
import type { ContentBlock, PanelContent, Response, ToolArgs, ToolResult } from "./types.js";
/** Submit `text` as a fresh user message; the agent runs a turn. */
export declare function prompt(text: string): Response;
/** Insert `text` into the editor at the cursor without submitting (TUI only). */
export declare function insert(text: string): Response;
/** Show `text` as a one-shot note: no model call, not in the transcript. */
export declare function display(text: string): Response;
/** Open an extension-owned panel (TUI only) with its first frame. */
export declare function openPanel(id: string, content?: PanelContent): Response;
/** The command was handled; the host changes nothing. */
export declare function noop(): Response;
/** Report a failure; the host shows `message` as an error line. */
export declare function error(message: string): Response;
/** A text block. */
export declare function text(value: string): ContentBlock;
/** An image block from base64 data. */
export declare function image(mimeType: string, base64: string): ContentBlock;
/** An image block from raw bytes. */
export declare function imageBytes(mimeType: string, bytes: Uint8Array): ContentBlock;
/** A successful result with one text block. */
export declare function textResult(value: string): ToolResult;
/** A failed result with one text block. */
export declare function errorResult(message: string): ToolResult;
/** A result from blocks, with options. */
export declare function toolResult(content: ContentBlock[] | string, options?: {
    isError?: boolean;
    activateTools?: string[];
}): ToolResult;
/** Let it through unchanged (same as returning nothing). */
export declare function allow(): Record<string, never>;
/**
 * Refuse: a tool call fails with `reason` (shown to the model), a turn or
 * an assistant message is stopped (`reason` shown to the user).
 */
export declare function block(reason?: string): {
    block: true;
    reason?: string;
};
/** Run the tool with these arguments instead (a plain object). */
export declare function rewrite(args: ToolArgs): {
    modifiedArgs: ToolArgs;
};
/** Show the user this text instead of the assistant's (the model keeps its original). */
export declare function replaceText(value: string): {
    replaceText: string;
};
