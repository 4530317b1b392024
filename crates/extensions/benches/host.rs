//! Extension host benchmarks (figures go into BENCHMARKS.md):
//!
//! 1. tool-call round trip through the host to a minimal python echo
//!    extension, against a raw blocking pipe ping-pong to the same program,
//!    with the host on each runtime zot runs it on;
//! 2. start-up of 20 extensions to all-ready, against the slowest one alone;
//! 3. a `tool_call` intercept chain of 10 extensions.
//!
//! Run: `cargo bench -p zot-extensions --bench host`, or name sections to
//! run only those: `cargo bench -p zot-extensions --bench host -- round_trip`
//! (`round_trip`, `startup`, `intercept`). On a virtual machine the round
//! trip is steadiest pinned to one CPU (`taskset -c 1 <bench binary>
//! round_trip`): a call is then the two processes' CPU, without the wake-up
//! of an idle virtual CPU.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use zot_extensions::{ExtensionHost, HostConfig};
use zot_testkit::bench::Stats;

const ROUND_TRIPS: usize = 3000;
const WARMUP: usize = 300;
/// The round trips are measured in this many blocks, each way in turn, so a
/// change in the machine's load (other builds on the shared cores) falls on
/// every way alike.
const BLOCKS: usize = 10;
const STARTUP_RUNS: usize = 7;
const CHAIN_LEN: usize = 10;
const CHAIN_CALLS: usize = 500;

/// Answers `tool_call` with the args as text; registers one tool; nothing else.
const ECHO: &str = r#"#!/usr/bin/env python3
import json, sys, time
delay = float(sys.argv[1]) if len(sys.argv) > 1 else 0.0
name = sys.argv[2] if len(sys.argv) > 2 else "echo"
time.sleep(delay)
out = sys.stdout
out.write(json.dumps({"type": "hello", "name": name}) + "\n")
out.flush()
for line in sys.stdin:
    msg = json.loads(line)
    t = msg["type"]
    if t == "hello_ack":
        out.write(json.dumps({"type": "register_tool", "name": "echo_" + name, "schema": {"type": "object"}}) + "\n")
        out.write(json.dumps({"type": "subscribe", "intercept": ["tool_call"]}) + "\n")
        out.write('{"type":"ready"}\n')
    elif t == "tool_call":
        out.write(json.dumps({"type": "tool_result", "id": msg["id"],
                              "content": [{"type": "text", "text": json.dumps(msg["args"])}]}) + "\n")
    elif t == "event_intercept":
        out.write(json.dumps({"type": "event_intercept_response", "id": msg["id"]}) + "\n")
    elif t == "shutdown":
        break
    out.flush()
"#;

/// The start-up extension: plain sh, so 20 of them measure the host's
/// concurrency rather than 20 interpreters competing for two cores.
const SH_EXT: &str = r#"#!/bin/sh
sleep "$1"
printf '{"type":"hello","name":"%s"}\n' "$2"
read -r ack
printf '{"type":"register_tool","name":"echo_%s","schema":{"type":"object"}}\n{"type":"ready"}\n' "$2"
while read -r line; do
  case "$line" in *'"shutdown"'*) exit 0 ;; esac
done
"#;

fn executable(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    zot_testkit::write_exec(&path, text);
    path
}

fn main() {
    let wanted: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let runs = |section: &str| wanted.is_empty() || wanted.iter().any(|w| w == section);
    let tmp = tempfile::tempdir().unwrap();
    let script = executable(tmp.path(), "echo.py", ECHO);
    let sh_script = executable(tmp.path(), "ext.sh", SH_EXT);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();

    if runs("round_trip") {
        round_trip(&rt, tmp.path(), &script);
    }
    if runs("startup") {
        startup_section(&rt, tmp.path(), &sh_script);
    }
    if runs("intercept") {
        let chain = rt.block_on(intercept_chain(tmp.path(), &script));
        println!("\n## tool_call intercept chain of {CHAIN_LEN} extensions ({CHAIN_CALLS} calls)");
        println!("per call: {}", Stats::of(&chain));
    }
}

