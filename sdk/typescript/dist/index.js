/**
 * `@zot/ext`: write zot extensions in TypeScript or JavaScript.
 *
 * ```ts
 * import { Extension, display } from "@zot/ext";
 *
 * const ext = new Extension("hello", "1.0.0");
 * ext.command("hello", "say hi", async (args) => display(`hi ${args || "there"}`));
 * await ext.run();
 * ```
 */
export { Extension, Panel } from "./extension.js";
export { allow, block, display, error, errorResult, image, imageBytes, insert, noop, openPanel, prompt, replaceText, rewrite, text, textResult, toolResult, } from "./helpers.js";
export { LineSplitter } from "./lines.js";
export { encodeFrame, EVENT_NAMES, INTERCEPT_NAMES, PROTOCOL_VERSION } from "./wire.js";
