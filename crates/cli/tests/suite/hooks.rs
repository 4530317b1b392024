//! Claude-style command hooks through the built binary: real sh, python3
//! and node hook scripts in the user's `$ZOT_HOME/hooks.json` and a
//! project's `.claude/settings.json`, against the loopback model.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use zot_testkit::{MockModel, anthropic};

use super::support::{
    Event, HOOK_INPUT_SCHEMA, Run, World, check_schema, first, last_turn_error, record_input, text,
    turns_filling_the_context, typed_events, warning_text,
};

/// Writes an executable hook script `name` into the scratch dir.
fn script(w: &World, name: &str, text: &str) -> PathBuf {
    let path = w.scratch.join(name);
    zot_testkit::write_exec(&path, text);
    path
}

/// Writes the executable script `name` and makes it the user's only hook,
/// at `event` for `matcher`.
fn only_hook(w: &World, event: &str, matcher: &str, name: &str, text: &str) {
    let path = script(w, name, text);
    user_hooks(w, &[(event, matcher, command(path.display().to_string()))]);
}

/// `$ZOT_HOME/hooks.json` with these `(event, matcher, command)` hooks.
fn user_hooks(w: &World, hooks: &[(&str, &str, Value)]) {
    std::fs::write(w.home.join("hooks.json"), settings(hooks).to_string()).unwrap();
}

/// A settings document with one matcher group per hook.
fn settings(hooks: &[(&str, &str, Value)]) -> Value {
    let mut events = serde_json::Map::new();
    for (event, matcher, handler) in hooks {
        let groups = events
            .entry((*event).to_owned())
            .or_insert_with(|| json!([]));
        groups
            .as_array_mut()
            .unwrap()
            .push(json!({"matcher": matcher, "hooks": [handler]}));
    }
    json!({ "hooks": events })
}

fn command(cmd: impl AsRef<str>) -> Value {
    json!({"type": "command", "command": cmd.as_ref()})
}

fn zot(w: &World, model: &MockModel, args: &[&str]) -> Run {
    w.against(model, "anthropic", args).output().unwrap().into()
}

/// The tool result the model got in request `n` (its last message).
fn tool_result(model: &MockModel, n: usize) -> Value {
    let body = &model.requests()[n].body;
    let last = body["messages"].as_array().unwrap().last().unwrap().clone();
    last["content"][0].clone()
}

