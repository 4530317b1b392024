//! A project's `.claude/` folder through the built binary: Markdown
//! commands, skills, `CLAUDE.md` context and the `permissions` warning, in
//! print, JSON, RPC and TUI modes, against the loopback model server.

use std::path::Path;

use serde_json::Value;
use zot_testkit::{MockModel, anthropic};

use super::rpc::Rpc;
use super::support::{Event, Run, World, typed_events};
use super::tui::Tmux;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn zot(w: &World, model: &MockModel, args: &[&str]) -> Run {
    let mut all = vec!["--no-session"];
    all.extend_from_slice(args);
    w.against(model, "anthropic", &all).output().unwrap().into()
}

/// The text of the first user message of request `n`.
fn prompt_of(model: &MockModel, n: usize) -> String {
    let body = &model.requests()[n].body;
    body["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text prompt in {body}"))
        .to_owned()
}

/// Request `n`'s system prompt has the project's `CLAUDE.md` and its import.
fn assert_claude_md(model: &MockModel, n: usize) {
    let system = model.requests()[n].body["system"].to_string();
    assert!(
        system.contains("PROJECT-MEMORY, see @docs/memory.md"),
        "{system}"
    );
    assert!(system.contains("IMPORTED-MEMORY"), "{system}");
}

const REVIEW: &str = "---
description: Review a pull request
argument-hint: [pr-number] [priority]
---
Review PR #$1 at priority $2 (all: $ARGUMENTS).
Notes: @notes.md
Status: !`echo shell-ran-$1 in \"$CLAUDE_PROJECT_DIR\"`
Gone: @missing.md
";

/// A project with Markdown commands, a user with their own, one of each name.
fn commands_world() -> World {
    let w = World::new();
    write(&w.project.join(".claude/commands/review.md"), REVIEW);
    write(
        &w.project.join(".claude/commands/git/commit.md"),
        "---\ndescription: Commit staged work\n---\nCommit with message: $ARGUMENTS",
    );
    write(
        &w.project.join(".claude/commands/help.md"),
        "NOT THE BUILT-IN",
    );
    write(&w.project.join("notes.md"), "NOTES-CONTENT");
    write(
        &w.project.join("CLAUDE.md"),
        "PROJECT-MEMORY, see @docs/memory.md",
    );
    write(&w.project.join("docs/memory.md"), "IMPORTED-MEMORY");
    let user = w.scratch.join(".claude/commands");
    write(&user.join("review.md"), "USER REVIEW (shadowed)");
    write(
        &user.join("mine.md"),
        "Mine: !`echo user-shell-ran` and @~/secret.txt",
    );
    write(&w.scratch.join("secret.txt"), "USER-FILE");
    w
}

