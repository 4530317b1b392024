// The host side of the protocol, for tests that talk to an extension
// directly (panels are TUI-only, and some properties are easier to see on
// the raw stream): spawn the extension, read its frames, send ours.

import { spawn } from "node:child_process";

import { track, withTimeout } from "./proc.mjs";

export class FakeHost {
  /**
   * @param {string} dir the extension directory (its cwd)
   * @param {string[]} command argv, e.g. ["node", "main.mjs"]
   */
  constructor(dir, command, { env = {} } = {}) {
    this.frames = [];
    /** Raw stdout lines, exactly as written (without the LF). */
    this.lines = [];
    this.stderr = "";
    this.taken = new Set();
    this.waiters = [];
    this.child = track(
      spawn(command[0], command.slice(1), {
        cwd: dir,
        env: { ...process.env, ...env },
        stdio: ["pipe", "pipe", "pipe"],
        detached: true,
      }),
    );
    this.exited = new Promise((resolve) => this.child.on("exit", (code, signal) => resolve({ code, signal })));
    let pending = Buffer.alloc(0);
    this.child.stdout.on("data", (chunk) => {
      pending = Buffer.concat([pending, chunk]);
      let nl;
      while ((nl = pending.indexOf(0x0a)) >= 0) {
        const line = pending.subarray(0, nl).toString("utf8");
        pending = pending.subarray(nl + 1);
        this.lines.push(line);
        let frame;
        try {
          frame = JSON.parse(line);
        } catch {
          frame = { type: "__unparsable__", line };
        }
        this.frames.push(frame);
      }
      this.wake();
    });
    this.child.stderr.setEncoding("utf8").on("data", (d) => {
      this.stderr += d;
      this.wake();
    });
    this.child.stdin.on("error", () => {});
    this.child.on("exit", () => this.wake());
  }

  wake() {
    for (const w of [...this.waiters]) w();
  }

  get running() {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Resolves when `check()` returns a truthy value (checked on every change). */
  until(check, what, timeout = 10000) {
    return withTimeout(
      new Promise((resolve, reject) => {
        const probe = () => {
          let value;
          try {
            value = check();
          } catch (err) {
            this.waiters = this.waiters.filter((w) => w !== probe);
            reject(err);
            return;
          }
          if (value) {
            this.waiters = this.waiters.filter((w) => w !== probe);
            resolve(value);
          } else if (!this.running) {
            this.waiters = this.waiters.filter((w) => w !== probe);
            reject(new Error(`extension exited while waiting for ${what}\n${this.dump()}`));
          }
        };
        this.waiters.push(probe);
        probe();
      }),
      timeout,
      () => `${what}\n${this.dump()}`,
    );
  }

  /** The first frame not yet taken by `next` or `expect`. */
  async next(what = "the next frame", timeout = 10000) {
    return this.expect(() => true, what, timeout);
  }

  /** The first frame not yet taken that matches `pred`; it is then taken. */
  async expect(pred, what, timeout = 10000) {
    const index = await this.until(() => {
      for (let i = 0; i < this.frames.length; i++) if (!this.taken.has(i) && pred(this.frames[i])) return i + 1;
      return 0;
    }, what, timeout);
    this.taken.add(index - 1);
    return this.frames[index - 1];
  }

  /** Frames not yet taken. */
  untaken() {
    return this.frames.filter((_, i) => !this.taken.has(i));
  }

  /** The reply with this `id`. */
  reply(id, what = `the reply to ${id}`, timeout = 10000) {
    return this.expect((f) => f.id === id, what, timeout);
  }

  send(frame) {
    this.child.stdin.write(JSON.stringify(frame) + "\n");
  }

  sendRaw(data) {
    this.child.stdin.write(data);
  }

  /** Waits for hello, sends hello_ack, waits for ready; resolves `{ hello, registrations }`. */
  async handshake(ack = {}) {
    const hello = await this.next("hello");
    this.send({
      type: "hello_ack",
      protocol_version: 1,
      zot_version: "0.0.0-test",
      provider: "mock",
      model: "mock-1",
      cwd: "/tmp/project",
      extension_dir: "/tmp/ext",
      data_dir: "/tmp/ext",
      ...ack,
    });
    const registrations = [];
    for (;;) {
      const frame = await this.next("registrations and ready");
      if (frame.type === "ready") break;
      registrations.push(frame);
    }
    return { hello, registrations };
  }

  /** Sends shutdown, expects shutdown_ack and an exit. */
  async shutdown(timeout = 5000) {
    this.send({ type: "shutdown" });
    await this.expect((f) => f.type === "shutdown_ack", "shutdown_ack", timeout);
    return withTimeout(this.exited, timeout, () => `exit after shutdown_ack\n${this.dump()}`);
  }

  closeInput() {
    this.child.stdin.end();
  }

  dump() {
    return `stdout:\n${this.lines.join("\n")}\nstderr:\n${this.stderr}`;
  }
}
