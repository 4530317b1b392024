/**
 * Constructors for command responses, tool results and interceptor decisions.
 */
// ------------------------------------------------------------------ command responses
/** Submit `text` as a fresh user message; the agent runs a turn. */
export function prompt(text) {
    return { action: "prompt", prompt: text };
}
/** Insert `text` into the editor at the cursor without submitting (TUI only). */
export function insert(text) {
    return { action: "insert", insert: text };
}
/** Show `text` as a one-shot note: no model call, not in the transcript. */
export function display(text) {
    return { action: "display", display: text };
}
/** Open an extension-owned panel (TUI only) with its first frame. */
export function openPanel(id, content = {}) {
    return { action: "open_panel", openPanel: { id, ...content } };
}
/** The command was handled; the host changes nothing. */
export function noop() {
    return { action: "noop" };
}
/** Report a failure; the host shows `message` as an error line. */
export function error(message) {
    return { action: "noop", error: message };
}
// ------------------------------------------------------------------ tool results
/** A text block. */
export function text(value) {
    return { type: "text", text: value };
}
/** An image block from base64 data. */
export function image(mimeType, base64) {
    return { type: "image", mimeType, data: base64 };
}
/** An image block from raw bytes. */
export function imageBytes(mimeType, bytes) {
    return { type: "image", mimeType, data: Buffer.from(bytes).toString("base64") };
}
/** A successful result with one text block. */
export function textResult(value) {
    return { content: [text(value)] };
}
/** A failed result with one text block. */
export function errorResult(message) {
    return { content: [text(message)], isError: true };
}
/** A result from blocks, with options. */
export function toolResult(content, options = {}) {
    return { content, ...options };
}
// ------------------------------------------------------------------ interceptor decisions
/** Let it through unchanged (same as returning nothing). */
export function allow() {
    return {};
}
/**
 * Refuse: a tool call fails with `reason` (shown to the model), a turn or
 * an assistant message is stopped (`reason` shown to the user).
 */
export function block(reason) {
    return reason === undefined ? { block: true } : { block: true, reason };
}
/** Run the tool with these arguments instead (a plain object). */
export function rewrite(args) {
    return { modifiedArgs: args };
}
/** Show the user this text instead of the assistant's (the model keeps its original). */
export function replaceText(value) {
    return { replaceText: value };
}