#[tokio::test(flavor = "multi_thread")]
async fn markdown_commands_expand_into_the_prompt_in_print_mode() {
    let w = commands_world();
    let model = MockModel::start([
        anthropic::text("ok"),
        anthropic::text("ok"),
        anthropic::text("ok"),
        anthropic::text("ok"),
        anthropic::text("ok"),
    ])
    .await;

    // Untrusted: arguments and files inside the project, no shell.
    let run = zot(&w, &model, &["-p", "/review 42 \"very high\""]);
    assert_eq!(run.code, 0, "{run:?}");
    let prompt = prompt_of(&model, 0);
    assert!(
        prompt.starts_with("Review PR #42 at priority very high (all: 42 \"very high\")."),
        "{prompt}"
    );
    assert!(
        prompt.contains("<file path=\"notes.md\">\nNOTES-CONTENT\n</file>"),
        "{prompt}"
    );
    assert!(
        prompt.contains(
            "[!`echo shell-ran-42 in \"$CLAUDE_PROJECT_DIR\"` not run: this project is not trusted"
        ),
        "{prompt}"
    );
    assert!(
        prompt.contains("Gone: [@missing.md: no such file]"),
        "{prompt}"
    );
    assert!(
        !prompt.contains("USER REVIEW"),
        "the project's command wins"
    );

    // Trusted for this run: the shell runs, with the arguments substituted.
    let run = zot(&w, &model, &["--trust", "-p", "/review 7"]);
    assert_eq!(run.code, 0, "{run:?}");
    let prompt = prompt_of(&model, 1);
    let project = w.project.display();
    assert!(
        prompt.contains(&format!("Status: shell-ran-7 in {project}\n")),
        "{prompt}"
    );
    assert!(!prompt.contains("not run"), "{prompt}");

    // A folder makes `/folder:name`; names match in any case.
    let run = zot(&w, &model, &["-p", "/GIT:commit fix the bug"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(prompt_of(&model, 2), "Commit with message: fix the bug");

    // The user's own commands run their shell and read their files anywhere.
    let run = zot(&w, &model, &["-p", "/mine extra words"]);
    assert_eq!(run.code, 0, "{run:?}");
    let prompt = prompt_of(&model, 3);
    assert!(
        prompt.starts_with(
            "Mine: user-shell-ran and <file path=\"~/secret.txt\">\nUSER-FILE\n</file>"
        ),
        "{prompt}"
    );
    assert!(
        prompt.ends_with("ARGUMENTS: extra words"),
        "a template without $ARGUMENTS gets them appended: {prompt}"
    );

    // A project command that links out of the untrusted project is refused.
    std::os::unix::fs::symlink(
        w.scratch.join("secret.txt"),
        w.project.join(".claude/commands/leak.md"),
    )
    .unwrap();
    let run = zot(&w, &model, &["-p", "/leak"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("leak.md links outside the project, which is not trusted"),
        "{run:?}"
    );

    // A built-in name is never a Markdown command, outside the TUI either.
    let run = zot(&w, &model, &["-p", "/help"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("unknown command /help"), "{run:?}");
    assert_eq!(model.requests().len(), 4);
}

const REVIEW_EXT: &str = r#"
handshake(NAME)
emit({"type":"register_command","name":"review","description":"the extension's review"})
emit({"type":"ready"})
for msg in frames():
    if msg["type"] == "command_invoked":
        emit({"type":"command_response","id":msg["id"],"action":"display","display":"EXTENSION REVIEW"})
"#;

#[tokio::test(flavor = "multi_thread")]
async fn json_mode_runs_markdown_commands_and_extensions_win_their_names() {
    let w = commands_world();
    let ext = w.py_ext("reviewer", REVIEW_EXT);
    let model = MockModel::start([anthropic::text("committed")]).await;

    let run = zot(&w, &model, &["--json", "/git:commit tidy up"]);
    assert_eq!(run.code, 0, "{run:?}");
    let lines = typed_events(&run);
    assert!(lines.contains(&Event::Done), "{lines:?}");
    assert_eq!(prompt_of(&model, 0), "Commit with message: tidy up");
    assert_claude_md(&model, 0);

    let run = zot(
        &w,
        &model,
        &["--ext", ext.to_str().unwrap(), "--json", "/review 1"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let lines = typed_events(&run);
    assert!(
        lines.contains(&Event::ExtDisplay {
            extension: "reviewer".into(),
            command: "review".into(),
            text: "EXTENSION REVIEW".into()
        }),
        "{lines:?}"
    );
    assert_eq!(
        model.requests().len(),
        1,
        "the extension's command needs no model"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn rpc_lists_markdown_commands_and_prompts_with_them() {
    let w = commands_world();
    let model = MockModel::start([anthropic::text("reviewed")]).await;
    let mut rpc = Rpc::start(&w, &model, "anthropic", &[], None);
    rpc.send(r#"{"type":"get_commands"}"#);
    let commands = rpc.response("get_commands")["data"]["commands"].clone();
    let named = |name: &str| -> Vec<Value> {
        commands
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["name"] == name)
            .cloned()
            .collect()
    };
    let review = named("review");
    assert_eq!(review.len(), 1, "{commands}");
    assert_eq!(review[0]["source"], "markdown");
    assert_eq!(review[0]["scope"], "project");
    assert_eq!(review[0]["description"], "Review a pull request");
    assert_eq!(review[0]["argument_hint"], "[pr-number] [priority]");
    assert!(
        review[0]["path"]
            .as_str()
            .unwrap()
            .ends_with(".claude/commands/review.md")
    );
    assert_eq!(named("git:commit")[0]["source"], "markdown");
    assert_eq!(named("mine")[0]["scope"], "user");
    let help = named("help");
    assert_eq!(help.len(), 1, "the built-in wins: {commands}");
    assert_eq!(help[0]["source"], "builtin");

    rpc.send(r#"{"type":"prompt","message":"/review 9 low"}"#);
    rpc.until_event(|e| *e == Event::Done);
    assert!(prompt_of(&model, 0).starts_with("Review PR #9 at priority low"));
    assert_claude_md(&model, 0);
    assert_eq!(rpc.close(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn claude_skills_context_files_and_the_permissions_warning() {
    let w = World::new();
    write(
        &w.project.join(".claude/skills/pdf/SKILL.md"),
        "---\nname: pdf\ndescription: fill PDF forms\n---\nUse pdftk.\n",
    );
    // zot's and the shared skill folders are gated like Claude Code's.
    write(
        &w.project.join(".zot/skills/deploy/SKILL.md"),
        "---\nname: deploy\ndescription: ship it\n---\nRun ./deploy.sh.\n",
    );
    write(
        &w.project.join(".agents/skills/lint/SKILL.md"),
        "---\nname: lint\ndescription: lint it\n---\nRun ./lint.sh.\n",
    );
    write(
        &w.scratch.join(".claude/skills/tone/SKILL.md"),
        "---\nname: tone\ndescription: house writing style\n---\nBe brief.\n",
    );
    write(
        &w.project.join("CLAUDE.md"),
        "Project memory. See @docs/rules.md.",
    );
    write(&w.project.join("docs/rules.md"), "RULE: tabs, not spaces.");
    write(&w.project.join("CLAUDE.local.md"), "LOCAL: my sandbox URL.");
    write(
        &w.project.join(".claude/settings.json"),
        r#"{"permissions": {"allow": ["Bash(npm test)"]}}"#,
    );
    let model = MockModel::start([
        anthropic::text("untrusted"),
        anthropic::tool_call("s1", "skill", r#"{"name":"pdf"}"#),
        anthropic::text("filled"),
    ])
    .await;

    let run = zot(&w, &model, &["-p", "hi"]);
    assert_eq!(run.code, 0, "{run:?}");
    let system = model.requests()[0].body["system"].to_string();
    for part in [
        "Project memory. See @docs/rules.md.",
        "RULE: tabs, not spaces.",
        "(imported by",
        "LOCAL: my sandbox URL.",
        "- tone: house writing style",
    ] {
        assert!(system.contains(part), "{part} missing from {system}");
    }
    for skill in ["- pdf:", "- deploy:", "- lint:"] {
        assert!(
            !system.contains(skill),
            "untrusted project skill {skill} stays out: {system}"
        );
    }
    assert!(
        run.stderr
            .contains("skills in .zot/skills, .agents/skills, .claude/skills are not loaded"),
        "{run:?}"
    );
    assert_eq!(
        run.stderr.matches("are not enforced by zot").count(),
        1,
        "{run:?}"
    );

    let run = zot(&w, &model, &["--trust", "-p", "fill the form"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "filled\n");
    let system = model.requests()[1].body["system"].to_string();
    for skill in [
        "- pdf: fill PDF forms",
        "- deploy: ship it",
        "- lint: lint it",
    ] {
        assert!(system.contains(skill), "{skill} missing from {system}");
    }
    let result = &model.requests()[2].body["messages"][2]["content"][0];
    assert!(
        result["content"].to_string().contains("Use pdftk."),
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_tui_popup_shows_markdown_commands_and_runs_them() {
    let w = commands_world();
    let model = MockModel::start([anthropic::text("Committed it.")]).await;
    write(
        &w.project.join(".claude/skills/pdf/SKILL.md"),
        "---\nname: pdf\n---\n",
    );
    let tmux = Tmux::against(&w, "claude", &model, &[]);
    // The project is not trusted: the dialog names its commands and skills.
    let screen = tmux.wait_for("Untrusted project");
    assert!(
        screen.contains("2 Markdown commands in .claude/commands"),
        "{screen}"
    );
    assert!(screen.contains("skills in .claude/skills"), "{screen}");
    tmux.type_text("n");
    tmux.wait_for("anthropic/claude-sonnet-5-5");
    // What start-up left out is said on the screen, not behind it.
    tmux.wait_for("skills in .claude/skills are not loaded");
    // The built-ins fill the popup's first rows; a prefix brings the
    // Markdown group into view.
    tmux.type_text("/re");
    let screen = tmux.wait_for("/review         [pr-number] [priority]  Review a pull request");
    assert!(screen.contains("── .claude/commands ──"), "{screen}");
    tmux.keys(&["BSpace", "BSpace"]);
    tmux.type_text("git:");
    let screen = tmux.wait_for("Commit staged work");
    assert!(screen.contains("/git:commit"), "{screen}");
    tmux.type_text("commit ship it");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Committed it.");
    assert_eq!(prompt_of(&model, 0), "Commit with message: ship it");
    assert_claude_md(&model, 0);
}

/// Whether `pid` runs (a zombie does not count).
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn aborting_stops_a_slow_command_expansion_in_print_and_rpc_modes() {
    use std::time::Duration;
    use zot_testkit::wait::eventually;

    let w = World::new();
    write(
        &w.scratch.join(".claude/commands/slow.md"),
        "Slow: !`echo $$ > \"$CLAUDE_PROJECT_DIR/started\"; exec sleep 600`",
    );
    let started = w.project.join("started");
    let shell_pid = || {
        std::fs::read_to_string(&started)
            .ok()
            .filter(|t| t.ends_with('\n'))
            .map(|t| t.trim().to_owned())
    };
    let model = MockModel::start([]).await;

    // Print mode: Ctrl+C (SIGINT) while the shell runs.
    let mut child = w
        .against(&model, "anthropic", &["--no-session", "-p", "/slow"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    assert!(eventually(Duration::from_secs(10), || shell_pid().is_some()).await);
    let pid = shell_pid().unwrap();
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert!(
        eventually(Duration::from_secs(10), || child
            .try_wait()
            .unwrap()
            .is_some())
        .await,
        "zot -p did not stop"
    );
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "interrupted, as shells say it"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("zot: aborted"));
    assert!(eventually(Duration::from_secs(10), || !alive(&pid)).await);

    // RPC: `abort` while the shell runs.
    std::fs::remove_file(&started).unwrap();
    let mut rpc = Rpc::start(&w, &model, "anthropic", &[], None);
    rpc.send(r#"{"type":"prompt","message":"/slow"}"#);
    assert!(eventually(Duration::from_secs(10), || shell_pid().is_some()).await);
    let pid = shell_pid().unwrap();
    rpc.send(r#"{"type":"abort"}"#);
    let error = rpc.until_event(|e| matches!(e, Event::Error { .. }));
    assert_eq!(
        error,
        Event::Error {
            message: "aborted".into()
        }
    );
    rpc.until_event(|e| *e == Event::Done);
    assert!(eventually(Duration::from_secs(10), || !alive(&pid)).await);
    assert_eq!(rpc.close(), 0);
    assert!(model.requests().is_empty());
}
