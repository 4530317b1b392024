//! `todo_write`, the model's visible plan, through the built binary: the
//! `todo` event in `--json`, bad plans refused, the plan restored with a
//! resumed session, and the TUI's view of it above the editor.

use serde_json::json;
use zot_testkit::{MockModel, anthropic};

use super::support::{
    Event, Run, TodoItem, TodoStatus, World, compacted_automatically, is_error, is_result_of, kind,
    turns_filling_the_context, typed_events,
};
use super::tui::Tmux;

const PLAN: &str = r#"{"items":[
    {"text":"read the code","status":"done"},
    {"text":"write the fix","status":"in_progress"},
    {"text":"run the tests","status":"pending"}]}"#;

/// [`PLAN`] as the `todo` event carries it.
fn plan() -> Vec<TodoItem> {
    [
        ("read the code", TodoStatus::Done),
        ("write the fix", TodoStatus::InProgress),
        ("run the tests", TodoStatus::Pending),
    ]
    .map(|(text, status)| TodoItem {
        text: text.into(),
        status,
    })
    .to_vec()
}

/// A resumed session's stream: the prompt, then the plan it had.
fn the_plan_comes_right_after_the_prompt(run: &Run) {
    let evs = typed_events(run);
    let types: Vec<String> = evs.iter().map(kind).collect();
    assert_eq!(&types[..2], ["user_message", "todo"], "{types:?}");
    assert_eq!(evs[1], Event::Todo { items: plan() });
}

fn run(w: &World, model: &MockModel, args: &[&str]) -> Run {
    w.against(model, "anthropic", args).output().unwrap().into()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_plan_is_a_json_event_refused_when_malformed_and_restored_on_resume() {
    let w = World::new();
    let model = MockModel::start([
        anthropic::Script::new()
            .tool_call("bad1", "todo_write", r#"{"items":[{"text":"a","status":"doing"}]}"#)
            .tool_call(
                "bad2",
                "todo_write",
                r#"{"items":[{"text":"a","status":"in_progress"},{"text":"b","status":"in_progress"}]}"#,
            )
            .tool_call("bad3", "todo_write", r#"{"items":"read, then fix"}"#)
            .tool_call("ok", "todo_write", PLAN)
            .build(),
        anthropic::text("planned"),
        anthropic::text("still on it"),
    ])
    .await;
    let first = run(&w, &model, &["--json", "fix the bug"]);
    assert_eq!(first.code, 0, "{first:?}");
    let evs = typed_events(&first);
    let todos: Vec<&Vec<TodoItem>> = evs
        .iter()
        .filter_map(|e| match e {
            Event::Todo { items } => Some(items),
            _ => None,
        })
        .collect();
    assert_eq!(
        todos.len(),
        1,
        "only the good call changes the plan: {todos:?}"
    );
    assert_eq!(*todos[0], plan());
    let result = |id: &str| evs.iter().find(|e| is_result_of(e, id)).unwrap().clone();
    for (id, text) in [
        (
            "bad1",
            r#"items[0]: `status` must be "pending", "in_progress" or "done", got "doing""#,
        ),
        ("bad2", "more than one item is in_progress"),
        ("bad3", "argument `items` must be an array, got a string"),
    ] {
        let r = result(id);
        assert!(is_error(&r), "{r:?}");
        let Event::ToolResult { content, .. } = &r else {
            unreachable!()
        };
        assert!(super::support::text(&content[0]).contains(text), "{r:?}");
    }
    let Event::ToolResult { content, .. } = result("ok") else {
        unreachable!()
    };
    assert_eq!(
        super::support::text(&content[0]),
        "plan updated (1/3 done):\n[x] read the code\n[>] write the fix\n[ ] run the tests"
    );
    let offered = &model.requests()[0].body["tools"];
    let schema = offered
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "todo_write")
        .unwrap();
    assert_eq!(
        schema["input_schema"]["properties"]["items"]["items"]["properties"]["status"]["enum"],
        json!(["pending", "in_progress", "done"])
    );

    // Resumed: the plan comes back from the session before the next turn.
    let second = run(&w, &model, &["--json", "-c", "go on"]);
    assert_eq!(second.code, 0, "{second:?}");
    the_plan_comes_right_after_the_prompt(&second);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_plan_comes_back_on_resume_after_a_compaction_summarised_its_call() {
    let w = World::new();
    let model = MockModel::start(
        [anthropic::tool_call("plan", "todo_write", PLAN)]
            .into_iter()
            .chain(turns_filling_the_context())
            .chain([
                anthropic::text("SUMMARY"),
                anthropic::text("finished"),
                anthropic::text("still on it"),
            ]),
    )
    .await;
    let first = run(&w, &model, &["--json", "fix the bug"]);
    assert_eq!(first.code, 0, "{first:?}");
    assert!(compacted_automatically(&typed_events(&first)), "{first:?}");

    let second = run(&w, &model, &["--json", "-c", "go on"]);
    assert_eq!(second.code, 0, "{second:?}");
    // The model no longer sees the call that set the plan...
    let last = model.requests().last().unwrap().body["messages"].to_string();
    assert!(last.contains("SUMMARY"), "{last}");
    assert!(!last.contains("\"todo_write\""), "{last}");
    // ...but the plan is still the session's.
    the_plan_comes_right_after_the_prompt(&second);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_tui_shows_the_plan_above_the_editor_after_resume_and_as_it_changes() {
    let w = World::new();
    let model = MockModel::start([
        anthropic::tool_call("p1", "todo_write", PLAN),
        anthropic::text("planned"),
        anthropic::tool_call(
            "p2",
            "todo_write",
            r#"{"items":[{"text":"read the code","status":"done"},{"text":"write the fix","status":"done"},{"text":"run the tests","status":"in_progress"}]}"#,
        ),
        anthropic::text("testing now"),
    ])
    .await;
    let first = run(&w, &model, &["-p", "fix the bug"]);
    assert_eq!(first.code, 0, "{first:?}");

    let url = model.url();
    let args = [
        "--provider",
        "anthropic",
        "--api-key",
        "k",
        "--base-url",
        &url,
        "-c",
    ];
    let tmux = Tmux::start(&w, "todo", &args, &[]);
    let screen = tmux.wait_for("plan 1/3 done");
    let rows: Vec<&str> = screen.lines().collect();
    let heading = rows
        .iter()
        .position(|r| r.contains("plan 1/3 done"))
        .unwrap();
    assert!(rows[heading + 1].contains("✔ read the code"), "{screen}");
    assert!(rows[heading + 2].contains("▶ write the fix"), "{screen}");
    assert!(rows[heading + 3].contains("○ run the tests"), "{screen}");
    // The editor's box comes right after the plan.
    assert!(rows[heading + 4].contains('─'), "{screen}");
    let styled = tmux.styled_screen();
    let done_row = styled
        .lines()
        .rfind(|l| l.contains("read the code"))
        .unwrap();
    assert!(
        done_row.contains("\u{1b}[9m"),
        "done is struck through: {done_row:?}"
    );

    tmux.type_text("next");
    tmux.keys(&["Enter"]);
    tmux.wait_for("testing now");
    let screen = tmux.wait_for("plan 2/3 done");
    assert!(screen.contains("▶ run the tests"), "{screen}");

    tmux.type_text("/clear");
    tmux.keys(&["Enter"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while tmux.screen().contains("plan 2/3 done") {
        assert!(std::time::Instant::now() < deadline, "{}", tmux.screen());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    tmux.type_text("/exit");
    tmux.keys(&["Enter"]);
}
