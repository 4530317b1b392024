//! Runs the built `zot` binary in a temp world: `$ZOT_HOME`, a project dir
//! (the working directory) and a scratch dir for sources.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use zot_testkit::MockModel;

pub const ZOT: &str = env!("CARGO_BIN_EXE_zot");

pub struct World {
    _tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub project: PathBuf,
    pub scratch: PathBuf,
}

/// A finished run of `zot`.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(out: Output) -> Self {
        Self {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// A shell extension: hello, `register` lines, ready, then answers
/// `command_invoked` with a display of `$reply` until shutdown.
pub fn sh_ext(name: &str, register: &[&str]) -> String {
    let frames: String = register.iter().map(|f| format!("echo '{f}'\n")).collect();
    format!(
        r#"#!/bin/sh
echo '{{"type":"hello","name":"{name}","version":"1.0.0"}}'
read -r ack
{frames}echo '{{"type":"ready"}}'
while read -r line; do
  case "$line" in
    *shutdown*) echo '{{"type":"shutdown_ack"}}'; exit 0 ;;
  esac
done
"#
    )
}

impl World {
    pub fn new() -> Self {
        Self::in_dir(tempfile::tempdir().unwrap())
    }

    /// A world outside `/tmp`, for tests of the bash sandbox, which always
    /// lets commands write `/tmp`.
    /// `ZOT_TEST_OUTSIDE_TMP` overrides the place (the unprivileged run in
    /// `scripts/test` cannot write the target directory).
    pub fn outside_tmp() -> Self {
        let parent = std::env::var_os("ZOT_TEST_OUTSIDE_TMP").map_or_else(
            || {
                // A target dir under /tmp (CARGO_TARGET_DIR=/tmp/...) is
                // writable in every sandbox mode; /var/tmp is not.
                let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
                if target.starts_with("/tmp") || target.starts_with(std::env::temp_dir()) {
                    PathBuf::from("/var/tmp")
                } else {
                    target
                }
            },
            PathBuf::from,
        );
        Self::in_dir(tempfile::tempdir_in(parent).unwrap())
    }

    fn in_dir(tmp: tempfile::TempDir) -> Self {
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

    pub fn global(&self) -> PathBuf {
        self.home.join("extensions")
    }

    pub fn project_root(&self) -> PathBuf {
        self.project.join(".zot").join("extensions")
    }

    /// Writes an extension dir `<parent>/<dir>` with `manifest` and an executable `ext.sh`.
    pub fn ext_in(&self, parent: &Path, dir: &str, manifest: &str, script: &str) -> PathBuf {
        let dir = parent.join(dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("extension.json"), manifest).unwrap();
        zot_testkit::write_exec(&dir.join("ext.sh"), script);
        dir
    }

    /// A well-behaved sh extension `name` registering `register`.
    pub fn ext(&self, parent: &Path, name: &str, register: &[&str]) -> PathBuf {
        let manifest =
            format!(r#"{{"name":"{name}","version":"1.0.0","exec":"./ext.sh","language":"sh"}}"#);
        self.ext_in(parent, name, &manifest, &sh_ext(name, register))
    }

    /// A `zot` command in this world, not yet run.
    pub fn cmd(&self, args: &[&str]) -> Command {
        // `ZOT_TEST_BIN`: a copy of the binary the unprivileged run in
        // `scripts/test` can execute.
        let bin = std::env::var_os("ZOT_TEST_BIN").unwrap_or_else(|| ZOT.into());
        let mut cmd = Command::new(bin);
        cmd.args(args);
        self.place(&mut cmd);
        cmd
    }

    /// `zot args` in this world speaking to the loopback `model` as
    /// `provider` (API key `test-key`); not yet run. `args` come first, so
    /// they may start with `rpc`.
    pub fn against(&self, model: &MockModel, provider: &str, args: &[&str]) -> Command {
        let mut cmd = self.cmd(args);
        cmd.args([
            "--provider",
            provider,
            "--api-key",
            "test-key",
            "--base-url",
            &model.url(),
        ]);
        cmd
    }

    /// Runs `cmd` in this world: the project as cwd, this `$ZOT_HOME`, no stdin.
    pub fn place<'a>(&self, cmd: &'a mut Command) -> &'a mut Command {
        cmd.current_dir(&self.project)
            .env("ZOT_HOME", &self.home)
            .env("HOME", &self.scratch)
            .env_remove("XDG_STATE_HOME")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .env_remove("ZOTCORE_RPC_TOKEN")
            .env_remove("ZOT_PROVIDER")
            .env_remove("ZOT_MODEL")
            .env_remove("ZOT_BASE_URL")
            .stdin(std::process::Stdio::null())
    }

