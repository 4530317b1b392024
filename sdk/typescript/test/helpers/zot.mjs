// Driving the real zot binary: `zot rpc` sessions, `zot --json` runs and
// `zot ext …` subcommands, always with a sandboxed ZOT_HOME and project.

import { spawn } from "node:child_process";

import { jsonLines, run, track, withTimeout, zotBin, zotEnv } from "./proc.mjs";

/** `zot <args>` in the sandbox's project dir. */
export function zot(box, args, { env = {}, input, timeout = 30000 } = {}) {
  return run(zotBin(), args, { cwd: box.project, env: zotEnv(box, env), input, timeout });
}

/** `zot --json <args> <prompt>`: resolves `{ code, events, stderr }`. */
export async function zotJson(box, args, promptText, opts = {}) {
  const result = await zot(box, ["--json", ...args, promptText], opts);
  let events;
  try {
    events = jsonLines(result.stdout);
  } catch (err) {
    throw new Error(`${err.message}\nstderr:\n${result.stderr}`);
  }
  return { ...result, events };
}

/** `zot ext doctor --json` for these extension dirs. */
export async function doctor(box, dirs, opts = {}) {
  const args = ["ext", "doctor", "--json", ...dirs.flatMap((d) => ["--ext", d])];
  const result = await zot(box, args, opts);
  try {
    return { ...result, report: JSON.parse(result.stdout) };
  } catch (err) {
    throw new Error(`doctor printed no JSON (${err.message})\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`);
  }
}

/** A running `zot rpc`. */
export class Rpc {
  constructor(box, args, env = {}) {
    this.events = [];
    this.stderr = "";
    this.waiters = [];
    this.nextId = 1;
    this.child = track(
      spawn(zotBin(), ["rpc", ...args], {
        cwd: box.project,
        env: zotEnv(box, env),
        stdio: ["pipe", "pipe", "pipe"],
        detached: true,
      }),
    );
    this.exited = new Promise((resolve) => this.child.on("exit", (code, signal) => resolve({ code, signal })));
    let buffer = "";
    this.child.stdout.setEncoding("utf8").on("data", (data) => {
      buffer += data;
      let nl;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        if (line.trim() === "") continue;
        let event;
        try {
          event = JSON.parse(line);
        } catch {
          event = { type: "__unparsable__", line };
        }
        this.events.push(event);
        this.wake();
      }
    });
    this.child.stderr.setEncoding("utf8").on("data", (d) => (this.stderr += d));
    this.child.stdin.on("error", () => {});
    this.child.on("exit", () => this.wake());
  }

  wake() {
    for (const w of [...this.waiters]) w();
  }

  /** Waits for an event matching `pred` at or after index `from`; resolves the event. */
  waitFor(pred, { from = 0, timeout = 15000, what = "an rpc event" } = {}) {
    return withTimeout(
      new Promise((resolve, reject) => {
        const check = () => {
          const found = this.events.slice(from).find(pred);
          if (found) {
            this.waiters = this.waiters.filter((w) => w !== check);
            resolve(found);
          } else if (this.child.exitCode !== null || this.child.signalCode !== null) {
            this.waiters = this.waiters.filter((w) => w !== check);
            reject(new Error(`zot rpc exited while waiting for ${what}\n${this.dump()}`));
          }
        };
        this.waiters.push(check);
        check();
      }),
      timeout,
      () => `${what}\n${this.dump()}`,
    );
  }

  send(request) {
    this.child.stdin.write(JSON.stringify(request) + "\n");
  }

  /** Sends a request and resolves its response. */
  async request(type, fields = {}, timeout = 15000) {
    const id = this.nextId++;
    const from = this.events.length;
    this.send({ id, type, ...fields });
    const response = await this.waitFor((e) => e.type === "response" && e.id === id, {
      from,
      timeout,
      what: `the response to ${type}`,
    });
    return response;
  }

  /**
   * Sends a prompt and waits for its response and its `done` (the response
   * may come before or after the prompt's events); resolves every event from
   * the request up to and including `done`. One prompt at a time.
   */
  async prompt(message, timeout = 20000) {
    const from = this.events.length;
    const response = await this.request("prompt", { message }, timeout);
    if (!response.success) throw new Error(`prompt failed: ${JSON.stringify(response)}\n${this.dump()}`);
    const done = await this.waitFor((e) => e.type === "done", { from, timeout, what: `done after prompt ${message}` });
    const end = this.events.indexOf(done, from);
    return this.events.slice(from, Math.max(end, this.events.indexOf(response, from)) + 1);
  }

  /** Closes stdin and waits for the exit (kills after `timeout`). */
  async close(timeout = 10000) {
    this.child.stdin.end();
    try {
      return await withTimeout(this.exited, timeout, "zot rpc to exit after stdin EOF");
    } catch (err) {
      try {
        process.kill(-this.child.pid, "SIGKILL");
      } catch {
        this.child.kill("SIGKILL");
      }
      throw err;
    }
  }

  dump() {
    return `events:\n${this.events.map((e) => JSON.stringify(e)).join("\n")}\nstderr:\n${this.stderr}`;
  }
}
