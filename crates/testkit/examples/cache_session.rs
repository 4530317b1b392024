//! The prompt-caching benchmark of the provider-fidelity issue: a 40-call
//! session (four prompts of nine tool calls and an answer each, the later
//! ones continuing the session in a new zot process) with two extensions
//! adding tools, against a loopback Anthropic server that emulates the
//! prompt cache (`zot_testkit::cache`) and bills each call as it would.
//!
//! ```text
//! cargo build -p zot && cargo run -p zot-testkit --example cache_session -- target/debug/zot
//! ```
//!
//! Prints each call's prompt split (input, cache write, cache read), then
//! the input cost with caching as a share of the cost without, and how many
//! calls after the first read from the cache. Goal: at most 25%, and all.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use zot_testkit::cache::{Emulator, Split};
use zot_testkit::{MockModel, anthropic, write_exec};

/// Prompts, each a new zot process continuing the session.
const PROMPTS: usize = 4;
/// Model calls per prompt: tool calls, then the answer.
const CALLS_PER_PROMPT: usize = 10;

/// claude-sonnet-5-5 (the default model) from crates/core/data/models.toml:
/// USD per million input tokens, 5-minute cache writes, cache reads.
const INPUT: f64 = 2.0;
const CACHE_WRITE: f64 = 2.5;
const CACHE_READ: f64 = 0.10;

const EXTENSION: &str = r#"#!/usr/bin/env python3
import json, sys
def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
emit({"type": "hello", "name": NAME, "version": "1.0.0"})
for line in sys.stdin:
    if json.loads(line)["type"] == "hello_ack":
        break
emit({"type": "register_tool", "name": NAME, "description": "The " + NAME + " tool: " + DOC,
      "schema": {"type": "object", "properties": {"what": {"type": "string"}}}, "read_only": True})
emit({"type": "ready"})
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "tool_call":
        emit({"type": "tool_result", "id": msg["id"], "content": [{"type": "text", "text": NAME + " saw " + json.dumps(msg.get("args"))}]})
    elif msg["type"] == "shutdown":
        break
"#;

fn extension(parent: &Path, name: &str, doc: &str) -> PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let manifest = json!({"name": name, "version": "1.0.0", "exec": "./ext.py"});
    std::fs::write(dir.join("extension.json"), manifest.to_string()).unwrap();
    let (shebang, rest) = EXTENSION.split_once('\n').unwrap();
    let script = format!("{shebang}\nNAME = {name:?}\nDOC = {doc:?}\n{rest}");
    write_exec(&dir.join("ext.py"), &script);
    dir
}

/// The `n`th call of the session: a tool call (built-in and extension
/// tools in turn), or each prompt's answer.
fn answer(n: usize, split: Split) -> zot_testkit::Response {
    let script = anthropic::Script::new()
        .usage(split.input, 40)
        .cache(split.cache_read, split.cache_write);
    if n % CALLS_PER_PROMPT == CALLS_PER_PROMPT - 1 {
        return script
            .text(&format!("Done with part {}.", n / CALLS_PER_PROMPT + 1))
            .build();
    }
    let id = format!("toolu_{n:03}");
    let (name, args) = match n % 5 {
        0 => ("read", json!({"path": "notes.txt"})),
        1 => ("peek", json!({"what": format!("item {n}")})),
        2 => ("bash", json!({"command": format!("echo step {n}")})),
        3 => ("stamp", json!({"what": format!("mark {n}")})),
        _ => ("ls", json!({})),
    };
    script.tool_call(&id, name, &args.to_string()).build()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let zot = std::env::args()
        .nth(1)
        .expect("usage: cache_session PATH_TO_ZOT");
    // zot runs in the project folder: a relative path must not change meaning.
    let zot = std::fs::canonicalize(&zot).unwrap_or_else(|e| panic!("{zot}: {e}"));
    let tmp = tempfile::tempdir().unwrap();
    let (home, project) = (tmp.path().join("home"), tmp.path().join("project"));
    for dir in [&home, &project] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let notes: String = (0..40)
        .map(|i| format!("fn step_{i:02}(input: &str) -> usize {{ input.len() + {i} }}\n"))
        .collect();
    std::fs::write(project.join("notes.txt"), notes).unwrap();
    let peek = extension(tmp.path(), "peek", "looks at an item and says what it saw.");
    let stamp = extension(tmp.path(), "stamp", "marks an item as checked.");

    let splits: Arc<Mutex<Vec<Split>>> = Arc::default();
    let seen = Arc::clone(&splits);
    let tools: Arc<Mutex<Vec<String>>> = Arc::default();
    let listed = Arc::clone(&tools);
    let mut cache = Emulator::new();
    let model = MockModel::start_responding(move |request| {
        let names = request.body["tools"].as_array().into_iter().flatten();
        *listed.lock().unwrap() = names
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect();
        let split = cache.request(&request.body);
        let mut seen = seen.lock().unwrap();
        seen.push(split);
        answer(seen.len() - 1, split)
    })
    .await;

    let mut reported_reads = 0;
    for prompt in 0..PROMPTS {
        let mut cmd = Command::new(&zot);
        cmd.current_dir(&project)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", tmp.path())
            .env("ZOT_HOME", &home)
            .args(["--provider", "anthropic", "--api-key", "k", "--base-url"])
            .arg(model.url())
            .arg("--ext")
            .arg(&peek)
            .arg("--ext")
            .arg(&stamp)
            .arg("--json");
        if prompt > 0 {
            cmd.arg("-c");
        }
        cmd.arg(format!(
            "Part {}: check the notes and the items.",
            prompt + 1
        ));
        let out = tokio::task::spawn_blocking(move || {
            cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"))
        })
        .await
        .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let event: Value = serde_json::from_str(line).unwrap();
            if event["type"] == "usage" {
                reported_reads += event["cache_read"].as_u64().unwrap();
            }
        }
    }

    let splits = splits.lock().unwrap().clone();
    println!("call  input  cache_write  cache_read");
    for (n, split) in splits.iter().enumerate() {
        println!(
            "{:>4} {:>6} {:>12} {:>11}",
            n + 1,
            split.input,
            split.cache_write,
            split.cache_read
        );
    }
    let cached: f64 = splits
        .iter()
        .map(|s| {
            s.input as f64 * INPUT
                + s.cache_write as f64 * CACHE_WRITE
                + s.cache_read as f64 * CACHE_READ
        })
        .sum::<f64>()
        / 1e6;
    let uncached: f64 = splits.iter().map(|s| s.total() as f64 * INPUT).sum::<f64>() / 1e6;
    let hits = splits.iter().skip(1).filter(|s| s.cache_read > 0).count();
    let emulated_reads: u64 = splits.iter().map(|s| s.cache_read).sum();
    println!(
        "{} calls; input cost ${cached:.4} with caching, ${uncached:.4} without: {:.1}%",
        splits.len(),
        cached / uncached * 100.0
    );
    println!(
        "calls after the first reading the cache: {hits} of {}",
        splits.len() - 1
    );
    println!("cache reads zot reported: {reported_reads} (emulated {emulated_reads})");
    println!("tools sent: {}", tools.lock().unwrap().join(", "));
}
