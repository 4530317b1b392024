// Child processes and temp dirs for the tests: everything started here is
// tracked and killed in teardown, every wait has a timeout.

import { spawn } from "node:child_process";
import { mkdtempSync, realpathSync, rmSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";

export const SDK_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const REPO = resolve(SDK_DIR, "..", "..");
export const FIXTURES = join(SDK_DIR, "test", "fixtures");
export const EXAMPLES = join(REPO, "examples", "extensions");

export function zotBin() {
  const bin = process.env.ZOT_BIN;
  if (!bin) throw new Error("ZOT_BIN is not set: run the tests with sdk/typescript/run-tests.sh");
  return bin;
}

const children = new Set();
const tempDirs = new Set();

/** Spawns a tracked child; it is killed by `cleanup()` if still running. */
export function track(child) {
  children.add(child);
  child.once("exit", () => children.delete(child));
  return child;
}

/** Kills every child still running and removes temp dirs. */
export async function cleanup() {
  const waits = [];
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) {
      waits.push(new Promise((r) => child.once("exit", r)));
      try {
        // Each child runs in its own process group: take its children too.
        process.kill(-child.pid, "SIGKILL");
      } catch {
        try {
          child.kill("SIGKILL");
        } catch {
          // already gone
        }
      }
    }
  }
  await withTimeout(Promise.all(waits), 5000, "children to die").catch(() => {});
  children.clear();
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  tempDirs.clear();
}

/** A fresh temp dir (realpath'd), removed by `cleanup()`. */
export function tempDir(prefix = "zot-tssdk-") {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  tempDirs.add(dir);
  return dir;
}

/** A sandbox: `home` for ZOT_HOME, `project` as the cwd, `root` for anything else. */
export function sandbox() {
  const root = tempDir();
  const home = join(root, "home");
  const project = join(root, "project");
  mkdirSync(home);
  mkdirSync(project);
  return { root, home, project };
}

/** Races `promise` against a timer; `what` (a string or a function giving one) names the wait. */
export function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => {
      const name = typeof what === "function" ? what() : what;
      reject(new Error(`timed out after ${ms} ms waiting for ${name}`));
    }, ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Environment for zot: a clean ZOT_HOME and no real credentials. */
export function zotEnv(box, extra = {}) {
  const env = { ...process.env, ZOT_HOME: box.home, ...extra };
  for (const key of ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "KIMI_API_KEY", "MOONSHOT_API_KEY", "XDG_STATE_HOME", "ZOTCORE_RPC_TOKEN"]) {
    if (!(key in extra)) delete env[key];
  }
  return env;
}

/**
 * Runs a command to completion with a timeout (then SIGKILL and an error).
 * Resolves `{ code, signal, stdout, stderr }`.
 */
export function run(cmd, args, { cwd, env, input, timeout = 30000 } = {}) {
  return new Promise((resolvePromise, reject) => {
    const child = track(spawn(cmd, args, { cwd, env, stdio: ["pipe", "pipe", "pipe"], detached: true }));
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d) => (stderr += d));
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        child.kill("SIGKILL");
      }
      reject(new Error(`${cmd} ${args.join(" ")} timed out after ${timeout} ms\nstdout:\n${stdout}\nstderr:\n${stderr}`));
    }, timeout);
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolvePromise({ code, signal, stdout, stderr });
    });
    child.stdin.on("error", () => {});
    child.stdin.end(input ?? "");
  });
}

/** Parses JSON lines, failing with the offending line. */
export function jsonLines(text) {
  return text
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => {
      try {
        return JSON.parse(l);
      } catch (err) {
        throw new Error(`not a JSON line: ${l}\n${err.message}`);
      }
    });
}

export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls `check` until it returns a truthy value (or throws after `timeout`). */
export async function eventually(check, what, timeout = 10000, every = 25) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeout} ms waiting for ${what}${last ? `: ${last.message}` : ""}`);
    }
    await sleep(every);
  }
}