/// The round trip, raw and through the host on the runtimes zot uses: a
/// current-thread runtime (`-p`, `--json`), a task on the multi-thread runtime
/// (the TUI and `zot rpc` run the agent in a spawned task), and, as this bench
/// measured it first, `block_on` from a thread outside the multi-thread runtime.
fn round_trip(rt: &tokio::runtime::Runtime, root: &Path, script: &Path) {
    let single = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut raw = Raw::start(script);
    let multi_host = rt.block_on(echo_host(&root.join("rt-multi"), root, script));
    let single_host = single.block_on(echo_host(&root.join("rt-single"), root, script));
    let mut raw_async = single.block_on(RawAsync::start(script));
    let per_block = ROUND_TRIPS / BLOCKS;
    raw.calls(WARMUP);
    single.block_on(raw_async.calls(WARMUP));
    rt.block_on(host_calls(&multi_host, WARMUP));
    single.block_on(host_calls(&single_host, WARMUP));
    let (mut raw_times, mut task, mut outside, mut current) = (vec![], vec![], vec![], vec![]);
    let mut async_times = vec![];
    for _ in 0..BLOCKS {
        raw_times.extend(raw.calls(per_block));
        async_times.extend(single.block_on(raw_async.calls(per_block)));
        let host = multi_host.clone();
        task.extend(
            rt.block_on(rt.spawn(async move { host_calls(&host, per_block).await }))
                .unwrap(),
        );
        outside.extend(rt.block_on(host_calls(&multi_host, per_block)));
        current.extend(single.block_on(host_calls(&single_host, per_block)));
    }
    raw.stop();
    single.block_on(raw_async.stop());
    rt.block_on(multi_host.shutdown());
    single.block_on(single_host.shutdown());
    let raw = Stats::of(&raw_times);
    let floor = Stats::of(&async_times);
    println!(
        "## tool-call round trip ({ROUND_TRIPS} calls, python3 echo extension, {BLOCKS} blocks in turn)"
    );
    println!("raw pipe ping-pong:                 {raw}");
    let ratio = |a: &Stats, b: &Stats| a.median.as_secs_f64() / b.median.as_secs_f64();
    println!(
        "the same on tokio's pipes (current-thread runtime, no host): {floor}; /raw (median) {:.2}",
        ratio(&floor, &raw)
    );
    for (way, times) in [
        ("current-thread runtime (-p, --json)", &current),
        ("task on the multi-thread runtime   ", &task),
        ("block_on outside the runtime       ", &outside),
    ] {
        let stats = Stats::of(times);
        println!(
            "through the host, {way}: {stats}; host/raw (median) {:.2}, host/tokio's pipes {:.2}",
            ratio(&stats, &raw),
            ratio(&stats, &floor)
        );
    }
}

fn startup_section(rt: &tokio::runtime::Runtime, root: &Path, sh_script: &Path) {
    let (slowest, all) = rt.block_on(startup(root, sh_script));
    let (raw_slowest, raw_all) = raw_startup(sh_script);
    println!("\n## start-up to all-ready (sh extensions, median of {STARTUP_RUNS} runs)");
    println!(
        "slowest single extension alone: {} (raw spawn + handshake: {})",
        ms(slowest),
        ms(raw_slowest)
    );
    println!(
        "20 extensions together:         {} (raw spawn + handshake: {})",
        ms(all),
        ms(raw_all)
    );
    println!(
        "host overhead over the slowest alone: {}",
        ms(all.saturating_sub(slowest))
    );
    println!(
        "host overhead over raw 20:            {}",
        ms(all.saturating_sub(raw_all))
    );
}

/// The echo program spoken to directly: blocking writes and line reads on
/// its pipes, and the same JSON work a host does for a call (the frame
/// encoded, the reply parsed and its id checked).
struct Raw {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
    line: String,
    next: usize,
}

