//! Shared test fixtures: a temp `$ZOT_HOME` and project, extension writers,
//! and deadline-based waiting (never a bare sleep).

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;
use zot_extensions::{ExtensionHost, HostConfig, HostEvent, Limits};

/// A python3 prelude every test extension starts with: `emit`, `frames()`
/// (which records every host frame into `received.jsonl` in the extension
/// dir, the extension's cwd) and `handshake(name)`.
pub const PY_PRELUDE: &str = r#"#!/usr/bin/env python3
import json, os, sys, time, signal, subprocess
def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
def record(obj):
    with open("received.jsonl", "a") as f:
        f.write(json.dumps(obj) + "\n")
def frames():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        record(msg)
        yield msg
def handshake(name):
    emit({"type": "hello", "name": name, "version": "1.0.0"})
    for msg in frames():
        if msg["type"] == "hello_ack":
            return msg
"#;

pub struct Env {
    _tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub project: PathBuf,
    /// Where `--ext` test extensions go.
    pub scratch: PathBuf,
}

#[derive(Clone, Copy)]
pub enum Root {
    Project,
    Global,
    Scratch,
}

impl Env {
    pub fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let project = tmp.path().join("project");
        let scratch = tmp.path().join("scratch");
        for dir in [&home, &project, &scratch] {
            std::fs::create_dir_all(dir).unwrap();
        }
        Self {
            _tmp: tmp,
            home,
            project,
            scratch,
        }
    }

    pub fn root(&self, root: Root) -> PathBuf {
        match root {
            Root::Project => self.project.join(".zot").join("extensions"),
            Root::Global => self.home.join("extensions"),
            Root::Scratch => self.scratch.clone(),
        }
    }

    /// Writes `<root>/<dir>/extension.json` with `manifest` and returns the dir.
    pub fn manifest(&self, root: Root, dir: &str, manifest: &str) -> PathBuf {
        let dir = self.root(root).join(dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("extension.json"), manifest).unwrap();
        dir
    }

    /// A python extension `name` in `<root>/<dir>/ext.py`: the prelude plus `body`.
    pub fn py(&self, root: Root, dir: &str, name: &str, body: &str) -> PathBuf {
        let manifest = format!(r#"{{"name":"{name}","version":"1.0.0","exec":"./ext.py"}}"#);
        let dir = self.manifest(root, dir, &manifest);
        write_exec(
            &dir.join("ext.py"),
            &format!("{PY_PRELUDE}\nNAME = {name:?}\n{body}"),
        );
        dir
    }

    /// A python extension loaded with `--ext`, directory named after it.
    pub fn ext(&self, name: &str, body: &str) -> PathBuf {
        self.py(Root::Scratch, name, name, body)
    }

    /// Host config for this env with `--ext` dirs and test-sized limits.
    pub fn config(&self, explicit: &[&Path]) -> HostConfig {
        let mut config = HostConfig::new(&self.home, &self.project);
        config.explicit = explicit.iter().map(|p| p.to_path_buf()).collect();
        config.project_trusted = true;
        config.provider = "anthropic".into();
        config.model = "test-model".into();
        config.zot_version = "9.9.9".into();
        config.limits = Limits {
            hello_timeout: Duration::from_secs(5),
            command_timeout: Duration::from_secs(5),
            tool_timeout: Duration::from_secs(10),
            intercept_timeout: Duration::from_secs(2),
            shutdown_grace: Duration::from_millis(1500),
            term_grace: Duration::from_millis(500),
            ..Limits::default()
        };
        config
    }

    pub async fn start(&self, explicit: &[&Path]) -> (ExtensionHost, UnboundedReceiver<HostEvent>) {
        ExtensionHost::start(self.config(explicit)).await
    }

    pub fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.home.join("logs").join(format!("ext-{name}.log")))
            .unwrap_or_default()
    }
}

pub use zot_testkit::write_exec;

/// Frames an extension recorded in `<dir>/received.jsonl`.
pub fn received(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("received.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Received frames of one `type`.
pub fn received_of(dir: &Path, kind: &str) -> Vec<serde_json::Value> {
    received(dir)
        .into_iter()
        .filter(|f| f["type"] == kind)
        .collect()
}

pub use zot_testkit::wait::{eventually, next_matching as event_matching};

/// Whether `pid` is a live (non-zombie) process.
pub fn is_running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .chars()
                .next();
            state != Some('Z')
        }
        Err(_) => false,
    }
}

/// Reads an integer the extension wrote to `<dir>/<file>`, waiting for it.
pub async fn read_pid(dir: &Path, file: &str) -> i32 {
    let path = dir.join(file);
    let mut pid = None;
    assert!(
        eventually(Duration::from_secs(5), || {
            pid = std::fs::read_to_string(&path)
                .ok()
                .and_then(|s| s.trim().parse().ok());
            pid.is_some()
        })
        .await,
        "{} never written",
        path.display()
    );
    pid.unwrap()
}

pub const SECS5: Duration = Duration::from_secs(5);

/// A standard body: handshake, send `frames` (a python list literal), ready,
/// then answer nothing but shutdown.
pub fn registers(frames: &str) -> String {
    format!(
        r#"
handshake(NAME)
for f in {frames}:
    emit(f)
emit({{"type": "ready"}})
for msg in frames():
    if msg["type"] == "shutdown":
        emit({{"type": "shutdown_ack"}})
        break
"#
    )
}

/// An interceptor of `events` whose reply is `decide(msg)` (python).
pub fn interceptor(env: &Env, name: &str, events: &str, decide: &str) -> PathBuf {
    env.ext(
        name,
        &format!(
            r#"
{decide}
handshake(NAME)
emit({{"type":"subscribe","intercept":{events}}})
emit({{"type":"ready"}})
for msg in frames():
    if msg["type"] == "event_intercept":
        reply = decide(msg)
        if reply is not None:
            reply["type"] = "event_intercept_response"
            reply["id"] = msg["id"]
            emit(reply)
"#
        ),
    )
}
