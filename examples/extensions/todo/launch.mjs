#!/usr/bin/env node
// @ts-check
// Launcher: finds the @zot/ext SDK, then runs the extension (todo.mjs).
//
// In the zot repository the SDK is ../../../sdk/typescript, used directly.
// An installed copy ($ZOT_HOME/extensions/todo) needs the package next to it:
//   npm install --install-links --prefix "$ZOT_HOME/extensions/todo" <path to zot>/sdk/typescript

import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const inRepo = join(here, "..", "..", "..", "sdk", "typescript", "dist", "index.js");

async function loadSdk() {
  if (existsSync(inRepo)) return import(pathToFileURL(inRepo).href);
  try {
    return await import("@zot/ext");
  } catch (caught) {
    const err = /** @type {NodeJS.ErrnoException} */ (caught);
    if (err?.code === "ERR_MODULE_NOT_FOUND" && String(err.message).includes("@zot/ext")) {
      process.stderr.write(
        `todo: cannot find the @zot/ext SDK. Install it next to the extension:\n` +
          `  npm install --install-links --prefix ${JSON.stringify(here)} <path to zot>/sdk/typescript\n`,
      );
      process.exit(1);
    }
    throw err;
  }
}

const sdk = await loadSdk();
const { main } = await import("./todo.mjs");
await main(sdk);
