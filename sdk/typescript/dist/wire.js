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
export const EVENT_NAMES = [
    "session_start",
    "turn_start",
    "turn_end",
    "tool_call",
    "tool_confirmation_requested",
    "assistant_message",
];
export const INTERCEPT_NAMES = [
    "tool_call",
    "turn_start",
    "assistant_message",
    "before_agent_start",
];
/**
 * Serialises a frame as one protocol line, LF included. U+2028 and U+2029
 * are escaped so readers that treat them as line breaks cannot split a frame.
 */
export function encodeFrame(frame) {
    return JSON.stringify(frame).replace(/[\u2028\u2029]/g, (c) => c === "\u2028" ? "\\u2028" : "\\u2029") + "\n";
}
