// @ts-check
// todo: a persistent todo list for zot, written with the @zot/ext SDK.
//
//   /todo            opens the panel (TUI): ↑/↓ move, a add, x toggle,
//                    d delete, c clear done, esc closes
//   /todo <text>     adds an item from the prompt
//   todo_add         a tool the model can call to add items
//   todo_list        a tool the model can call to read the list
//
// State is `todos.json` in the data directory zot passes in hello_ack.

import { randomUUID } from "node:crypto";
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const PANEL = "todo-main";
const MAX_TEXT = 200;

/**
 * @typedef {{ id: string, text: string, done: boolean, created: string }} Item
 */

/** The list and its file. */
class Store {
  /** @param {(...args: unknown[]) => void} log */
  constructor(log) {
    this.log = log;
    this.file = "";
    /** @type {Item[]} */
    this.items = [];
  }

  /** @param {string} file */
  open(file) {
    this.file = file;
    let text;
    try {
      text = readFileSync(file, "utf8");
    } catch (err) {
      if (/** @type {NodeJS.ErrnoException} */ (err).code === "ENOENT") return;
      throw err;
    }
    try {
      const data = JSON.parse(text);
      this.items = (Array.isArray(data.items) ? data.items : [])
        .filter((/** @type {any} */ i) => i && typeof i.text === "string")
        .map((/** @type {any} */ i) => ({
          id: String(i.id ?? randomUUID()),
          text: i.text,
          done: i.done === true,
          created: String(i.created ?? ""),
        }));
    } catch (err) {
      // Keep the unreadable file for the user; start afresh.
      const aside = `${file}.corrupt-${Date.now()}`;
      renameSync(file, aside);
      this.log(`${file} is not valid JSON (${err}); moved it to ${aside}`);
    }
  }

  save() {
    const tmp = `${this.file}.tmp`;
    writeFileSync(tmp, JSON.stringify({ version: 1, items: this.items }, null, 2) + "\n");
    renameSync(tmp, this.file);
  }

  /** @param {string} text */
  add(text) {
    /** @type {Item} */
    const item = { id: randomUUID(), text, done: false, created: new Date().toISOString() };
    this.items.push(item);
    this.save();
    return item;
  }

  get openCount() {
    return this.items.filter((i) => !i.done).length;
  }
}

/** One line, trimmed, at most MAX_TEXT characters; "" if nothing is left. @param {unknown} text */
function clean(text) {
  const line = String(text ?? "").replace(/\s+/g, " ").trim();
  return [...line].slice(0, MAX_TEXT).join("");
}

/** @param {typeof import("@zot/ext")} sdk */
export async function main(sdk) {
  const { Extension, display, error, errorResult } = sdk;
  const ext = new Extension("todo", "1.0.0");
  const store = new Store((...args) => ext.log(...args));
  const view = { cursor: 0, adding: false, draft: "" };

  /** The panel's current frame. @returns {import("@zot/ext").PanelContent} */
  function frame() {
    view.cursor = Math.max(0, Math.min(view.cursor, store.items.length - 1));
    const lines = store.items.map((item, i) => {
      const pointer = !view.adding && i === view.cursor ? "›" : " ";
      return `${pointer} ${item.done ? "✓" : "□"} ${item.text}`;
    });
    if (lines.length === 0 && !view.adding) lines.push("  nothing to do; press a to add a todo");
    if (view.adding) lines.push(`+ ${view.draft}▏`);
    const done = store.items.length - store.openCount;
    return {
      title: `Todos (${store.openCount} open, ${done} done)`,
      lines,
      footer: view.adding
        ? "type the todo · enter save · backspace delete · tab cancel"
        : "↑/↓ move · a add · x toggle · d delete · c clear done · esc close",
    };
  }

  const panel = ext.panel(PANEL, {
    onKey({ key, text }, p) {
      if (view.adding) {
        if (key === "rune" && text) view.draft += text;
        else if (key === "backspace") view.draft = [...view.draft].slice(0, -1).join("");
        else if (key === "enter") {
          const value = clean(view.draft);
          if (value) {
            store.add(value);
            view.cursor = store.items.length - 1;
          }
          view.adding = false;
          view.draft = "";
        } else if (key === "tab" || key === "esc") {
          view.adding = false;
          view.draft = "";
        }
        p.render(frame());
        return;
      }
      const item = store.items[view.cursor];
      const rune = key === "rune" ? text : undefined;
      if (key === "up" || rune === "k") view.cursor -= 1;
      else if (key === "down" || rune === "j") view.cursor += 1;
      else if (key === "home" || key === "pageup") view.cursor = 0;
      else if (key === "end" || key === "pagedown") view.cursor = store.items.length - 1;
      else if (rune === "a") {
        view.adding = true;
        view.draft = "";
      } else if ((rune === "x" || rune === " " || key === "enter") && item) {
        item.done = !item.done;
        store.save();
      } else if ((rune === "d" || key === "delete") && item) {
        store.items.splice(view.cursor, 1);
        store.save();
      } else if (rune === "c") {
        store.items = store.items.filter((i) => !i.done);
        store.save();
      } else return;
      p.render(frame());
    },
    onClose() {
      view.adding = false;
      view.draft = "";
    },
  });

  ext.onHello((host) => store.open(join(host.dataDir, "todos.json")));

  ext.command("todo", "open your todo list; /todo <text> adds an item", (args) => {
    const value = clean(args);
    if (value) {
      store.add(value);
      panel.render(frame());
      return display(`added "${value}" (${store.openCount} open)`);
    }
    if (args.trim() !== "") return error("a todo needs some text");
    view.adding = false;
    return panel.open(frame());
  });

  ext.tool(
    "todo_add",
    "Add an item to the user's todo list (shown in their /todo panel).",
    {
      type: "object",
      properties: { text: { type: "string", description: "the todo, one short line" } },
      required: ["text"],
    },
    (args) => {
      const value = clean(args.text);
      if (!value) return errorResult("todo_add needs a non-empty \"text\"");
      store.add(value);
      panel.render(frame());
      return `Added "${value}" to the todo list (${store.openCount} open).`;
    },
  );

  ext.tool(
    "todo_list",
    "Read the user's todo list.",
    { type: "object", properties: {} },
    () =>
      store.items.length === 0
        ? "The todo list is empty."
        : store.items.map((i) => `- [${i.done ? "x" : " "}] ${i.text}`).join("\n"),
  );

  await ext.run();
}