    pub fn zot(&self, args: &[&str]) -> Run {
        self.cmd(args).output().unwrap().into()
    }

    pub fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.home.join("logs").join(format!("ext-{name}.log")))
            .unwrap_or_default()
    }
}

/// A big task's model turns: three bash calls, the last reporting 950,000
/// input tokens (95% of the default model's million), so the next call
/// compacts first (the model's answers to
/// the compaction and after it follow these).
pub fn turns_filling_the_context() -> [zot_testkit::Response; 3] {
    use zot_testkit::anthropic;
    [
        anthropic::tool_call("a", "bash", r#"{"command":"echo one"}"#),
        anthropic::tool_call("b", "bash", r#"{"command":"echo two"}"#),
        anthropic::Script::new()
            .tool_call("c", "bash", r#"{"command":"echo three"}"#)
            .usage(950_000, 10)
            .build(),
    ]
}

/// A command hook that appends a line to `log` each time it runs: `fields`,
/// Python expressions over `d`, the JSON input the hook reads on stdin
/// (`d["reason"]`, or several: `d["hook_event_name"], d.get("trigger")`).
pub fn record_input(log: &Path, fields: &str) -> String {
    format!(
        r#"python3 -c 'import json,sys; d=json.load(sys.stdin); print({fields}, file=open("{}", "a"))'"#,
        log.display()
    )
}

/// The one session file of the world, as JSON lines (the session index
/// beside the project folders is passed over).
pub fn session_lines(w: &World) -> Vec<serde_json::Value> {
    let entries = |dir: &Path| {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect::<Vec<_>>()
    };
    let project = entries(&w.home.join("sessions"))
        .into_iter()
        .find(|p| p.is_dir())
        .expect("a session folder");
    let file = entries(&project)
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .expect("a session file");
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The JSON lines `run` wrote to stdout (`--json` mode), each checked
/// against the published event schema.
pub fn events(run: &Run) -> Vec<serde_json::Value> {
    run.stdout
        .lines()
        .map(|l| {
            let value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            if let Err(e) = check_schema(EVENT_SCHEMA, &value) {
                panic!("{e}");
            }
            value
        })
        .collect()
}

pub use zot_extensions::zot_protocol::events::{
    Block, Data, Event, EventLine, Response, StopReason, TodoItem, TodoStatus, Usage,
};
pub use zot_extensions::zot_protocol::schema::{
    EVENT_SCHEMA, HOOK_INPUT_SCHEMA, RPC_REQUEST_SCHEMA,
};

/// One `--json`/RPC line as the protocol's typed event; a line the type
/// does not read fails the test (the schema and the type must agree).
/// The `cost_usd` of the run's first `usage` event.
pub fn first_cost(run: &Run) -> f64 {
    typed_events(run)
        .into_iter()
        .find_map(|e| match e {
            Event::Usage { usage, .. } => Some(usage.cost_usd),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no usage event: {run:?}"))
}

pub fn typed(line: &serde_json::Value) -> Event {
    serde_json::from_value(line.clone()).unwrap_or_else(|e| panic!("{e}: {line}"))
}

/// [`events`], each read as the protocol's [`EventLine`]: the event and,
/// for a subagent's, the `task` call it belongs to.
pub fn typed_lines(run: &Run) -> Vec<EventLine> {
    events(run)
        .iter()
        .map(|line| serde_json::from_value(line.clone()).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

/// [`events`], each read into the protocol's [`Event`].
pub fn typed_events(run: &Run) -> Vec<Event> {
    events(run).iter().map(typed).collect()
}

/// The first event of `evs` that matches the pattern, as the expression
/// after `=>`; none fails the test, listing them all.
/// `first!(evs, Event::CompactDone { summary, .. } => summary)`
macro_rules! first {
    ($evs:expr, $pat:pat $(if $guard:expr)? => $out:expr) => {
        $evs.iter()
            .find_map(|e| match e {
                $pat $(if $guard)? => Some($out),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no {} in {:?}", stringify!($pat), $evs))
    };
}
pub(crate) use first;

/// An event's `type` on the wire, for checks of the order events come in.
pub fn kind(event: &Event) -> String {
    match serde_json::to_value(event).unwrap()["type"].as_str() {
        Some(kind) => kind.to_owned(),
        None => panic!("an event without a type: {event:?}"),
    }
}

/// Why each turn ended, in order (the `turn_end` events' `stop`).
pub fn stops(evs: &[Event]) -> Vec<StopReason> {
    evs.iter()
        .filter_map(|e| match e {
            Event::TurnEnd { stop, .. } => Some(*stop),
            _ => None,
        })
        .collect()
}

/// Each turn's `turn_end`: why it ended and the error it gave, in order.
pub fn turn_ends(evs: &[Event]) -> Vec<(StopReason, Option<String>)> {
    evs.iter()
        .filter_map(|e| match e {
            Event::TurnEnd { stop, error } => Some((*stop, error.clone())),
            _ => None,
        })
        .collect()
}

/// Whether the context was compacted on its own (`compact_done`, automatic).
pub fn compacted_automatically(evs: &[Event]) -> bool {
    evs.iter().any(|e| {
        matches!(
            e,
            Event::CompactDone {
                automatic: true,
                ..
            }
        )
    })
}

/// The content of the last assistant message.
pub fn last_answer(evs: &[Event]) -> &[Block] {
    evs.iter()
        .rev()
        .find_map(|e| match e {
            Event::AssistantMessage { content, .. } => Some(content.as_slice()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no assistant_message in {evs:?}"))
}

/// The text streamed as `text_delta` events, joined.
pub fn streamed_text(evs: &[Event]) -> String {
    evs.iter()
        .filter_map(|e| match e {
            Event::TextDelta { delta } => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}

/// The reasoning streamed as `thinking_delta` events, joined.
pub fn streamed_thinking(evs: &[Event]) -> String {
    evs.iter()
        .filter_map(|e| match e {
            Event::ThinkingDelta { delta } => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}

/// Whether any tool call was made.
pub fn any_tool_call(evs: &[Event]) -> bool {
    evs.iter().any(|e| matches!(e, Event::ToolCall { .. }))
}

/// The text of a text block; any other block fails the test.
pub fn text(block: &Block) -> &str {
    match block {
        Block::Text { text } => text,
        other => panic!("not a text block: {other:?}"),
    }
}

/// The text blocks of a tool result, joined; any other event fails the test.
pub fn result_text(event: &Event) -> String {
    match event {
        Event::ToolResult { content, .. } => content
            .iter()
            .filter_map(|b| match b {
                Block::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect(),
        other => panic!("not a tool result: {other:?}"),
    }
}

/// Why the last turn ended with an error, as its `turn_end` says.
pub fn last_turn_error(evs: &[Event]) -> Option<String> {
    evs.iter()
        .rev()
        .find_map(|e| match e {
            Event::TurnEnd { error, .. } => Some(error.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no turn_end in {evs:?}"))
}

/// An `ext_warning` as `extension: message` (`-` for none); `None` for
/// other events.
pub fn warning_text(event: &Event) -> Option<String> {
    match event {
        Event::ExtWarning { extension, message } => Some(format!(
            "{}: {message}",
            extension.as_deref().unwrap_or("-")
        )),
        _ => None,
    }
}

/// Whether `event` is a tool result that failed.
pub fn is_error(event: &Event) -> bool {
    matches!(event, Event::ToolResult { is_error: true, .. })
}

/// Whether `event` is the result of the tool call `call`.
pub fn is_result_of(event: &Event, call: &str) -> bool {
    matches!(event, Event::ToolResult { id, .. } if id == call)
}

/// Checks `value` against the schema checked in as `schema/<file>`.
pub fn check_schema(file: &str, value: &serde_json::Value) -> Result<(), String> {
    static VALIDATORS: std::sync::OnceLock<Vec<(String, jsonschema::Validator)>> =
        std::sync::OnceLock::new();
    let validators = VALIDATORS.get_or_init(|| {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schema");
        [EVENT_SCHEMA, RPC_REQUEST_SCHEMA, HOOK_INPUT_SCHEMA]
            .into_iter()
            .map(|name| {
                let text = std::fs::read_to_string(dir.join(name)).unwrap();
                let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
                (name.to_owned(), jsonschema::validator_for(&schema).unwrap())
            })
            .collect()
    });
    let (_, validator) = validators
        .iter()
        .find(|(name, _)| name == file)
        .ok_or_else(|| format!("no schema {file}"))?;
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| e.to_string())
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{value} breaks schema/{file}: {}",
            errors.join("; ")
        ))
    }
}

pub fn json(run: &Run) -> serde_json::Value {
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {run:?}"))
}

/// A python3 prelude for test extensions: `emit`, `frames()`, `handshake(name)`.
pub const PY_PRELUDE: &str = r#"#!/usr/bin/env python3
import json, os, sys, time
def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
def frames():
    for line in sys.stdin:
        if line.strip():
            yield json.loads(line)
def handshake(name):
    emit({"type": "hello", "name": name, "version": "1.0.0"})
    for msg in frames():
        if msg["type"] == "hello_ack":
            return msg
"#;

impl World {
    /// A python extension `<scratch>/<name>` (prelude + `body`) for `--ext`.
    pub fn py_ext(&self, name: &str, body: &str) -> PathBuf {
        let manifest = format!(r#"{{"name":"{name}","version":"1.0.0","exec":"./ext.py"}}"#);
        let dir = self.scratch.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("extension.json"), manifest).unwrap();
        zot_testkit::write_exec(
            &dir.join("ext.py"),
            &format!("{PY_PRELUDE}\nNAME = {name:?}\n{body}"),
        );
        dir
    }
}

/// Runs `cmd` with stdin, stdout and stderr on a new pseudo-terminal and
/// returns everything written to it (both streams, as the terminal got it).
const PTY_RUNNER: &str = r#"
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
out = b""
while True:
    try:
        data = os.read(fd, 65536)
    except OSError:
        break
    if not data:
        break
    out += data
_, status = os.waitpid(pid, 0)
sys.stdout.buffer.write(out)
sys.exit(os.waitstatus_to_exitcode(status))
"#;

pub fn on_terminal(cmd: &Command) -> Run {
    let mut runner = Command::new("python3");
    runner
        .args(["-c", PTY_RUNNER])
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (key, value) in cmd.get_envs() {
        match value {
            Some(value) => runner.env(key, value),
            None => runner.env_remove(key),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        runner.current_dir(dir);
    }
    runner.output().unwrap().into()
}

/// Runs `git args` in `dir` as author `t` (taking no optional locks, so a
/// `status` writes nothing) and returns its output.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}
