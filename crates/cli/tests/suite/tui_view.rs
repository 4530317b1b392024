//! What the TUI shows, through the built binary in tmux: Markdown tables,
//! links (with OSC 8 hyperlinks) and code fence labels, the wrapping
//! editor and folded pastes, compaction summaries, notes in order, diffs
//! in colour, approvals that show the change, and refusals that stop.

use std::time::{Duration, Instant};

use zot_testkit::{MockModel, anthropic};

use super::conversation::texts;
use super::support::World;
use super::tui::Tmux;

fn exit(tmux: &Tmux) {
    tmux.type_text("/exit");
    tmux.keys(&["Enter"]);
}

/// Waits until `path` holds `needle`.
fn wait_for_file(path: &std::path::Path, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let text = String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned();
        if text.contains(needle) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "waited for {needle:?} in {path:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn tables_links_and_code_fences_render_and_links_are_hyperlinks() {
    let w = World::new();
    let answer = "| file | lines |\n|------|------:|\n| main.py | 4 |\n| util.py | 3 |\n\n\
                  See [the docs](https://example.com/docs).\n\n```python\nprint(1)\n```\n";
    let model = MockModel::start([anthropic::text(answer)]).await;
    let tmux = Tmux::against(&w, "markdown-view", &model, &[]);
    tmux.wait_for("anthropic/claude-sonnet-5-5");
    // Everything zot writes to the terminal, escape sequences included.
    let raw = w.scratch.join("pane.raw");
    tmux.command(&["pipe-pane", "-o", &format!("cat >> '{}'", raw.display())]);
    tmux.type_text("show me");
    tmux.keys(&["Enter"]);
    // The whole answer, not a frame of it streaming in (the table can show
    // while the link's paragraph is still arriving).
    tmux.wait_for("util.py");
    tmux.wait_idle();
    let screen = tmux.wait_for("── python");
    for row in ["file    │ lines", "main.py │     4", "util.py │     3"] {
        assert!(screen.contains(row), "{row}:\n{screen}");
    }
    assert!(screen.contains("────────┼──────"), "{screen}");
    assert!(
        screen.contains("See the docs (https://example.com/docs)."),
        "{screen}"
    );
    assert!(screen.contains("── python"), "{screen}");
    // The link text and its URL reach the terminal as OSC 8 hyperlinks,
    // and nothing of the sequence shows.
    let bytes = wait_for_file(&raw, "\x1b]8;;https://example.com/docs\x1b\\");
    assert!(
        bytes.contains("\x1b]8;;https://example.com/docs\x1b\\t"),
        "{bytes:?}"
    );
    assert!(!screen.contains("8;;"), "{screen}");
    exit(&tmux);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_editor_wraps_keeps_the_cursor_in_view_and_folds_long_pastes() {
    let w = World::new();
    let model = MockModel::start([anthropic::text("got it")]).await;
    let tmux = Tmux::against(&w, "editor-wrap", &model, &[]);
    tmux.wait_for("anthropic/claude-sonnet-5-5");
    // Longer than the 98 columns inside the box.
    let long = (1..=30)
        .map(|n| format!("w{n:02}"))
        .collect::<Vec<_>>()
        .join(" ");
    tmux.type_text(&long);
    let screen = tmux.wait_for("w30");
    assert!(
        screen.contains("w01 w02"),
        "the start is still shown:\n{screen}"
    );
    let cursor = tmux.command(&["display", "-p", "#{cursor_x} #{cursor_y}"]);
    let (x, y) = cursor.trim().split_once(' ').unwrap();
    let (x, y): (usize, usize) = (x.parse().unwrap(), y.parse().unwrap());
    let row = screen.lines().nth(y).unwrap();
    assert!(x < 99, "the cursor is inside the box: {cursor}");
    assert!(
        row.contains("w30") && row.chars().take(x).collect::<String>().ends_with("w30"),
        "the cursor follows the last word: {cursor}\n{screen}"
    );
    tmux.keys(&["C-u"]);
    let deadline = Instant::now() + Duration::from_secs(15);
    while tmux.screen().contains("w30") {
        assert!(Instant::now() < deadline, "Ctrl+U left the line");
        std::thread::sleep(Duration::from_millis(50));
    }

    // A bracketed paste of twelve lines shows folded; the whole is sent.
    let pasted: String = (1..=12).map(|n| format!("pasted line {n}\n")).collect();
    let file = w.scratch.join("paste.txt");
    std::fs::write(&file, &pasted).unwrap();
    tmux.command(&["load-buffer", "-b", "p", file.to_str().unwrap()]);
    tmux.type_text("look: ");
    tmux.command(&["paste-buffer", "-p", "-b", "p"]);
    let screen = tmux.wait_for("look: [pasted 12 lines]");
    assert!(!screen.contains("pasted line 3"), "{screen}");
    tmux.keys(&["Enter"]);
    tmux.wait_for("got it");
    assert_eq!(
        texts(&model.requests()[0].body),
        [format!("look: {pasted}")]
    );
    exit(&tmux);
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_x_shows_a_folded_paste_whole_in_the_editor() {
    let w = World::new();
    let model = MockModel::start([]).await;
    let tmux = Tmux::against(&w, "paste-expand", &model, &[]);
    tmux.wait_for("anthropic/claude-sonnet-5-5");
    let pasted: String = (1..=11).map(|n| format!("row {n}\n")).collect();
    let file = w.scratch.join("paste.txt");
    std::fs::write(&file, &pasted).unwrap();
    tmux.command(&["load-buffer", "-b", "p", file.to_str().unwrap()]);
    tmux.command(&["paste-buffer", "-p", "-b", "p"]);
    tmux.wait_for("Ctrl+X shows the paste whole");
    tmux.keys(&["C-x"]);
    let screen = tmux.wait_for("row 11");
    assert!(!screen.contains("[pasted"), "{screen}");
    exit(&tmux);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_compaction_shows_folded_and_rendered_and_notes_stay_in_order() {
    let w = World::new();
    let model = MockModel::start([
        anthropic::text("first answer"),
        anthropic::text("reply two"),
        anthropic::text("reply three"),
        anthropic::text("## Goal\n\nShip **the fix**."),
        anthropic::text("answer after the switch"),
    ])
    .await;
    let tmux = Tmux::against(&w, "compaction-view", &model, &[]);
    tmux.wait_for("anthropic/claude-sonnet-5-5");
    tmux.type_text("start");
    tmux.keys(&["Enter"]);
    tmux.wait_for("first answer");
    for text in ["two", "three"] {
        tmux.type_text(text);
        tmux.keys(&["Enter"]);
        tmux.wait_for(&format!("reply {text}"));
    }
    tmux.type_text("/compact");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("older messages were summarised");
    assert!(!screen.contains("## Context Summary"), "{screen}");
    assert!(!screen.contains("Ship"), "folded until asked:\n{screen}");
    // What was on screen before stays.
    assert!(screen.contains("first answer"), "{screen}");
    tmux.keys(&["C-o"]);
    let screen = tmux.wait_for("Ship the fix.");
    assert!(!screen.contains("## Goal"), "rendered, not raw:\n{screen}");

    // The model switch's note stays where it happened, above the next answer.
    tmux.type_text("/model claude-haiku-4-5");
    tmux.keys(&["Enter"]);
    tmux.wait_for("saved to");
    tmux.type_text("go on");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("answer after the switch");
    let note = screen.find("model: claude-haiku-4-5 (saved to").unwrap();
    let answer = screen.find("answer after the switch").unwrap();
    assert!(note < answer, "{screen}");
    exit(&tmux);
}

/// The line of a `capture-pane -e` screen that shows `text`, with its
/// escape sequences.
fn styled_line(styled: &str, text: &str) -> String {
    styled
        .lines()
        .find(|l| l.contains(text))
        .unwrap_or_else(|| panic!("{text:?} not in:\n{styled}"))
        .to_owned()
}

/// Whether a styled line sets the terminal's palette colour `n` (0-7).
fn has_colour(line: &str, n: u8) -> bool {
    line.contains(&format!("\x1b[3{n}m")) || line.contains(&format!("\x1b[38;5;{n}m"))
}

#[tokio::test(flavor = "multi_thread")]
async fn approvals_show_the_command_or_the_diff_and_a_refusal_stops_the_turn() {
    let w = World::new();
    std::fs::create_dir_all(w.project.join("src")).unwrap();
    let util = w.project.join("src/util.py");
    std::fs::write(&util, "def f():\n    return 1\n").unwrap();
    let edit = |value: &str| {
        format!(
            r#"{{"path":"src/util.py","edits":[{{"oldText":"return 1","newText":"return {value}"}}]}}"#
        )
    };
    let model = MockModel::start([
        anthropic::Script::new()
            .tool_call(
                "b1",
                "bash",
                r#"{"command":"touch refused.txt\necho second line"}"#,
            )
            .tool_call("e1", "edit", &edit("2"))
            .build(),
        anthropic::tool_call("e2", "edit", &edit("3")),
        anthropic::text("all done"),
    ])
    .await;
    let tmux = Tmux::against(&w, "approve-diff", &model, &["--no-yolo"]);
    tmux.wait_for("anthropic/claude-sonnet-5-5");
    tmux.type_text("fix util");
    tmux.keys(&["Enter"]);
    // The whole command, both lines.
    let screen = tmux.wait_for("Run this tool?");
    assert!(
        screen.contains("$ touch refused.txt") && screen.contains("echo second line"),
        "{screen}"
    );
    tmux.type_text("n");
    // The turn stops: the edit is neither asked about nor run, and the
    // model is not called again until the user says what to do instead.
    tmux.wait_for("type what to do instead");
    assert_eq!(model.requests().len(), 1);
    assert!(!w.project.join("refused.txt").exists());
    assert_eq!(
        std::fs::read_to_string(&util).unwrap(),
        "def f():\n    return 1\n"
    );

    tmux.type_text("make it 3 instead");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("Run this tool?");
    assert!(screen.contains("-    return 1"), "{screen}");
    assert!(screen.contains("+    return 3"), "{screen}");
    let styled = tmux.styled_screen();
    assert!(
        has_colour(&styled_line(&styled, "+    return 3"), 2),
        "{styled}"
    );
    assert!(
        has_colour(&styled_line(&styled, "-    return 1"), 1),
        "{styled}"
    );
    let sent = texts(&model.requests()[1].body).join("\n");
    assert!(sent.contains("tool call refused by user"), "{sent}");
    assert!(sent.contains("not run: the user refused"), "{sent}");
    assert!(sent.contains("make it 3 instead"), "{sent}");
    tmux.type_text("y");
    tmux.wait_for("all done");
    assert_eq!(
        std::fs::read_to_string(&util).unwrap(),
        "def f():\n    return 3\n"
    );
    // The applied edit's diff is coloured in the transcript too.
    let styled = tmux.styled_screen();
    assert!(
        has_colour(&styled_line(&styled, "+    return 3"), 2),
        "{styled}"
    );
    exit(&tmux);
}

#[tokio::test(flavor = "multi_thread")]
async fn copy_puts_the_last_answer_on_the_clipboard_through_osc_52() {
    let w = World::new();
    let model = MockModel::start([anthropic::text("the **answer** to copy")]).await;
    let tmux = Tmux::against(&w, "copy-osc52", &model, &[]);
    // tmux takes a program's OSC 52 into its paste buffer when asked to.
    tmux.command(&["set-option", "-s", "set-clipboard", "on"]);
    tmux.wait_for("anthropic/claude-sonnet-5-5");
    tmux.type_text("/copy");
    tmux.keys(&["Enter"]);
    tmux.wait_for("no answer to copy yet");
    tmux.type_text("say it");
    tmux.keys(&["Enter"]);
    // The answer as rendered: "to copy" alone is also in the status line
    // the first /copy left (for 5 s), which would not wait for the answer.
    tmux.wait_for("the answer to copy");
    tmux.wait_idle();
    tmux.type_text("/copy");
    tmux.keys(&["Enter"]);
    tmux.wait_for("copied the last answer");
    let deadline = Instant::now() + Duration::from_secs(15);
    while tmux.command(&["list-buffers"]).is_empty() {
        assert!(Instant::now() < deadline, "nothing reached the clipboard");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(tmux.command(&["show-buffer"]), "the **answer** to copy");
    exit(&tmux);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_on_the_command_line_opens_the_tui_and_sends_it() {
    let w = World::new();
    let model = MockModel::start([anthropic::text("answered at start")]).await;
    let tmux = Tmux::against(&w, "positional", &model, &["explain", "this repo"]);
    let screen = tmux.wait_for("answered at start");
    assert!(screen.contains("› explain this repo"), "{screen}");
    assert_eq!(texts(&model.requests()[0].body), ["explain this repo"]);
    exit(&tmux);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_typed_bang_runs_a_command_whose_output_goes_with_the_next_prompt() {
    let w = World::new();
    let model = MockModel::start([anthropic::text("seen it"), anthropic::text("just text")]).await;
    let tmux = Tmux::against(&w, "bang", &model, &[]);
    tmux.wait_for("anthropic/claude-sonnet-5-5");
    // Run in the project, stdin closed; the output shows as a bash call.
    tmux.type_text("!echo shell-out-$((6*7)) in $(basename \"$PWD\"); cat; echo stdin-closed");
    tmux.keys(&["Enter"]);
    tmux.wait_for("stdin-closed");
    let screen = tmux.wait_for("shell-out-42");
    assert!(
        model.requests().is_empty(),
        "no model call for a command:\n{screen}"
    );
    tmux.type_text("what now");
    tmux.keys(&["Enter"]);
    tmux.wait_for("seen it");
    let project = w.project.file_name().unwrap().to_str().unwrap();
    let sent = texts(&model.requests()[0].body);
    assert_eq!(sent.len(), 1, "{sent:?}");
    let (shell, prompt) = sent[0].rsplit_once('|').unwrap();
    assert_eq!(prompt, "what now");
    assert!(shell.contains("echo shell-out-$((6*7))"), "{shell}");
    assert!(
        shell.contains(&format!("shell-out-42 in {project}")),
        "{shell}"
    );
    assert!(shell.contains("[exit 0]"), "{shell}");

    // A pasted `!…` is text for the model, never run; the command went
    // with one prompt only.
    let file = w.scratch.join("paste.txt");
    std::fs::write(&file, "!echo never-$((1+1))").unwrap();
    tmux.command(&["load-buffer", "-b", "p", file.to_str().unwrap()]);
    tmux.command(&["paste-buffer", "-p", "-b", "p"]);
    tmux.wait_for("!echo never-");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("just text");
    assert!(!screen.contains("never-2"), "{screen}");
    let sent = texts(&model.requests()[1].body);
    assert_eq!(sent.last().unwrap(), "!echo never-$((1+1))");
    assert_eq!(sent.len(), 3, "{sent:?}");
    exit(&tmux);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_side_question_is_answered_apart_and_leaves_the_conversation_as_it_was() {
    let w = World::new();
    let model = MockModel::start([
        anthropic::text("first answer"),
        anthropic::text("an aside: **four**"),
        anthropic::text("second answer"),
    ])
    .await;
    let tmux = Tmux::keeping_session(&w, "btw", &model, &[], &[]);
    tmux.wait_for("anthropic/claude-sonnet-5-5");
    tmux.type_text("/btw");
    tmux.keys(&["Enter"]);
    tmux.wait_for("/btw QUESTION asks a side question");
    tmux.type_text("hello");
    tmux.keys(&["Enter"]);
    tmux.wait_for("first answer");
    tmux.wait_idle();

    tmux.type_text("/btw what is 2+2?");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("an aside: **four**");
    assert!(screen.contains("btw: \"what is 2+2?\""), "{screen}");
    // The side request begins as the next turn's would (the cached
    // prefix serves it): same system prompt and tools, the conversation,
    // then the question.
    let requests = model.requests();
    let (turn, aside) = (&requests[0].body, &requests[1].body);
    assert_eq!(aside["system"], turn["system"]);
    assert_eq!(aside["tools"], turn["tools"]);
    let asked = texts(aside);
    assert_eq!(asked[..2], ["hello", "first answer"], "{asked:?}");
    assert!(asked[2].ends_with("what is 2+2?"), "{asked:?}");

    tmux.keys(&["Escape"]);
    let deadline = Instant::now() + Duration::from_secs(15);
    while tmux.screen().contains("btw: \"what") {
        assert!(Instant::now() < deadline, "Esc left the answer open");
        std::thread::sleep(Duration::from_millis(50));
    }
    tmux.type_text("next");
    tmux.keys(&["Enter"]);
    tmux.wait_for("second answer");
    // Neither question nor answer joined the conversation or the session;
    // the side call's usage was counted.
    assert_eq!(
        texts(&model.requests()[2].body),
        ["hello", "first answer", "next"]
    );
    let lines = super::support::session_lines(&w);
    let recorded = serde_json::to_string(&lines).unwrap();
    assert!(!recorded.contains("2+2"), "{recorded}");
    let usage_lines = lines.iter().filter(|l| l["type"] == "usage").count();
    assert_eq!(usage_lines, 3, "{recorded}");
    exit(&tmux);
}

/// The numbers of the "question N" and "answer N" rows of a screen, top to bottom.
fn numbered_rows(screen: &str) -> Vec<usize> {
    screen
        .lines()
        .filter_map(|l| {
            let l = l.trim_start_matches("› ");
            let n = l.strip_prefix("question ").or(l.strip_prefix("answer "))?;
            n.trim().parse().ok()
        })
        .collect()
}

/// Waits until the last numbered row of the screen is `last`.
fn wait_for_last_row(tmux: &Tmux, last: usize) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let screen = tmux.screen();
        if numbered_rows(&screen).last() == Some(&last) {
            return screen;
        }
        assert!(
            Instant::now() < deadline,
            "waited for row {last}:\n{screen}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Writes session `id` (its start time, `HHMMSS` of 2026-11-01, is the id's
/// middle part) of the project of `w` with `messages`, for `--resume`.
fn write_session(w: &World, id: &str, messages: impl IntoIterator<Item = serde_json::Value>) {
    let dir = w.home.join("sessions").join("0123456789abcdef");
    std::fs::create_dir_all(&dir).unwrap();
    let time = &id[9..15];
    let started = format!("2026-11-01T{}:{}:{}Z", &time[..2], &time[2..4], &time[4..]);
    let meta = serde_json::json!({"type": "meta", "meta": {
        "id": id, "cwd": w.project.display().to_string(), "provider": "anthropic",
        "model": "claude-sonnet-4-5", "started": started, "version": "0.1.0"}});
    let mut file = format!("{meta}\n");
    for message in messages {
        let line = serde_json::json!({"type": "message", "message": message});
        file.push_str(&format!("{line}\n"));
    }
    std::fs::write(dir.join(format!("{id}.jsonl")), file).unwrap();
}

/// A resumed session of 3,000 messages (a session file the test writes),
/// paged up and down: each message is a row and a blank row, so 50 pages of
/// 10 rows bring the 250th message from the end to the bottom, with the
/// messages before it above in order, and PageDown comes back to the end.
#[tokio::test(flavor = "multi_thread")]
async fn a_long_resumed_session_pages_up_and_down() {
    let w = World::new();
    let model = MockModel::start([]).await;
    let messages = (0..3_000).map(|i| {
        let (role, text) = match i % 2 {
            0 => ("user", format!("question {i}")),
            _ => ("assistant", format!("answer {i}")),
        };
        serde_json::json!({"role": role, "content": [{"type": "text", "text": text}]})
    });
    write_session(&w, "20261101-100000-abcdef01", messages);

    let tmux = Tmux::keeping_session(&w, "long-resume", &model, &["--resume=20261101-1000"], &[]);
    let screen = wait_for_last_row(&tmux, 2_999);
    let height = numbered_rows(&screen).len();
    assert!(height >= 10, "{screen}");
    for _ in 0..50 {
        tmux.keys(&["PageUp"]);
    }
    let screen = wait_for_last_row(&tmux, 2_749);
    let rows = numbered_rows(&screen);
    let expected: Vec<usize> = (2_750 - rows.len()..2_750).collect();
    assert_eq!(rows, expected, "{screen}");
    assert!(screen.contains("› question 2748"), "{screen}");
    for _ in 0..50 {
        tmux.keys(&["PageDown"]);
    }
    let screen = wait_for_last_row(&tmux, 2_999);
    assert_eq!(numbered_rows(&screen).len(), height, "{screen}");
    exit(&tmux);
}

/// A resumed session of 4,000 messages in turns with a `read` call and its
/// result: the chat makes the older messages into entries only as paging
/// reaches them, and paging all the way up shows the first turn whole (its
/// prompt, answer, call and the call's result, found in a slice made last).
#[tokio::test(flavor = "multi_thread")]
async fn a_long_resumed_session_pages_up_to_its_first_turn() {
    let w = World::new();
    let model = MockModel::start([]).await;
    let turns = (0..1_000).flat_map(|turn| {
        let call = format!("call_{turn}");
        [
            serde_json::json!({"role": "user",
                "content": [{"type": "text", "text": format!("question {turn}")}]}),
            serde_json::json!({"role": "assistant", "content": [
                {"type": "text", "text": format!("answer {turn}")},
                {"type": "tool_call", "id": call, "name": "read",
                    "args": {"path": format!("src/file_{turn}.rs")}}]}),
            serde_json::json!({"role": "tool", "content": [{"type": "tool_result",
                "call_id": call, "content": [{"type": "text",
                    "text": format!("contents of file {turn}")}]}]}),
            serde_json::json!({"role": "assistant",
                "content": [{"type": "text", "text": format!("done with {turn}")}]}),
        ]
    });
    write_session(&w, "20261101-110000-abcdef02", turns);

    let tmux = Tmux::keeping_session(&w, "long-turns", &model, &["--resume=20261101-1100"], &[]);
    tmux.wait_for("done with 999");
    // More pages than the chat has rows; the top stays on screen.
    tmux.keys(&["-N", "3000", "PageUp"]);
    let screen = tmux.wait_for("› question 0");
    for text in [
        "answer 0",
        "read src/file_0.rs",
        "contents of file 0",
        "done with 0",
        "question 1",
    ] {
        assert!(screen.contains(text), "{text}:\n{screen}");
    }
    assert!(!screen.contains("done with 999"), "{screen}");
    exit(&tmux);
}