impl Raw {
    fn start(script: &Path) -> Self {
        let mut child = Command::new(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap(); // hello
        writeln!(stdin, r#"{{"type":"hello_ack","protocol_version":1}}"#).unwrap();
        loop {
            line.clear();
            stdout.read_line(&mut line).unwrap();
            if line.contains("\"ready\"") {
                break;
            }
        }
        Self {
            child,
            stdin,
            stdout,
            line,
            next: 0,
        }
    }

    fn calls(&mut self, count: usize) -> Vec<Duration> {
        let mut times = Vec::with_capacity(count);
        for _ in 0..count {
            let i = self.next;
            self.next += 1;
            let started = Instant::now();
            let frame =
                json!({"type":"tool_call","id":i.to_string(),"name":"echo_echo","args":{"n": i}});
            self.stdin
                .write_all(format!("{frame}\n").as_bytes())
                .unwrap();
            self.line.clear();
            self.stdout.read_line(&mut self.line).unwrap();
            let reply: serde_json::Value = serde_json::from_str(&self.line).unwrap();
            assert_eq!(reply["id"], i.to_string());
            times.push(started.elapsed());
        }
        times
    }

    fn stop(self) {
        let Self {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        child.wait().unwrap();
    }
}

/// Writes `count` extension dirs running the echo script; the one with the
/// largest index sleeps longest before hello.
fn echo_extensions(
    root: &Path,
    script: &Path,
    count: usize,
    delay: impl Fn(usize) -> f64,
) -> Vec<PathBuf> {
    (0..count)
        .map(|i| {
            let name = format!("e{i:02}");
            let dir = root.join(&name);
            std::fs::create_dir_all(&dir).unwrap();
            let manifest = json!({
                "name": name, "exec": script, "args": [delay(i).to_string(), name],
            });
            std::fs::write(dir.join("extension.json"), manifest.to_string()).unwrap();
            dir
        })
        .collect()
}

fn config(home: &Path, explicit: Vec<PathBuf>) -> HostConfig {
    let mut config = HostConfig::new(home, home);
    config.explicit = explicit;
    config.discover = false;
    config
}

/// [`Raw`] on tokio's pipes in a current-thread runtime: the same calls and
/// JSON work, woken through the runtime's epoll instead of a blocking read.
/// Not a baseline of the goal (that is [`Raw`]); it shows how much of the
/// host's time over the raw pipe any async reader of a pipe pays.
struct RawAsync {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::io::BufReader<tokio::process::ChildStdout>,
    line: String,
    next: usize,
}

impl RawAsync {
    async fn start(script: &Path) -> Self {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
        let mut child = tokio::process::Command::new(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = tokio::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).await.unwrap(); // hello
        stdin
            .write_all(b"{\"type\":\"hello_ack\",\"protocol_version\":1}\n")
            .await
            .unwrap();
        loop {
            line.clear();
            stdout.read_line(&mut line).await.unwrap();
            if line.contains("\"ready\"") {
                break;
            }
        }
        Self {
            child,
            stdin,
            stdout,
            line,
            next: 0,
        }
    }

    async fn calls(&mut self, count: usize) -> Vec<Duration> {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
        let mut times = Vec::with_capacity(count);
        for _ in 0..count {
            let i = self.next;
            self.next += 1;
            let started = Instant::now();
            let frame =
                json!({"type":"tool_call","id":i.to_string(),"name":"echo_echo","args":{"n": i}});
            self.stdin
                .write_all(format!("{frame}\n").as_bytes())
                .await
                .unwrap();
            self.line.clear();
            self.stdout.read_line(&mut self.line).await.unwrap();
            let reply: serde_json::Value = serde_json::from_str(&self.line).unwrap();
            assert_eq!(reply["id"], i.to_string());
            times.push(started.elapsed());
        }
        times
    }

    async fn stop(self) {
        let Self {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        child.wait().await.unwrap();
    }
}

/// A host running one echo extension from its own folder under `dir`.
async fn echo_host(dir: &Path, home: &Path, script: &Path) -> ExtensionHost {
    let dirs = echo_extensions(dir, script, 1, |_| 0.0);
    let (host, _rx) = ExtensionHost::start(config(home, dirs)).await;
    assert!(host.errors().is_empty(), "{:?}", host.errors());
    host
}

async fn host_calls(host: &ExtensionHost, count: usize) -> Vec<Duration> {
    let mut times = Vec::with_capacity(count);
    for i in 0..count {
        let started = Instant::now();
        let reply = host.call_tool("echo_e00", json!({"n": i})).await.unwrap();
        assert!(!reply.is_error);
        times.push(started.elapsed());
    }
    times
}

/// Median start-up time of the slowest extension alone and of all 20.
async fn startup(root: &Path, script: &Path) -> (Duration, Duration) {
    // Extension i waits i * 5 ms before hello: the slowest waits 95 ms.
    let dirs = echo_extensions(&root.join("startup"), script, 20, |i| i as f64 * 0.005);
    let slowest = dirs.last().cloned().unwrap();
    let mut alone = Vec::new();
    let mut all = Vec::new();
    for _ in 0..STARTUP_RUNS {
        for (explicit, times) in [
            (vec![slowest.clone()], &mut alone),
            (dirs.clone(), &mut all),
        ] {
            let expected = explicit.len();
            let started = Instant::now();
            let (host, _rx) = ExtensionHost::start(config(root, explicit)).await;
            times.push(started.elapsed());
            assert_eq!(host.tools().len(), expected, "{:?}", host.errors());
            host.shutdown().await;
        }
    }
    (Stats::of(&alone).median, Stats::of(&all).median)
}

/// The same 20 processes spawned with std and handshaken by hand, no host:
/// what 20 process start-ups cost on this machine by themselves.
fn raw_startup(script: &Path) -> (Duration, Duration) {
    let run = |indices: &[usize]| {
        let started = Instant::now();
        let children: Vec<_> = indices
            .iter()
            .map(|&i| {
                Command::new(script)
                    .args([(i as f64 * 0.005).to_string(), format!("e{i:02}")])
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let mut open = Vec::new();
        for mut child in children {
            let mut stdin = child.stdin.take().unwrap();
            let mut stdout = BufReader::new(child.stdout.take().unwrap());
            let mut line = String::new();
            stdout.read_line(&mut line).unwrap();
            writeln!(stdin, r#"{{"type":"hello_ack","protocol_version":1}}"#).unwrap();
            while !line.contains("\"ready\"") {
                line.clear();
                stdout.read_line(&mut line).unwrap();
            }
            open.push((child, stdin));
        }
        let elapsed = started.elapsed();
        for (mut child, mut stdin) in open {
            writeln!(stdin, r#"{{"type":"shutdown"}}"#).unwrap();
            child.wait().unwrap();
        }
        elapsed
    };
    let all: Vec<usize> = (0..20).collect();
    let mut alone = Vec::new();
    let mut together = Vec::new();
    for _ in 0..STARTUP_RUNS {
        alone.push(run(&[19]));
        together.push(run(&all));
    }
    (Stats::of(&alone).median, Stats::of(&together).median)
}

async fn intercept_chain(root: &Path, script: &Path) -> Vec<Duration> {
    let dirs = echo_extensions(&root.join("chain"), script, CHAIN_LEN, |_| 0.0);
    let (host, _rx) = ExtensionHost::start(config(root, dirs)).await;
    let args = json!({"command": "ls -la"});
    let mut times = Vec::with_capacity(CHAIN_CALLS);
    for i in 0..WARMUP + CHAIN_CALLS {
        let started = Instant::now();
        let verdict = host
            .intercept_tool_call(&i.to_string(), "bash", &args)
            .await;
        assert_eq!(verdict, zot_extensions::Outcome::Allow(None));
        if i >= WARMUP {
            times.push(started.elapsed());
        }
    }
    host.shutdown().await;
    times
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}
