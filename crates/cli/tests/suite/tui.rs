//! End-to-end TUI runs in tmux (send-keys, capture-pane) against the
//! loopback model server and real extensions.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use zot_testkit::{MockModel, anthropic};

use super::support::{World, ZOT, record_input};

pub(super) struct Tmux {
    socket: String,
    dir: PathBuf,
}

impl Tmux {
    /// Starts `zot args…` in a 100x30 tmux session; when it exits, the
    /// terminal settings are saved to `<scratch>/stty.txt`.
    pub(super) fn start(w: &World, name: &str, args: &[&str], env: &[(&str, String)]) -> Self {
        Self::start_configured(w, name, args, env, "")
    }

    /// [`Tmux::start`] with the tmux server configured by `conf` (a
    /// `.tmux.conf`'s lines), read before zot starts.
    pub(super) fn start_configured(
        w: &World,
        name: &str,
        args: &[&str],
        env: &[(&str, String)],
        conf: &str,
    ) -> Self {
        let conf_file = w.scratch.join(format!("tmux-{name}.conf"));
        std::fs::write(&conf_file, conf).unwrap();
        let socket = format!("zot-test-{name}-{}", std::process::id());
        let quoted: Vec<String> = args.iter().map(|a| shell_quote(a)).collect();
        let mut vars: Vec<String> = vec![
            format!("ZOT_HOME={}", shell_quote(w.home.to_str().unwrap())),
            format!("HOME={}", shell_quote(w.scratch.to_str().unwrap())),
            "TERM=xterm-256color".into(),
        ];
        vars.extend(env.iter().map(|(k, v)| format!("{k}={}", shell_quote(v))));
        let stty = w.scratch.join("stty.txt");
        let script = format!(
            "cd {} && env -u ANTHROPIC_API_KEY -u OPENAI_API_KEY {} {} {}; stty -a > {}; sleep 30",
            shell_quote(w.project.to_str().unwrap()),
            vars.join(" "),
            shell_quote(ZOT),
            quoted.join(" "),
            shell_quote(stty.to_str().unwrap()),
        );
        let status = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "-f",
                conf_file.to_str().unwrap(),
                "new-session",
                "-d",
                "-x",
                "100",
                "-y",
                "30",
                "sh",
                "-c",
                &script,
            ])
            .status()
            .expect("tmux is needed for the TUI end-to-end tests");
        assert!(status.success());
        Self {
            socket,
            dir: w.scratch.clone(),
        }
    }

    /// [`Tmux::start`] with zot talking to the loopback `model` (Anthropic,
    /// no session) and `extra` arguments after.
    pub(super) fn against(w: &World, name: &str, model: &MockModel, extra: &[&str]) -> Self {
        Self::against_with(w, name, model, extra, &[])
    }

    /// [`Tmux::against`] with `env` set for zot.
    pub(super) fn against_with(
        w: &World,
        name: &str,
        model: &MockModel,
        extra: &[&str],
        env: &[(&str, String)],
    ) -> Self {
        let mut args = vec!["--no-session"];
        args.extend(extra);
        Self::keeping_session(w, name, model, &args, env)
    }

    /// [`Tmux::against_with`] keeping a session file.
    pub(super) fn keeping_session(
        w: &World,
        name: &str,
        model: &MockModel,
        extra: &[&str],
        env: &[(&str, String)],
    ) -> Self {
        let url = model.url();
        let mut args = vec![
            "--provider",
            "anthropic",
            "--api-key",
            "k",
            "--base-url",
            &url,
        ];
        args.extend(extra);
        Self::start(w, name, &args, env)
    }

    pub(super) fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The screen with its SGR escape sequences (`capture-pane -e`), for
    /// checking styles such as strike-through.
    pub(super) fn styled_screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-e"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub(super) fn wait_for(&self, text: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let screen = self.screen();
            if screen.contains(text) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "waited for {text:?}; the screen is:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until the editor's title says the turn is over (an answer's
    /// text shows while its turn is still running); the screen.
    pub(super) fn wait_idle(&self) -> String {
        self.wait_for("Enter send")
    }

    pub(super) fn keys(&self, keys: &[&str]) {
        let status = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys"])
            .args(keys)
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Runs `tmux args…` against this session's server; its stdout.
    pub(super) fn command(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "tmux {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Types text literally (no key-name interpretation).
    pub(super) fn type_text(&self, text: &str) {
        let status = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-l", text])
            .status()
            .unwrap();
        assert!(status.success());
    }

    fn stty_after_exit(&self) -> String {
        let path = self.dir.join("stty.txt");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !path.exists()
            || std::fs::read_to_string(&path)
                .unwrap_or_default()
                .is_empty()
        {
            assert!(
                Instant::now() < deadline,
                "zot did not exit; screen:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        std::fs::read_to_string(path).unwrap()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

const HELLO: &str = r#"
handshake(NAME)
emit({"type":"register_command","name":"hello","description":"say hello"})
emit({"type":"register_command","name":"note","description":"show a note"})
emit({"type":"register_command","name":"panel","description":"open a panel"})
emit({"type":"ready"})
cursor = 0
items = ["alpha", "beta", "gamma"]
def render():
    return ["> " + it if i == cursor else "  " + it for i, it in enumerate(items)]
log = open("panel.log", "a")
for msg in frames():
    t = msg["type"]
    if t == "command_invoked":
        if msg["name"] == "hello":
            emit({"type":"command_response","id":msg["id"],"action":"prompt","prompt":"Say hello to the TUI"})
        elif msg["name"] == "note":
            emit({"type":"command_response","id":msg["id"],"action":"display","display":"NOTE_FROM_EXTENSION_V1"})
        else:
            emit({"type":"command_response","id":msg["id"],"action":"open_panel",
                  "open_panel":{"id":"list","title":"Pick one","lines":render(),"footer":"arrows move, esc closes"}})
    elif t == "panel_key":
        log.write(json.dumps(msg) + "\n"); log.flush()
        if msg["key"] == "down":
            cursor = min(cursor + 1, len(items) - 1)
        elif msg["key"] == "up":
            cursor = max(cursor - 1, 0)
        emit({"type":"panel_render","panel_id":"list","lines":render()})
    elif t == "panel_close":
        log.write(json.dumps(msg) + "\n"); log.flush()
"#;

fn sane(stty: &str) {
    for flag in ["icanon", "echo", "isig"] {
        assert!(
            stty.split_whitespace().any(|w| w == flag),
            "terminal left without {flag}:\n{stty}"
        );
    }
}

fn panel_log(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("panel.log")).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn commands_notes_panels_and_a_clean_exit() {
    let w = World::new();
    let ext = w.py_ext("hello", HELLO);
    let model = MockModel::start([anthropic::text("Hello, TUI user!")]).await;
    let tmux = Tmux::against(&w, "main", &model, &["--ext", ext.to_str().unwrap()]);
    tmux.wait_for("anthropic/claude-sonnet-5-5");

    // The popup lists the extension's commands under the divider, past
    // the built-ins: Up from the first row wraps to the last.
    tmux.type_text("/");
    tmux.wait_for("/help");
    tmux.keys(&["Up"]);
    let screen = tmux.wait_for("── extensions ──");
    assert!(
        screen.contains("/hello") && screen.contains("say hello"),
        "{screen}"
    );
    tmux.keys(&["BSpace"]);

    // A prompt action reaches the model; the answer streams into the chat.
    tmux.type_text("/hello");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Hello, TUI user!");
    assert_eq!(
        model.requests()[0].body["messages"][0]["content"][0]["text"],
        "Say hello to the TUI"
    );

    // A display action shows a note, never sent to the model.
    tmux.type_text("/note");
    tmux.keys(&["Enter"]);
    tmux.wait_for("[hello] NOTE_FROM_EXTENSION_V1");
    assert_eq!(model.requests().len(), 1);

    // A panel takes the arrow keys and closes with Esc.
    tmux.type_text("/panel");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Pick one");
    tmux.keys(&["Down"]);
    tmux.wait_for("> beta");
    tmux.keys(&["Down"]);
    tmux.wait_for("> gamma");
    tmux.keys(&["Escape"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !panel_log(&ext).contains("panel_close") {
        assert!(
            Instant::now() < deadline,
            "no panel_close: {}",
            panel_log(&ext)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = panel_log(&ext);
    assert_eq!(log.matches(r#""key": "down""#).count(), 2, "{log}");
    assert!(!tmux.screen().contains("Pick one"));

    // Ctrl+C twice exits and the terminal is sane again.
    tmux.keys(&["C-c"]);
    tmux.wait_for("press Ctrl+C again to exit");
    tmux.keys(&["C-c"]);
    sane(&tmux.stty_after_exit());
}

#[tokio::test(flavor = "multi_thread")]
async fn reload_ext_picks_up_an_edited_extension() {
    let w = World::new();
    let ext = w.py_ext("hello", HELLO);
    let tmux = Tmux::start(
        &w,
        "reload",
        &["--no-session", "--ext", ext.to_str().unwrap()],
        &[],
    );
    tmux.wait_for("no model");
    tmux.type_text("/note");
    tmux.keys(&["Enter"]);
    tmux.wait_for("NOTE_FROM_EXTENSION_V1");

    let script = ext.join("ext.py");
    let text = std::fs::read_to_string(&script)
        .unwrap()
        .replace("NOTE_FROM_EXTENSION_V1", "NOTE_FROM_EXTENSION_V2");
    std::fs::write(&script, text).unwrap();
    tmux.type_text("/reload-ext");
    tmux.keys(&["Enter"]);
    tmux.wait_for("reloaded: 1 stopped, 1 loaded (1 ready)");
    tmux.type_text("/note");
    tmux.keys(&["Enter"]);
    tmux.wait_for("NOTE_FROM_EXTENSION_V2");

    // A broken edit: the error stays in the chat, in red, with the log path.
    std::fs::write(&script, "#!/bin/sh\nexit 4\n").unwrap();
    tmux.type_text("/reload-ext");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("1 error(s)");
    assert!(
        screen.contains("exit status: 4") && screen.contains("ext-hello.log"),
        "{screen}"
    );
    tmux.type_text("/exit");
    tmux.keys(&["Enter"]);
    sane(&tmux.stty_after_exit());
}

#[tokio::test(flavor = "multi_thread")]
async fn no_yolo_asks_before_each_tool_call() {
    let w = World::new();
    let model = MockModel::start([
        anthropic::tool_call("t1", "bash", r#"{"command":"touch refused.txt"}"#),
        anthropic::tool_call("t2", "bash", r#"{"command":"touch allowed.txt"}"#),
        anthropic::text("all done"),
    ])
    .await;
    let tmux = Tmux::against(&w, "confirm", &model, &["--no-yolo"]);
    tmux.wait_for("anthropic/claude-sonnet-5-5");
    tmux.type_text("make two files");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("Run this tool?");
    assert!(screen.contains("touch refused.txt"), "{screen}");
    tmux.type_text("n");
    // A refusal stops the turn; the next prompt says what to do instead.
    tmux.wait_for("type what to do instead");
    tmux.type_text("make allowed.txt");
    tmux.keys(&["Enter"]);
    tmux.wait_for("touch allowed.txt");
    tmux.type_text("y");
    tmux.wait_for("all done");
    assert!(!w.project.join("refused.txt").exists());
    assert!(w.project.join("allowed.txt").exists());
    let second = model.requests()[1].body.to_string();
    assert!(second.contains("tool call refused by user"), "{second}");
    tmux.type_text("/exit");
    tmux.keys(&["Enter"]);
    sane(&tmux.stty_after_exit());
}

#[tokio::test(flavor = "multi_thread")]
async fn continuing_a_session_shows_its_conversation() {
    let w = World::new();
    let model = MockModel::start([anthropic::text("I will remember 42.")]).await;
    let url = model.url();
    let first: super::support::Run = w
        .cmd(&[
            "--provider",
            "anthropic",
            "--api-key",
            "k",
            "--base-url",
            &url,
            "-p",
            "remember the number 42",
        ])
        .output()
        .unwrap()
        .into();
    assert_eq!(first.code, 0, "{first:?}");
    let args = [
        "--provider",
        "anthropic",
        "--api-key",
        "k",
        "--base-url",
        &url,
        "-c",
    ];
    let tmux = Tmux::start(&w, "resume", &args, &[]);
    let screen = tmux.wait_for("I will remember 42.");
    assert!(screen.contains("› remember the number 42"), "{screen}");
    tmux.type_text("/exit");
    tmux.keys(&["Enter"]);
    sane(&tmux.stty_after_exit());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_first_screen_without_a_key_says_how_to_get_one() {
    let w = World::new();
    let tmux = Tmux::start(&w, "nokey", &["--no-session"], &[]);
    let screen = tmux.wait_for("no API key");
    let flat = screen.split_whitespace().collect::<Vec<_>>().join(" ");
    for needle in [
        "ANTHROPIC_API_KEY",
        "zot auth login anthropic",
        "--provider ollama",
    ] {
        assert!(flat.contains(needle), "{needle}: {screen}");
    }
    tmux.type_text("/exit");
    tmux.keys(&["Enter"]);
    sane(&tmux.stty_after_exit());
}

#[tokio::test(flavor = "multi_thread")]
async fn model_is_saved_to_the_user_config_and_overrides_are_named() {
    let w = World::new();
    let model = MockModel::start([]).await;
    let tmux = Tmux::against(&w, "model", &model, &[]);
    tmux.wait_for("anthropic/claude-sonnet-5-5");
    tmux.type_text("/model claude-haiku-4-5");
    tmux.keys(&["Enter"]);
    tmux.wait_for("saved to");
    let config = std::fs::read_to_string(w.home.join("config.json")).unwrap();
    let config: serde_json::Value = serde_json::from_str(&config).unwrap();
    assert_eq!(config["model"], "claude-haiku-4-5");
    tmux.type_text("/exit");
    tmux.keys(&["Enter"]);
    sane(&tmux.stty_after_exit());
    drop(tmux);

    let tmux = Tmux::against_with(
        &w,
        "model-env",
        &model,
        &[],
        &[("ZOT_MODEL", "claude-opus-4-1".to_owned())],
    );
    tmux.wait_for("claude-opus-4-1");
    tmux.type_text("/model claude-sonnet-4-5");
    tmux.keys(&["Enter"]);
    tmux.wait_for("ZOT_MODEL overrides");
    tmux.type_text("/exit");
    tmux.keys(&["Enter"]);
    sane(&tmux.stty_after_exit());
}

/// A PreToolUse hook that allows `touch auto…`, asks about `touch ask…`,
/// and a Notification hook that logs what zot waits for.
fn permission_hooks(w: &World) -> PathBuf {
    let notes = w.scratch.join("notifications");
    let guard = w.scratch.join("guard.py");
    std::fs::write(
        &guard,
        r#"import json, sys
command = json.load(sys.stdin)["tool_input"]["command"]
decision = "allow" if "auto" in command else "ask" if "ask" in command else None
if decision:
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": decision, "permissionDecisionReason": "the hook wants a look"}}))
"#,
    )
    .unwrap();
    let hooks = serde_json::json!({"hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": format!("python3 {}", guard.display())}]}],
        "Notification": [{"hooks": [{"type": "command",
            "command": record_input(&notes, r#"d["message"]"#)}]}],
    }});
    std::fs::write(w.home.join("hooks.json"), hooks.to_string()).unwrap();
    notes
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hooks_ask_forces_the_confirmation_under_yolo_and_hooks_lists_them() {
    let w = World::new();
    let notes = permission_hooks(&w);
    let model = MockModel::start([
        anthropic::tool_call("t1", "bash", r#"{"command":"touch ask-no.txt"}"#),
        anthropic::tool_call("t2", "bash", r#"{"command":"touch ask-yes.txt"}"#),
        anthropic::tool_call("t3", "bash", r#"{"command":"touch plain.txt"}"#),
        anthropic::text("all done"),
    ])
    .await;
    let tmux = Tmux::against(&w, "hook-ask", &model, &[]);
    tmux.wait_for("anthropic/claude-sonnet-5-5");
    tmux.type_text("/hooks");
    tmux.keys(&["Enter"]);
    tmux.wait_for("PreToolUse Bash: python3");
    tmux.type_text("make files");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("Run this tool?");
    assert!(screen.contains("touch ask-no.txt"), "{screen}");
    tmux.type_text("n");
    // The refusal stops the turn; the user's next prompt sends it on.
    tmux.wait_for("type what to do instead");
    tmux.type_text("go on");
    tmux.keys(&["Enter"]);
    // The call shows before its question (the Notification hook runs between).
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let screen = tmux.screen();
        if screen.contains("touch ask-yes.txt") && screen.contains("Run this tool?") {
            break;
        }
        assert!(Instant::now() < deadline, "no second question:\n{screen}");
        std::thread::sleep(Duration::from_millis(50));
    }
    tmux.type_text("y");
    // No hook decision and yolo: it runs without a question.
    tmux.wait_for("all done");
    assert!(!w.project.join("ask-no.txt").exists());
    assert!(w.project.join("ask-yes.txt").exists());
    assert!(w.project.join("plain.txt").exists());
    let noted = std::fs::read_to_string(&notes).unwrap();
    assert_eq!(
        noted,
        "zot needs your permission to use bash\nzot needs your permission to use bash\n"
    );
    tmux.type_text("/exit");
    tmux.keys(&["Enter"]);
    sane(&tmux.stty_after_exit());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hooks_allow_skips_the_no_yolo_confirmation() {
    let w = World::new();
    permission_hooks(&w);
    let model = MockModel::start([
        anthropic::tool_call("t1", "bash", r#"{"command":"touch auto.txt"}"#),
        anthropic::tool_call("t2", "bash", r#"{"command":"touch asked.txt"}"#),
        anthropic::text("all done"),
    ])
    .await;
    let tmux = Tmux::against(&w, "hook-allow", &model, &["--no-yolo"]);
    tmux.wait_for("anthropic/claude-sonnet-5-5");
    tmux.type_text("make files");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("Run this tool?");
    // The first call was allowed by the hook: the only question is the second's.
    assert!(screen.contains("touch asked.txt"), "{screen}");
    assert!(w.project.join("auto.txt").exists());
    tmux.type_text("y");
    tmux.wait_for("all done");
    assert!(w.project.join("asked.txt").exists());
    tmux.type_text("/exit");
    tmux.keys(&["Enter"]);
    sane(&tmux.stty_after_exit());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_trust_dialog_lists_every_gated_input_and_trusting_runs_the_hooks() {
    let w = World::new();
    let marker = w.scratch.join("hook-ran");
    let write = |rel: &str, text: &str| {
        let path = w.project.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    // No extension at all: hooks, an MCP server, a command and a skill.
    write(
        ".zot/hooks.json",
        &serde_json::json!({"hooks": {"UserPromptSubmit": [{"hooks": [
            {"type": "command", "command": format!("echo ran > {}", shell_quote(marker.to_str().unwrap()))}]}]}})
        .to_string(),
    );
    write(
        ".mcp.json",
        r#"{"mcpServers": {"quiet": {"command": "sh", "args": ["-c", "exit 0"]}}}"#,
    );
    write(".claude/commands/review.md", "Review the code.");
    write(
        ".claude/skills/lint/SKILL.md",
        "---\nname: lint\ndescription: lint it\n---\nRun the linter.",
    );
    write(
        ".agents/skills/ship/SKILL.md",
        "---\nname: ship\ndescription: ship it\n---\nRun ./ship.sh.",
    );
    // The user's own hook hears why the session ended.
    let ended = w.scratch.join("ended");
    std::fs::write(
        w.home.join("hooks.json"),
        serde_json::json!({"hooks": {"SessionEnd": [{"hooks": [{"type": "command",
            "command": record_input(&ended, r#"d["reason"]"#)}]}]}})
        .to_string(),
    )
    .unwrap();
    let model = MockModel::start([anthropic::text("hello back")]).await;
    let tmux = Tmux::against(&w, "trust-inputs", &model, &[]);
    // The dialog's last line: the whole dialog is drawn by then.
    let screen = tmux.wait_for("n not now");
    for line in [
        "1 MCP server in .mcp.json",
        "1 hook in .zot/hooks.json",
        "1 Markdown command in .claude/commands",
        "skills in .agents/skills, .claude/skills",
        "Trust this project?",
    ] {
        assert!(screen.contains(line), "{line:?} missing:\n{screen}");
    }
    assert!(!screen.contains(".zot/extensions"), "{screen}");
    tmux.type_text("y");
    tmux.wait_for("reloaded:");
    let trust = std::fs::read_to_string(w.home.join("trust.json")).unwrap();
    let project = w.project.canonicalize().unwrap();
    assert!(trust.contains(project.to_str().unwrap()), "{trust}");
    // The project's hook runs from now on.
    tmux.type_text("hi");
    tmux.keys(&["Enter"]);
    tmux.wait_for("hello back");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "ran\n");
    tmux.type_text("/exit");
    tmux.keys(&["Enter"]);
    sane(&tmux.stty_after_exit());
    assert_eq!(
        std::fs::read_to_string(&ended).unwrap(),
        "prompt_input_exit\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_changed_hook_helper_is_named_and_trusting_it_again_runs_the_hook() {
    let w = World::new();
    let marker = w.scratch.join("ran");
    let helper = super::hooks::hook_sourcing_a_helper(&w, "UserPromptSubmit", &marker);
    let model = MockModel::start([
        anthropic::text("first answer"),
        anthropic::text("second answer"),
        anthropic::text("third answer"),
    ])
    .await;
    let tmux = Tmux::against(&w, "retrust", &model, &[]);
    tmux.wait_for("anthropic/claude-");
    tmux.type_text("one");
    tmux.keys(&["Enter"]);
    tmux.wait_for("first answer");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "v1\n");

    // An edit while zot runs (the user's, the model's, a sandboxed command's).
    std::fs::write(&helper, format!("echo v2 >> '{}'\n", marker.display())).unwrap();
    tmux.type_text("two");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("n keep them off");
    assert!(screen.contains("Project files changed"), "{screen}");
    assert!(screen.contains("changed tools/helper.sh"), "{screen}");
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap(),
        "v1\n",
        "the changed helper did not run"
    );
    tmux.type_text("y");
    tmux.wait_for("reloaded:");
    tmux.type_text("three");
    tmux.keys(&["Enter"]);
    tmux.wait_for("third answer");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "v1\nv2\n");
}
