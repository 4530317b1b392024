//! guard: a tool-call guardrail written with the Rust SDK (`zot-ext`).
//! Refuses dangerous `bash` commands, rewrites risky ones into safer forms,
//! and appends every decision about a `bash` call to `guard.jsonl` in its
//! data directory; `/guard` shows the latest decisions.

use std::io::Write;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use zot_ext::serde_json::{Value, json};
use zot_ext::{Extension, Host, PendingToolCall, Response, ToolCallDecision};

/// Commands containing any of these are refused outright.
const DANGER_PATTERNS: &[&str] = &[
    "rm -rf",
    "rm -fr",
    "mkfs",
    "dd if=",
    ":(){",
    "> /dev/sd",
    "chmod -R 777 /",
];

/// The decisions log, in the extension's data directory.
const LOG_FILE: &str = "guard.jsonl";

/// How many decisions `/guard` shows.
const SHOWN_DECISIONS: usize = 10;

fn main() -> Result<(), zot_ext::Error> {
    Extension::new("guard", "1.0.0")
        .intercept_tool_call(|call, host| {
            if call.name != "bash" {
                return ToolCallDecision::Allow;
            }
            let decision = decide(call);
            record(host, call, &decision);
            decision
        })
        .command("guard", "show guard's latest decisions", |_args, host| {
            Response::display(latest(&host.info().data_dir.join(LOG_FILE)))
        })
        .run()
}

/// Refuse, rewrite or allow one bash call.
fn decide(call: &PendingToolCall) -> ToolCallDecision {
    let Some(command) = call.args.get("command").and_then(Value::as_str) else {
        return ToolCallDecision::Allow;
    };
    let normal = command.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Some(pattern) = DANGER_PATTERNS.iter().find(|p| normal.contains(*p)) {
        return ToolCallDecision::block(format!("refused: matches danger pattern \"{pattern}\""));
    }
    match safer(&normal) {
        Some(rewritten) => {
            let mut args = call.args.clone();
            args["command"] = Value::String(rewritten);
            ToolCallDecision::Rewrite(args)
        }
        None => ToolCallDecision::Allow,
    }
}

/// A safer spelling of `command`, if it has one: no `sudo` (the agent does
/// not escalate privileges) and `git push --force` only with a lease (it
/// never overwrites work it has not seen).
fn safer(command: &str) -> Option<String> {
    let mut words: Vec<&str> = command.split(' ').collect();
    let mut changed = false;
    while words.first() == Some(&"sudo") {
        words.remove(0);
        changed = true;
    }
    if words.starts_with(&["git", "push"]) {
        for word in words.iter_mut().skip(2) {
            if *word == "--force" || *word == "-f" {
                *word = "--force-with-lease";
                changed = true;
            }
        }
    }
    changed.then(|| words.join(" "))
}

/// Appends one decision to the log; a failure is logged, never fatal.
fn record(host: &Host, call: &PendingToolCall, decision: &ToolCallDecision) {
    let time = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let command = &call.args["command"];
    let entry = match decision {
        ToolCallDecision::Allow => json!({"time": time, "decision": "allow", "command": command}),
        ToolCallDecision::Block(reason) => {
            json!({"time": time, "decision": "block", "command": command, "reason": reason})
        }
        ToolCallDecision::Rewrite(args) => json!({
            "time": time, "decision": "rewrite", "command": command, "rewritten": args["command"]
        }),
    };
    let path = host.info().data_dir.join(LOG_FILE);
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut file| writeln!(file, "{entry}"));
    if let Err(e) = written {
        host.log(format_args!("cannot append to {}: {e}", path.display()));
    }
}

/// The last decisions, one per line, for `/guard`.
fn latest(path: &Path) -> String {
    let Ok(text) = std::fs::read_to_string(path) else {
        return "guard has not seen a bash call yet".to_owned();
    };
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(SHOWN_DECISIONS);
    let shown: Vec<String> = lines[start..]
        .iter()
        .filter_map(|line| zot_ext::serde_json::from_str::<Value>(line).ok())
        .map(|entry| {
            let decision = entry["decision"].as_str().unwrap_or("?");
            let command = entry["command"].as_str().unwrap_or("?");
            match entry["rewritten"].as_str() {
                Some(new) => format!("{decision}: {command} -> {new}"),
                None => format!("{decision}: {command}"),
            }
        })
        .collect();
    format!(
        "guard, last {} of {} decisions:\n{}",
        shown.len(),
        lines.len(),
        shown.join("\n")
    )
}