fn result_text(result: &Value) -> String {
    result["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_else(|| result["content"].as_str().unwrap_or_default().to_owned())
}

fn wait_for(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + limit;
    while std::time::Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bash_guard_blocks_rm_rf_by_exit_2_and_sees_claudes_shapes() {
    let w = World::new();
    let seen = w.scratch.join("input.json");
    let guard = script(
        &w,
        "guard.sh",
        &format!(
            r#"#!/bin/sh
input=$(cat)
printf '%s' "$input" > '{}'
case "$input" in
  *'rm -rf'*) echo "refusing rm -rf in $CLAUDE_PROJECT_DIR" >&2; exit 2 ;;
esac
exit 0
"#,
            seen.display()
        ),
    );
    user_hooks(
        &w,
        &[("PreToolUse", "Bash", command(guard.display().to_string()))],
    );
    std::fs::write(w.project.join("precious"), "keep").unwrap();
    let model = MockModel::start([
        anthropic::tool_call("t1", "bash", r#"{"command":"rm -rf precious","timeout":5}"#),
        anthropic::text("ok"),
    ])
    .await;
    let run = zot(&w, &model, &["-p", "delete it"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(w.project.join("precious").exists(), "the command never ran");
    let result = tool_result(&model, 1);
    assert_eq!(result["is_error"], true);
    let project = w.project.display().to_string();
    assert!(
        result_text(&result).contains(&format!("refusing rm -rf in {project}")),
        "{result}"
    );
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    // What the hook read is the published wire format.
    check_schema(HOOK_INPUT_SCHEMA, &input).unwrap();
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_name"], "Bash");
    assert_eq!(
        input["tool_input"],
        json!({"command": "rm -rf precious", "timeout": 5000})
    );
    assert_eq!(input["tool_use_id"], "t1");
    assert_eq!(input["cwd"], project.as_str());
    assert_eq!(input["permission_mode"], "bypassPermissions");
    let transcript = input["transcript_path"].as_str().unwrap();
    assert!(Path::new(transcript).is_file(), "the session file: {input}");
    assert!(
        transcript.contains(input["session_id"].as_str().unwrap()),
        "{input}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_python_guard_denies_by_permission_decision_in_json_mode() {
    let w = World::new();
    only_hook(
        &w,
        "PreToolUse",
        "Bash",
        "guard.py",
        r#"#!/usr/bin/env python3
import json, sys
data = json.load(sys.stdin)
if "rm -rf" in data["tool_input"].get("command", ""):
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "deny", "permissionDecisionReason": "no recursive deletes"}}))
"#,
    );
    let model = MockModel::start([
        anthropic::tool_call("t1", "bash", r#"{"command":"rm -rf /tmp/nothing-here"}"#),
        anthropic::text("ok"),
    ])
    .await;
    let run = zot(&w, &model, &["--json", "--no-session", "go"]);
    assert_eq!(run.code, 0, "{run:?}");
    let lines = typed_events(&run);
    let (is_error, content) = lines
        .iter()
        .find_map(|e| match e {
            Event::ToolResult {
                is_error, content, ..
            } => Some((*is_error, content)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{run:?}"));
    assert!(is_error);
    assert_eq!(text(&content[0]), "no recursive deletes");
    assert_eq!(result_text(&tool_result(&model, 1)), "no recursive deletes");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_hook_rewrites_the_input_that_reaches_the_tool() {
    let w = World::new();
    only_hook(
        &w,
        "PreToolUse",
        "*",
        "rewrite.mjs",
        r#"#!/usr/bin/env node
let text = "";
process.stdin.on("data", (d) => (text += d));
process.stdin.on("end", () => {
  const input = JSON.parse(text);
  const command = input.tool_input.command.replace("one", "two");
  console.log(JSON.stringify({ hookSpecificOutput: { hookEventName: "PreToolUse",
    permissionDecision: "allow", updatedInput: { ...input.tool_input, command } } }));
});
"#,
    );
    let model = MockModel::start([
        anthropic::tool_call("t1", "bash", r#"{"command":"echo one"}"#),
        anthropic::text("ok"),
    ])
    .await;
    let run = zot(&w, &model, &["-p", "--no-session", "go"]);
    assert_eq!(run.code, 0, "{run:?}");
    let result = tool_result(&model, 1);
    assert_eq!(result["is_error"], false, "{result}");
    assert!(result_text(&result).starts_with("$ echo two\n"), "{result}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_post_tool_use_formatter_rewrites_the_written_file_with_matchers() {
    let w = World::new();
    let format = script(
        &w,
        "format.py",
        r#"#!/usr/bin/env python3
import json, sys
data = json.load(sys.stdin)
path = data["tool_input"]["file_path"]
with open(path) as f:
    text = f.read()
with open(path, "w") as f:
    f.write(text.upper())
assert data["tool_response"]["success"] is True
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUse",
    "additionalContext": "formatted " + data["tool_name"]}}))
"#,
    );
    let count = w.scratch.join("count");
    let counter = format!("echo x >> '{}'", count.display());
    user_hooks(
        &w,
        &[
            (
                "PostToolUse",
                "Edit|Write",
                command(format.display().to_string()),
            ),
            // A regex, `*` and an exact name that does not match.
            ("PostToolUse", "Wr.*", command(&counter)),
            ("PostToolUse", "*", command(format!("{counter}; true"))),
            ("PostToolUse", "Read", command(format!("{counter} ; false"))),
        ],
    );
    let model = MockModel::start([
        anthropic::tool_call("t1", "write", r#"{"path":"notes.txt","content":"hello\n"}"#),
        anthropic::text("ok"),
    ])
    .await;
    let run = zot(&w, &model, &["-p", "--no-session", "write"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        std::fs::read_to_string(w.project.join("notes.txt")).unwrap(),
        "HELLO\n"
    );
    assert!(result_text(&tool_result(&model, 1)).contains("formatted Write"));
    assert_eq!(std::fs::read_to_string(&count).unwrap(), "x\nx\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn prompt_and_session_start_hooks_add_context_before_the_prompt() {
    let w = World::new();
    user_hooks(
        &w,
        &[
            ("SessionStart", "startup", command("echo branch is main")),
            ("SessionStart", "resume", command("echo never")),
            (
                "UserPromptSubmit",
                "",
                command(
                    r#"echo '{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"ticket ZOT-16"}}'"#,
                ),
            ),
        ],
    );
    let model = MockModel::start([anthropic::text("ok")]).await;
    let run = zot(&w, &model, &["-p", "hello"]);
    assert_eq!(run.code, 0, "{run:?}");
    let body = &model.requests()[0].body;
    let blocks: Vec<&str> = body["messages"][0]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["text"].as_str().unwrap())
        .collect();
    assert_eq!(blocks, ["branch is main", "ticket ZOT-16", "hello"]);
    assert!(!body["system"].to_string().contains("ZOT-16"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_user_prompt_submit_hook_blocks_the_prompt_in_every_mode() {
    let w = World::new();
    let hook = script(
        &w,
        "block.sh",
        "#!/bin/sh\ngrep -q secret && { echo 'no secrets in prompts' >&2; exit 2; }\nexit 0\n",
    );
    user_hooks(
        &w,
        &[("UserPromptSubmit", "", command(hook.display().to_string()))],
    );
    let model = MockModel::start([]).await;

    let run = zot(&w, &model, &["-p", "--no-session", "the secret is 42"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("no secrets in prompts"), "{run:?}");
    assert!(run.stdout.is_empty());

    let run = zot(&w, &model, &["--json", "--no-session", "the secret is 42"]);
    assert_eq!(run.code, 1, "{run:?}");
    let lines = typed_events(&run);
    assert_eq!(
        lines,
        [
            Event::PromptBlocked {
                source: "hook".into(),
                reason: "no secrets in prompts".into()
            },
            Event::Done
        ],
        "{run:?}"
    );
    assert!(model.requests().is_empty(), "the model never heard it");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stop_hook_makes_the_agent_go_on_once_then_lets_it_stop() {
    let w = World::new();
    let log = w.scratch.join("stops");
    let hook = script(
        &w,
        "stop.py",
        &format!(
            r#"#!/usr/bin/env python3
import json, sys
data = json.load(sys.stdin)
with open({log:?}, "a") as f:
    f.write(str(data["stop_hook_active"]) + "\n")
if not data["stop_hook_active"]:
    print("run the tests first", file=sys.stderr)
    sys.exit(2)
"#,
            log = log.display().to_string()
        ),
    );
    user_hooks(&w, &[("Stop", "", command(hook.display().to_string()))]);
    let model = MockModel::start([anthropic::text("done"), anthropic::text("tests pass")]).await;
    let run = zot(&w, &model, &["-p", "--no-session", "fix it"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "tests pass\n");
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user");
    assert_eq!(last["content"][0]["text"], "run the tests first");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "False\nTrue\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hook_past_its_timeout_is_killed_with_its_group_and_fails_open() {
    let w = World::new();
    let pid_file = w.scratch.join("pid");
    let slow = format!("sleep 300 & echo $! > '{}'; wait", pid_file.display());
    user_hooks(
        &w,
        &[
            (
                "PreToolUse",
                "Bash",
                json!({"type": "command", "command": slow, "timeout": 1}),
            ),
            ("PreToolUse", "Bash", command("kill -SEGV $$")),
        ],
    );
    let model = MockModel::start([
        anthropic::tool_call("t1", "bash", r#"{"command":"echo ran"}"#),
        anthropic::text("ok"),
    ])
    .await;
    let run = zot(&w, &model, &["--json", "--no-session", "go"]);
    assert_eq!(run.code, 0, "{run:?}");
    let lines = typed_events(&run);
    let warnings: Vec<&str> = lines
        .iter()
        .filter_map(|e| match e {
            Event::ExtWarning {
                extension: Some(x),
                message,
            } if x == "hook:PreToolUse" => Some(message.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(warnings.len(), 2, "{run:?}");
    assert!(
        warnings.iter().any(|w| w.contains("timed out")),
        "{warnings:?}"
    );
    assert!(
        warnings.iter().any(|w| w.contains("failed")),
        "{warnings:?}"
    );
    assert!(result_text(&tool_result(&model, 1)).contains("\nran\n"));
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let gone = wait_for(Duration::from_secs(10), || {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_err()
    });
    assert!(
        gone,
        "the hook's background child was killed with its group"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn on_failure_block_turns_a_crash_into_a_block() {
    let w = World::new();
    user_hooks(
        &w,
        &[(
            "PreToolUse",
            "",
            json!({"type": "command", "command": "exit 7", "onFailure": "block"}),
        )],
    );
    let model = MockModel::start([
        anthropic::tool_call("t1", "bash", r#"{"command":"echo ran"}"#),
        anthropic::text("ok"),
    ])
    .await;
    // An ordinary non-zero exit is a warning, not a failure of the hook.
    let run = zot(&w, &model, &["-p", "--no-session", "go"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("hook:PreToolUse"), "{run:?}");
    assert!(result_text(&tool_result(&model, 1)).contains("\nran\n"));

    user_hooks(
        &w,
        &[(
            "PreToolUse",
            "",
            json!({"type": "command", "command": "kill -KILL $$", "onFailure": "block"}),
        )],
    );
    model.push(anthropic::tool_call(
        "t2",
        "bash",
        r#"{"command":"echo ran"}"#,
    ));
    model.push(anthropic::text("ok"));
    let run = zot(&w, &model, &["-p", "--no-session", "go"]);
    assert_eq!(run.code, 0, "{run:?}");
    let result = tool_result(&model, 3);
    assert_eq!(result["is_error"], true, "{result}");
    assert!(result_text(&result).contains("failed"), "{result}");
}

#[tokio::test(flavor = "multi_thread")]
async fn project_hooks_run_only_in_a_trusted_project_pinned_to_their_scripts() {
    let w = World::new();
    let marker = w.scratch.join("ran");
    std::fs::create_dir_all(w.project.join(".claude/hooks")).unwrap();
    let hook = w.project.join(".claude/hooks/mark.sh");
    std::fs::write(&hook, format!("echo ran >> '{}'\n", marker.display())).unwrap();
    let project_settings = json!({
        "permissions": {"allow": []},
        "hooks": {"UserPromptSubmit": [{"hooks": [
            {"type": "command", "command": "sh \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/mark.sh"},
            {"type": "prompt", "prompt": "is this fine?"}]}]}
    });
    std::fs::write(
        w.project.join(".claude/settings.json"),
        project_settings.to_string(),
    )
    .unwrap();
    let model = MockModel::start([
        anthropic::text("1"),
        anthropic::text("2"),
        anthropic::text("3"),
        anthropic::text("4"),
    ])
    .await;
    let ran = || {
        std::fs::read_to_string(&marker)
            .unwrap_or_default()
            .lines()
            .count()
    };

    let run = zot(&w, &model, &["-p", "--no-session", "hi"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(ran(), 0, "untrusted: not run");
    assert!(!run.stderr.contains("prompt hook"), "{run:?}");

    assert_eq!(w.zot(&["trust"]).code, 0);
    let run = zot(&w, &model, &["-p", "--no-session", "hi"]);
    assert_eq!(ran(), 1, "trusted: run {run:?}");
    assert!(
        run.stderr.contains("1 hook(s) not run")
            && run.stderr.contains("UserPromptSubmit prompt hook"),
        "one warning for the unsupported hook: {run:?}"
    );

    // Claude Code rewrites permissions on its own: trust stays.
    let mut changed = project_settings.clone();
    changed["permissions"]["allow"] = json!(["Bash(ls)"]);
    std::fs::write(w.project.join(".claude/settings.json"), changed.to_string()).unwrap();
    zot(&w, &model, &["-p", "--no-session", "hi"]);
    assert_eq!(ran(), 2, "permissions are not pinned");

    // The script it names is pinned.
    std::fs::write(
        &hook,
        format!(
            "echo ran >> '{}'; echo again >> '{}'\n",
            marker.display(),
            marker.display()
        ),
    )
    .unwrap();
    let run = zot(&w, &model, &["-p", "--no-session", "hi"]);
    assert_eq!(ran(), 2, "a changed script revokes trust: {run:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn disable_all_hooks_no_hooks_and_the_config_key() {
    let w = World::new();
    let marker = w.scratch.join("ran");
    let mark = |who: &str| command(format!("echo {who} >> '{}'", marker.display()));
    user_hooks(&w, &[("UserPromptSubmit", "", mark("user"))]);
    std::fs::create_dir_all(w.project.join(".zot")).unwrap();
    let write_project = |disable: bool| {
        let mut doc = settings(&[("UserPromptSubmit", "", mark("project"))]);
        doc["disableAllHooks"] = json!(disable);
        std::fs::write(w.project.join(".zot/hooks.json"), doc.to_string()).unwrap();
    };
    let model = MockModel::start((0..4).map(|_| anthropic::text("ok"))).await;
    // Hooks of one event run in parallel: which wrote first is not fixed.
    let take = || {
        let text = std::fs::read_to_string(&marker).unwrap_or_default();
        let _ = std::fs::remove_file(&marker);
        let mut lines: Vec<String> = text.lines().map(|l| format!("{l}\n")).collect();
        lines.sort();
        lines.concat()
    };

    write_project(false);
    zot(&w, &model, &["-p", "--no-session", "--trust", "hi"]);
    assert_eq!(take(), "project\nuser\n");

    write_project(true);
    zot(&w, &model, &["-p", "--no-session", "--trust", "hi"]);
    assert_eq!(
        take(),
        "user\n",
        "a project's disableAllHooks spares the user's"
    );

    zot(
        &w,
        &model,
        &["-p", "--no-session", "--trust", "--no-hooks", "hi"],
    );
    assert_eq!(take(), "");

    std::fs::write(w.home.join("config.json"), r#"{"hooks": false}"#).unwrap();
    let run = zot(&w, &model, &["-p", "--no-session", "--trust", "hi"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(take(), "");
}

#[tokio::test(flavor = "multi_thread")]
async fn hooks_list_and_doctor_show_every_hook_with_its_state() {
    let w = World::new();
    user_hooks(
        &w,
        &[
            (
                "PreToolUse",
                "Bash",
                json!({"type": "command", "command": "./guard.sh", "timeout": 30}),
            ),
            ("Stop", "", json!({"type": "agent", "prompt": "check"})),
        ],
    );
    std::fs::create_dir_all(w.project.join(".claude")).unwrap();
    std::fs::write(
        w.project.join(".claude/settings.json"),
        r#"{"hooks": {"PostToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "fmt"}, {"type": "command"}]}]}}"#,
    )
    .unwrap();
    let run = w.zot(&["hooks", "list", "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    let rows: Value = serde_json::from_str(&run.stdout).unwrap();
    let home_file = w.home.join("hooks.json").display().to_string();
    let project_file = w
        .project
        .join(".claude/settings.json")
        .display()
        .to_string();
    assert_eq!(
        rows,
        json!([
            {"source": home_file, "scope": "user", "event": "PreToolUse", "matcher": "Bash",
             "type": "command", "command": "./guard.sh", "timeout": 30.0, "supported": true,
             "trusted": true, "disabled": false},
            {"source": home_file, "scope": "user", "event": "Stop", "matcher": "",
             "type": "agent", "command": "", "timeout": null, "supported": false,
             "trusted": true, "disabled": false},
            {"source": project_file, "scope": "project", "event": "PostToolUse", "matcher": "Edit|Write",
             "type": "command", "command": "fmt", "timeout": null, "supported": true,
             "trusted": false, "disabled": false},
        ])
    );
    assert!(run.stderr.contains("command must be a string"), "{run:?}");

    let run = w.zot(&["hooks", "list"]);
    assert!(
        run.stdout
            .contains("PostToolUse Edit|Write: fmt [untrusted]"),
        "{run:?}"
    );

    std::fs::create_dir_all(w.project.join(".zot")).unwrap();
    std::fs::write(w.project.join(".zot/hooks.json"), "{ not json").unwrap();
    let run = w.zot(&["doctor", "--json"]);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {run:?}"));
    let problems = doc["problems"].to_string();
    assert!(
        problems.contains(".zot/hooks.json: not valid JSON"),
        "{doc}"
    );
    let warnings = doc["warnings"].to_string();
    assert!(
        warnings.contains("Stop agent hook is not run by zot"),
        "{doc}"
    );
    assert_eq!(doc["hooks"]["running"], 1, "{doc}");
}

#[tokio::test(flavor = "multi_thread")]
async fn continue_false_ends_the_run_after_the_call_with_its_reason() {
    let w = World::new();
    user_hooks(
        &w,
        &[(
            "PreToolUse",
            "Bash",
            command(r#"echo '{"continue": false, "stopReason": "enough for today"}'"#),
        )],
    );
    let model = MockModel::start([
        anthropic::tool_call("t1", "bash", r#"{"command":"echo ran"}"#),
        anthropic::text("never asked for"),
    ])
    .await;
    let run = zot(&w, &model, &["--json", "--no-session", "go"]);
    assert_eq!(run.code, 0, "{run:?}");
    let lines = typed_events(&run);
    let error = last_turn_error(&lines);
    assert_eq!(error.as_deref(), Some("enough for today"), "{run:?}");
    assert_eq!(model.requests().len(), 1, "the model is not called again");
}

#[tokio::test(flavor = "multi_thread")]
async fn project_hooks_run_under_the_policys_project_default_and_user_hooks_do_not() {
    let w = World::new();
    let outside = w.scratch.join("outside.txt");
    let inside = w.project.join("inside.txt");
    let write_both = format!(
        "echo x > '{}' 2>/dev/null; echo x > '{}'",
        outside.display(),
        inside.display()
    );
    std::fs::create_dir_all(w.project.join(".zot")).unwrap();
    std::fs::write(
        w.project.join(".zot/hooks.json"),
        settings(&[("UserPromptSubmit", "", command(&write_both))]).to_string(),
    )
    .unwrap();
    std::fs::write(
        w.home.join("permissions.json"),
        json!({"project_default": {"read": ["project"], "write": ["project"], "net": "none"}})
            .to_string(),
    )
    .unwrap();
    let model = MockModel::start([anthropic::text("1"), anthropic::text("2")]).await;
    let run = zot(&w, &model, &["-p", "--no-session", "--trust", "hi"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(inside.exists(), "the project is writable: {run:?}");
    assert!(!outside.exists(), "outside the project is not: {run:?}");

    // The same command as the user's own hook runs with the user's rights.
    std::fs::remove_file(w.project.join(".zot/hooks.json")).unwrap();
    user_hooks(&w, &[("UserPromptSubmit", "", command(&write_both))]);
    let run = zot(&w, &model, &["-p", "--no-session", "hi"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(outside.exists(), "{run:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn pre_tool_use_additional_context_reaches_the_model_with_the_result() {
    let w = World::new();
    only_hook(
        &w,
        "PreToolUse",
        "Bash",
        "context.py",
        r#"#!/usr/bin/env python3
import json, sys
command = json.load(sys.stdin)["tool_input"]["command"]
out = {"hookEventName": "PreToolUse", "additionalContext": "policy: " + command}
if "rm" in command:
    out["permissionDecision"] = "deny"
    out["permissionDecisionReason"] = "no deletes"
print(json.dumps({"hookSpecificOutput": out}))
"#,
    );
    let model = MockModel::start([
        anthropic::tool_call("t1", "bash", r#"{"command":"echo ran"}"#),
        anthropic::tool_call("t2", "bash", r#"{"command":"rm -f nothing"}"#),
        anthropic::text("ok"),
    ])
    .await;
    let run = zot(&w, &model, &["-p", "--no-session", "go"]);
    assert_eq!(run.code, 0, "{run:?}");
    // A call that runs: its output, then the hook's context.
    let ran = tool_result(&model, 1);
    assert_eq!(ran["is_error"], false, "{ran}");
    let text = result_text(&ran);
    assert!(text.starts_with("$ echo ran\n"), "{ran}");
    assert!(text.ends_with("\npolicy: echo ran"), "{ran}");
    // A refused call: the reason, then the context.
    let refused = tool_result(&model, 2);
    assert_eq!(refused["is_error"], true, "{refused}");
    assert_eq!(result_text(&refused), "no deletes\npolicy: rm -f nothing");
}

/// A PreToolUse hook that answers `ask` for every Bash call.
fn asking_hook(w: &World) {
    user_hooks(
        w,
        &[(
            "PreToolUse",
            "Bash",
            command(
                r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"a person must look at this"}}'"#,
            ),
        )],
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn ask_counts_as_a_deny_where_nobody_can_be_asked() {
    let w = World::new();
    asking_hook(&w);
    let touch = r#"{"command":"touch asked.txt"}"#;
    let model = MockModel::start([
        anthropic::tool_call("t1", "bash", touch),
        anthropic::text("ok"),
        anthropic::tool_call("t2", "bash", touch),
        anthropic::text("ok"),
        anthropic::tool_call("t3", "bash", touch),
        anthropic::text("ok"),
    ])
    .await;
    let refused = |n: usize| {
        let result = tool_result(&model, n);
        assert_eq!(result["is_error"], true, "{result}");
        assert_eq!(result_text(&result), "a person must look at this");
    };

    let run = zot(&w, &model, &["-p", "--no-session", "go"]);
    assert_eq!(run.code, 0, "{run:?}");
    refused(1);

    let run = zot(&w, &model, &["--json", "--no-session", "go"]);
    assert_eq!(run.code, 0, "{run:?}");
    let lines = typed_events(&run);
    assert!(
        !lines
            .iter()
            .any(|e| matches!(e, Event::ToolConfirmationRequested { .. })),
        "nobody is asked: {run:?}"
    );
    let is_error = first!(lines, Event::ToolResult { is_error, .. } => *is_error);
    assert!(is_error, "{run:?}");
    refused(3);

    let mut rpc = super::rpc::Rpc::start(&w, &model, "anthropic", &["--no-session"], None);
    rpc.send(r#"{"type":"prompt","message":"go"}"#);
    let result = rpc.until_event(|e| matches!(e, Event::ToolResult { .. }));
    let Event::ToolResult {
        is_error, content, ..
    } = &result
    else {
        unreachable!()
    };
    assert!(*is_error, "{result:?}");
    assert_eq!(text(&content[0]), "a person must look at this");
    rpc.done();
    assert_eq!(rpc.close(), 0);
    refused(5);
    assert!(!w.project.join("asked.txt").exists(), "never ran");
}

#[tokio::test(flavor = "multi_thread")]
async fn session_start_hears_compact_after_a_compaction() {
    let w = World::new();
    let log = w.scratch.join("sources");
    user_hooks(
        &w,
        &[
            (
                "SessionStart",
                "",
                command(record_input(&log, r#"d["source"]"#)),
            ),
            ("SessionStart", "compact", command("echo re-read the plan")),
        ],
    );
    let model = MockModel::start([
        anthropic::text("one"),
        anthropic::text("two"),
        anthropic::text("three"),
        anthropic::text("SUMMARY"),
        anthropic::text("four"),
    ])
    .await;
    let mut rpc = super::rpc::Rpc::start(&w, &model, "anthropic", &[], None);
    for n in 1..=3 {
        rpc.send(&format!(r#"{{"type":"prompt","message":"message {n}"}}"#));
        rpc.done();
    }
    rpc.send(r#"{"type":"compact"}"#);
    rpc.until_event(|e| matches!(e, Event::CompactDone { .. }));
    rpc.send(r#"{"type":"prompt","message":"message 4"}"#);
    rpc.done();
    assert_eq!(rpc.close(), 0);
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "startup\ncompact\n");
    let requests = model.requests();
    let last = requests.last().unwrap().body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    let blocks: Vec<&str> = last["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["text"].as_str().unwrap())
        .collect();
    assert_eq!(blocks, ["re-read the plan", "message 4"], "{last}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hooks_stdout_and_stderr_are_kept_up_to_one_mib_each() {
    const MIB: usize = 1 << 20;
    let w = World::new();
    // Three times the cap on stdout: the rest is read and dropped, so the
    // hook never blocks on a full pipe and exits on its own.
    user_hooks(
        &w,
        &[(
            "UserPromptSubmit",
            "",
            command("head -c 3145728 /dev/zero | tr '\\0' x"),
        )],
    );
    let model = MockModel::start([anthropic::text("ok")]).await;
    let run = zot(&w, &model, &["-p", "--no-session", "hello"]);
    assert_eq!(run.code, 0, "{run:?}");
    let body = &model.requests()[0].body;
    let context = body["messages"][0]["content"][0]["text"].as_str().unwrap();
    assert_eq!(context.len(), MIB);
    assert!(context.bytes().all(|b| b == b'x'));
    assert_eq!(body["messages"][0]["content"][1]["text"], "hello");

    // Twice the cap on stderr, as the reason of a block.
    user_hooks(
        &w,
        &[(
            "UserPromptSubmit",
            "",
            command("head -c 2097152 /dev/zero | tr '\\0' y >&2; exit 2"),
        )],
    );
    let run = zot(&w, &model, &["--json", "--no-session", "hello"]);
    assert_eq!(run.code, 1, "{}", &run.stderr);
    let lines = typed_events(&run);
    let Event::PromptBlocked { reason, .. } = &lines[0] else {
        panic!("not prompt_blocked: {:?}", lines[0])
    };
    assert_eq!(reason.len(), MIB);
    assert!(reason.bytes().all(|b| b == b'y'));
}

#[tokio::test(flavor = "multi_thread")]
async fn load_warnings_are_said_once_however_often_extensions_reload() {
    let w = World::new();
    // A user hooks file with an entry of the wrong shape and an invalid
    // matcher, an untrusted project's hook, and a Markdown command file
    // whose name cannot be typed.
    std::fs::write(
        w.home.join("hooks.json"),
        r#"{"hooks": {"PreToolUse": [{"matcher": "(", "hooks": [{"type": "command", "command": "true"}, {"type": "command", "command": 7}]}]}}"#,
    )
    .unwrap();
    std::fs::create_dir_all(w.project.join(".zot")).unwrap();
    std::fs::write(
        w.project.join(".zot/hooks.json"),
        settings(&[("Stop", "", command("true"))]).to_string(),
    )
    .unwrap();
    std::fs::create_dir_all(w.project.join(".claude/commands")).unwrap();
    std::fs::write(w.project.join(".claude/commands/bad name.md"), "x").unwrap();
    let model = MockModel::start([]).await;
    let mut rpc = super::rpc::Rpc::start(&w, &model, "anthropic", &["--no-session"], None);
    let mut warnings: Vec<String> = Vec::new();
    for _ in 0..3 {
        rpc.send(r#"{"type":"reload_extensions"}"#);
        rpc.until_event(|e| {
            warnings.extend(warning_text(e));
            matches!(e, Event::Response(r) if r.command == "reload_extensions")
        });
    }
    assert_eq!(rpc.close(), 0);
    warnings.sort();
    let mut distinct = warnings.clone();
    distinct.dedup();
    assert_eq!(warnings, distinct, "each warning once");
    for expected in [
        "command must be a string",
        "is not a valid pattern",
        "1 project hook(s) not run",
    ] {
        assert!(
            warnings.iter().any(|w| w.contains(expected)),
            "{expected}: {warnings:#?}"
        );
    }
    // The Markdown file was reported at start-up (on stderr), not at reloads.
    assert!(
        !warnings.iter().any(|w| w.contains("bad name.md")),
        "{warnings:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn post_tool_use_blocks_reach_the_model_and_continue_false_ends_the_run() {
    let w = World::new();
    user_hooks(
        &w,
        &[
            (
                "PostToolUse",
                "Bash",
                command("echo 'the build broke' >&2; exit 2"),
            ),
            (
                "PostToolUse",
                "Write",
                command(r#"echo '{"continue": false, "stopReason": "written; over to you"}'"#),
            ),
        ],
    );
    let model = MockModel::start([
        anthropic::tool_call("t1", "bash", r#"{"command":"echo built"}"#),
        anthropic::tool_call("t2", "write", r#"{"path":"a.txt","content":"a"}"#),
        anthropic::text("never asked for"),
    ])
    .await;
    let run = zot(&w, &model, &["--json", "--no-session", "go"]);
    assert_eq!(run.code, 0, "{run:?}");
    let text = result_text(&tool_result(&model, 1));
    assert!(text.contains("\nbuilt\n"), "{text}");
    assert!(text.ends_with("the build broke"), "{text}");
    let lines = typed_events(&run);
    let error = last_turn_error(&lines);
    assert_eq!(error.as_deref(), Some("written; over to you"), "{run:?}");
    assert!(w.project.join("a.txt").exists());
    assert_eq!(model.requests().len(), 2, "the model is not called again");
}

#[tokio::test(flavor = "multi_thread")]
async fn clear_ends_the_session_for_hooks_and_system_messages_and_rewrites_are_reported() {
    let w = World::new();
    let log = w.scratch.join("sessions");
    let record = |field: &str| {
        command(record_input(
            &log,
            &format!(r#"d["hook_event_name"], d["{field}"]"#),
        ))
    };
    let rewrite = |to: &str| {
        command(format!(
            r#"echo '{{"hookSpecificOutput":{{"hookEventName":"PreToolUse","updatedInput":{{"command":"echo {to}"}}}}}}'"#
        ))
    };
    user_hooks(
        &w,
        &[
            ("SessionStart", "", record("source")),
            ("SessionEnd", "", record("reason")),
            (
                "UserPromptSubmit",
                "",
                command(
                    r#"echo '{"systemMessage": "mind the style guide", "suppressOutput": true}'"#,
                ),
            ),
            // Two rewrites: the last in configuration order wins, with a warning.
            ("PreToolUse", "Bash", rewrite("first")),
            ("PreToolUse", "Bash", rewrite("second")),
        ],
    );
    let model = MockModel::start([
        anthropic::tool_call("t1", "bash", r#"{"command":"echo asked"}"#),
        anthropic::text("one"),
        anthropic::text("two"),
    ])
    .await;
    let mut rpc = super::rpc::Rpc::start(&w, &model, "anthropic", &[], None);
    let mut warnings = Vec::new();
    let mut note = |e: &Event| warnings.extend(warning_text(e));
    rpc.send(r#"{"type":"prompt","message":"first"}"#);
    rpc.until_event(|e| {
        note(e);
        *e == Event::Done
    });
    rpc.send(r#"{"type":"clear"}"#);
    rpc.response("clear");
    rpc.send(r#"{"type":"prompt","message":"second"}"#);
    rpc.until_event(|e| {
        note(e);
        *e == Event::Done
    });
    assert_eq!(rpc.close(), 0);
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "SessionStart startup\nSessionEnd clear\nSessionStart clear\nSessionEnd other\n"
    );
    let said = warnings
        .iter()
        .filter(|w| w.contains("hook:UserPromptSubmit") && w.contains("mind the style guide"))
        .count();
    assert_eq!(said, 2, "once per prompt: {warnings:#?}");
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("hook:PreToolUse")
                && w.contains("2 hooks rewrote the input of Bash")),
        "{warnings:#?}"
    );
    let result = result_text(&tool_result(&model, 1));
    assert!(result.starts_with("$ echo second\n"), "{result}");
}

#[tokio::test(flavor = "multi_thread")]
async fn pre_compact_hears_auto_when_the_context_fills_up() {
    let w = World::new();
    let log = w.scratch.join("compactions");
    user_hooks(
        &w,
        &[
            (
                "PreCompact",
                "auto",
                command(record_input(
                    &log,
                    r#"d["trigger"], repr(d["custom_instructions"])"#,
                )),
            ),
            (
                "PreCompact",
                "manual",
                command(format!("echo wrong >> '{}'", log.display())),
            ),
        ],
    );
    let model = MockModel::start(
        turns_filling_the_context()
            .into_iter()
            .chain([anthropic::text("SUMMARY"), anthropic::text("finished")]),
    )
    .await;
    let run = zot(&w, &model, &["--json", "--no-session", "big task"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        typed_events(&run).iter().any(|e| matches!(
            e,
            Event::CompactDone {
                automatic: true,
                ..
            }
        )),
        "{run:?}"
    );
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "auto ''\n");
}

/// A trusted project whose `event` hook runs
/// `sh tools/check.sh`, which sources `tools/helper.sh`, which appends `v1`
/// to `marker`. Returns the helper's path.
pub(super) fn hook_sourcing_a_helper(w: &World, event: &str, marker: &Path) -> PathBuf {
    let tools = w.project.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::write(
        tools.join("check.sh"),
        ". \"$CLAUDE_PROJECT_DIR/tools/helper.sh\"\n",
    )
    .unwrap();
    let helper = tools.join("helper.sh");
    std::fs::write(&helper, format!("echo v1 >> '{}'\n", marker.display())).unwrap();
    std::fs::create_dir_all(w.project.join(".claude")).unwrap();
    std::fs::write(
        w.project.join(".claude/settings.json"),
        settings(&[(event, "", command("sh tools/check.sh"))]).to_string(),
    )
    .unwrap();
    assert_eq!(w.zot(&["trust"]).code, 0);
    helper
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sandboxed_command_rewriting_what_a_hook_sources_stops_the_hook() {
    let w = World::new();
    let marker = w.scratch.join("ran");
    hook_sourcing_a_helper(&w, "PostToolUse", &marker);
    // The helper is pinned with the directory of the script the hook names.
    let list = w.zot(&["trust", "--list"]);
    assert!(list.stdout.contains("trusted"), "{list:?}");
    let rewrite = format!(
        "printf 'echo v2 >> {}\\n' > tools/helper.sh",
        marker.display()
    );
    let model = MockModel::start([
        anthropic::tool_call("b1", "bash", &json!({"command": "true"}).to_string()),
        anthropic::tool_call("b2", "bash", &json!({ "command": rewrite }).to_string()),
        anthropic::text("done"),
    ])
    .await;
    let run = zot(
        &w,
        &model,
        &["-p", "--no-session", "--sandbox", "workspace", "go"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap_or_default(),
        "v1\n",
        "the hook ran once as trusted, and not with the rewritten helper: {run:?}"
    );
    assert_eq!(
        run.stderr.matches("changed tools/helper.sh").count(),
        1,
        "said once: {run:?}"
    );
    // The project counts as changed until the user trusts it again.
    let list = w.zot(&["trust", "--list"]);
    assert!(list.stdout.contains("changed tools/helper.sh"), "{list:?}");
}

/// A nimlet extension whose `tool_result` interceptor marks every output.
const MARKING_EXTENSION: &str = r#"#!/usr/bin/env python3
import json, sys
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
send({"type": "register", "commands": [], "tools": [], "events": ["tool_result"]})
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("type") == "event":
        send({"type": "response", "id": msg["id"],
              "output": msg["payload"]["output"] + " [marked]"})
    elif msg.get("type") == "shutdown":
        break
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_result_is_raised_once_the_extension_rewrites_then_the_hook_adds_context() {
    let w = World::new();
    let ext = w.scratch.join("marker");
    std::fs::create_dir_all(&ext).unwrap();
    std::fs::write(
        ext.join("extension.json"),
        r#"{"name":"marker","command":["./extension.py"]}"#,
    )
    .unwrap();
    zot_testkit::write_exec(&ext.join("extension.py"), MARKING_EXTENSION);
    let seen = w.scratch.join("seen");
    let hook = format!(
        r#"{} && echo '{{"hookSpecificOutput":{{"hookEventName":"PostToolUse","additionalContext":"reviewed"}}}}'"#,
        record_input(&seen, r#"d["tool_response"]["output"]"#)
    );
    user_hooks(&w, &[("PostToolUse", "Bash", command(hook))]);
    let model = MockModel::start([
        anthropic::tool_call("t1", "bash", r#"{"command":"echo built"}"#),
        anthropic::text("done"),
    ])
    .await;
    let run = zot(
        &w,
        &model,
        &[
            "--json",
            "--no-session",
            "--ext",
            ext.to_str().unwrap(),
            "go",
        ],
    );
    assert_eq!(run.code, 0, "{run:?}");
    // The hook hears the output as the extension's interceptor left it…
    let heard = std::fs::read_to_string(&seen).unwrap();
    assert!(heard.starts_with("$ echo built\n"), "{heard:?}");
    assert!(heard.trim_end().ends_with("[exit 0] [marked]"), "{heard:?}");
    // …and the model reads that output, then what the hook added.
    let text = result_text(&tool_result(&model, 1));
    assert!(text.ends_with("[exit 0] [marked]\nreviewed"), "{text}");
}
