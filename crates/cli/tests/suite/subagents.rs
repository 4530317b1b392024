//! Subagents (the `task` tool) through the built binary against the
//! loopback model, which tells the parent's requests from a child's by the
//! system prompt: the child's own requests, its answer reaching the parent,
//! tasks in flight together, an interceptor and command hooks on a child's
//! calls, plan mode in a child, no nested task, cancellation, and the task
//! folded in the TUI.

use serde_json::{Value, json};
use zot_testkit::{Gate, MockModel, Recorded, Response, anthropic};

use super::rpc::Rpc;
use super::support::{
    Event, EventLine, Run, World, record_input, session_lines, text, typed_lines,
};
use super::tui::Tmux;

/// The start of a subagent's system prompt (`zot_core::agent::SUBAGENT_SYSTEM`).
const CHILD: &str = "You are a zot subagent";

fn is_child(request: &Recorded) -> bool {
    request.body["system"].to_string().contains(CHILD)
}

/// The model requests of subagents, in arrival order.
fn child_requests(model: &MockModel) -> Vec<Recorded> {
    model.requests().into_iter().filter(is_child).collect()
}

/// The model requests of the agent itself, in arrival order.
fn parent_requests(model: &MockModel) -> Vec<Recorded> {
    model
        .requests()
        .into_iter()
        .filter(|r| !is_child(r))
        .collect()
}

/// The messages of a request.
fn messages(request: &Recorded) -> &Vec<Value> {
    request.body["messages"].as_array().unwrap()
}

/// The first user text of a request: which task a child works on.
fn first_text(request: &Recorded) -> String {
    messages(request)[0]["content"].to_string()
}

fn tool_names(request: &Recorded) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The content of the last message's tool result for `id`, as JSON text.
fn result_for(request: &Recorded, id: &str) -> Value {
    let last = messages(request).last().unwrap();
    last["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["tool_use_id"] == id)
        .unwrap_or_else(|| panic!("no result for {id} in {last}"))
        .clone()
}

fn task(id: &str, description: &str, prompt: &str, tools: Option<&[&str]>) -> (String, String) {
    let mut args = json!({"description": description, "prompt": prompt});
    if let Some(tools) = tools {
        args["tools"] = json!(tools);
    }
    (id.to_owned(), args.to_string())
}

/// One assistant message calling `calls` (id, args) of the `task` tool.
fn tasks(calls: &[(String, String)]) -> Response {
    let mut script = anthropic::Script::new();
    for (id, args) in calls {
        script = script.tool_call(id, "task", args);
    }
    script.build()
}

fn zot(w: &World, model: &MockModel, args: &[&str]) -> Run {
    w.against(model, "anthropic", args).output().unwrap().into()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_runs_a_child_with_a_fresh_context_and_its_answer_reaches_the_parent() {
    let w = World::new();
    std::fs::write(w.project.join("AGENTS.md"), "PROJECT RULE 42").unwrap();
    std::fs::write(w.project.join("a.txt"), "the needle is here\n").unwrap();
    std::fs::write(
        w.home.join("config.json"),
        r#"{"subagent_model": "claude-haiku-4-5"}"#,
    )
    .unwrap();
    let model = MockModel::start_responding(|request| {
        let turn = messages(request).len();
        match (is_child(request), turn) {
            (true, 1) => anthropic::Script::new()
                .tool_call("c1", "grep", r#"{"pattern":"needle"}"#)
                .usage(100, 10)
                .build(),
            (true, _) => anthropic::Script::new()
                .text("the needle is in a.txt, line 1")
                .usage(200, 20)
                .build(),
            (false, 1) => tasks(&[task(
                "t1",
                "find the needle",
                "Find where the needle is.",
                None,
            )]),
            (false, _) => anthropic::text("it is in a.txt"),
        }
    })
    .await;
    let run = zot(&w, &model, &["--json", "investigate the needle"]);
    assert_eq!(run.code, 0, "{run:?}");

    // The child's own requests: its system prompt with the project's
    // context, the task prompt alone, read-only tools, the subagent model.
    let children = child_requests(&model);
    assert_eq!(children.len(), 2, "{children:?}");
    let first = &children[0];
    let system = first.body["system"].to_string();
    assert!(system.contains("PROJECT RULE 42"), "{system}");
    assert!(!system.contains("You are zot, a coding agent"), "{system}");
    assert_eq!(messages(first).len(), 1);
    assert!(first_text(first).contains("Find where the needle is."));
    assert!(!first.raw_body.contains("investigate the needle"));
    assert_eq!(first.body["model"], "claude-haiku-4-5");
    let mut tools = tool_names(first);
    tools.sort();
    assert_eq!(tools, ["find", "grep", "ls", "read", "web_fetch"]);
    assert!(result_for(&children[1], "c1").to_string().contains("a.txt"));

    // The parent is offered the task tool and gets the child's answer.
    let parents = parent_requests(&model);
    assert!(tool_names(&parents[0]).contains(&"task".to_owned()));
    let answer = result_for(&parents[1], "t1");
    assert_eq!(answer["is_error"], false, "{answer}");
    assert!(
        answer
            .to_string()
            .contains("the needle is in a.txt, line 1"),
        "{answer}"
    );

    // Every event of the child names the task call; the child's own end
    // is not a `done` of the prompt.
    let evs = typed_lines(&run);
    let call_named = |wanted: &str| {
        evs.iter()
            .find(|l| matches!(&l.event, Event::ToolCall { name, .. } if name == wanted))
            .unwrap_or_else(|| panic!("no {wanted} call: {evs:?}"))
    };
    assert_eq!(
        call_named("grep").parent_tool_call_id.as_deref(),
        Some("t1")
    );
    let tagged = evs
        .iter()
        .filter(|l| l.parent_tool_call_id.as_deref() == Some("t1"))
        .count();
    assert!(tagged >= 8, "{evs:?}");
    let dones: Vec<&EventLine> = evs
        .iter()
        .filter(|l| matches!(l.event, Event::Done))
        .collect();
    assert_eq!(dones.len(), 1);
    assert_eq!(dones[0].parent_tool_call_id, None);
    assert_eq!(call_named("task").parent_tool_call_id, None);

    // The child's usage adds to the session's.
    let last_usage = evs
        .iter()
        .rfind(|l| matches!(l.event, Event::Usage { .. }))
        .unwrap();
    assert_eq!(last_usage.parent_tool_call_id, None);
    let Event::Usage { cumulative, .. } = &last_usage.event else {
        unreachable!()
    };
    assert!(cumulative.input >= 300, "{last_usage:?}");

    // The session keeps the child's conversation beside the call, and
    // every call's usage.
    let lines = session_lines(&w);
    let sub = lines.iter().find(|l| l["type"] == "subagent").unwrap();
    assert_eq!(sub["tool_call_id"], "t1");
    assert_eq!(sub["description"], "find the needle");
    assert_eq!(sub["messages"].as_array().unwrap().len(), 4, "{sub}");
    assert_eq!(sub.get("id"), None, "not a tree entry");
    let usages = lines.iter().filter(|l| l["type"] == "usage").count();
    assert_eq!(usages, 4);
}

/// A guard extension that blocks reads of `secret.txt` and records, for
/// every tool call it hears (event or intercept), its name and
/// `parent_tool_call_id`.
const GUARD: &str = r#"
log = open(os.environ["GUARD_LOG"], "a")
handshake(NAME)
emit({"type":"subscribe","events":["tool_call"],"intercept":["tool_call"]})
emit({"type":"ready"})
for msg in frames():
    if msg["type"] not in ("event", "event_intercept"):
        continue
    print(msg["type"], msg.get("tool_name"), msg.get("parent_tool_call_id"), file=log, flush=True)
    if msg["type"] == "event_intercept":
        reply = {"type":"event_intercept_response","id":msg["id"]}
        if msg["tool_name"] == "read" and "secret" in json.dumps(msg["tool_args"]):
            reply.update({"block": True, "reason": "secrets stay secret"})
        emit(reply)
"#;

#[tokio::test(flavor = "multi_thread")]
async fn interceptors_and_command_hooks_apply_to_a_childs_calls() {
    let w = World::new();
    std::fs::write(w.project.join("secret.txt"), "hunter2").unwrap();
    let guard_log = w.scratch.join("guard.log");
    let hook_log = w.scratch.join("hooks.log");
    let guard = w.py_ext("guard", GUARD);
    let record = record_input(
        &hook_log,
        r#"d["hook_event_name"], d.get("tool_name"), d.get("parent_tool_call_id")"#,
    );
    // SubagentStop records its input and sends the child on once.
    let stop = w.scratch.join("subagent-stop.py");
    zot_testkit::write_exec(
        &stop,
        &format!(
            "#!/usr/bin/env python3\nimport json, sys\nd = json.load(sys.stdin)\n\
             print(d['hook_event_name'], d['parent_tool_call_id'], d['stop_hook_active'], \
             file=open({:?}, 'a'))\nif not d['stop_hook_active']:\n    \
             print('look in .env too', file=sys.stderr)\n    sys.exit(2)\n",
            hook_log.display().to_string()
        ),
    );
    let stop = stop.display().to_string();
    let hooks = json!({"hooks": {
        "PreToolUse": [{"matcher": "", "hooks": [{"type": "command", "command": record}]}],
        "SubagentStop": [{"hooks": [{"type": "command", "command": stop}]}],
    }});
    std::fs::write(w.home.join("hooks.json"), hooks.to_string()).unwrap();
    let model =
        MockModel::start_responding(
            |request| match (is_child(request), messages(request).len()) {
                (true, 1) => anthropic::tool_call("c1", "read", r#"{"path":"secret.txt"}"#),
                (true, 3) => anthropic::text("I could not read it"),
                (true, _) => anthropic::text("no .env either"),
                (false, 1) => tasks(&[task("t1", "read the secret", "Read secret.txt.", None)]),
                (false, _) => anthropic::text("done"),
            },
        )
        .await;
    let guard_env = guard_log.to_str().unwrap();
    let run: Run = w
        .against(
            &model,
            "anthropic",
            &["--json", "--ext", guard.to_str().unwrap(), "go"],
        )
        .env("GUARD_LOG", guard_env)
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    let children = child_requests(&model);
    assert_eq!(children.len(), 3, "{run:?}");
    let blocked = result_for(&children[1], "c1");
    assert_eq!(blocked["is_error"], true, "{blocked}");
    assert!(blocked.to_string().contains("secrets stay secret"));
    assert!(!children[1].raw_body.contains("hunter2"));

    let heard = std::fs::read_to_string(&guard_log).unwrap();
    assert!(heard.contains("event task None"), "{heard}");
    assert!(heard.contains("event read t1"), "{heard}");
    assert!(heard.contains("event_intercept read t1"), "{heard}");
    let hooks = std::fs::read_to_string(&hook_log).unwrap();
    assert!(hooks.contains("PreToolUse Task None"), "{hooks}");
    assert!(hooks.contains("PreToolUse Read t1"), "{hooks}");
    assert!(hooks.contains("SubagentStop t1 False"), "{hooks}");
    assert!(hooks.contains("SubagentStop t1 True"), "{hooks}");
    // The hook's reason sent the child on; its answer after that is the result.
    assert!(children[2].raw_body.contains("look in .env too"));
    let parent = parent_requests(&model);
    let answer = result_for(parent.last().unwrap(), "t1").to_string();
    assert!(answer.contains("no .env either"), "{answer}");
}

#[tokio::test(flavor = "multi_thread")]
async fn two_tasks_run_together_and_a_child_cannot_start_a_task() {
    let w = World::new();
    // The first child's answer waits until the second child has asked:
    // run one after the other, the first would wait for ever.
    let both_asked = Gate::new();
    let gate = both_asked.clone();
    let nested = task("n1", "nested", "Go deeper.", None);
    let model = MockModel::start_responding(move |request| {
        let job = first_text(request);
        match (is_child(request), messages(request).len()) {
            (true, 1) if job.contains("job one") => anthropic::text("answer one").after(&gate),
            (true, 1) => {
                gate.open();
                tasks(std::slice::from_ref(&nested))
            }
            (true, _) => anthropic::text("answer two"),
            (false, 1) => tasks(&[
                task("t1", "first", "Do job one.", None),
                task("t2", "second", "Do job two.", Some(&["read", "grep"])),
            ]),
            (false, _) => anthropic::text("both done"),
        }
    })
    .await;
    let run = zot(&w, &model, &["--json", "--no-session", "two jobs"]);
    assert_eq!(run.code, 0, "{run:?}");
    let parents = parent_requests(&model);
    let last = parents.last().unwrap();
    assert!(result_for(last, "t1").to_string().contains("answer one"));
    assert!(result_for(last, "t2").to_string().contains("answer two"));
    // The second child has only the tools it was given, never `task`; a
    // task it asks for anyway is refused.
    let second: Vec<Recorded> = child_requests(&model)
        .into_iter()
        .filter(|r| first_text(r).contains("job two"))
        .collect();
    assert_eq!(tool_names(&second[0]), ["read", "grep"]);
    let refused = result_for(&second[1], "n1");
    assert_eq!(refused["is_error"], true, "{refused}");
    assert!(refused.to_string().contains("unknown tool"), "{refused}");
    assert_eq!(child_requests(&model).len(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn plan_mode_holds_in_a_child() {
    let w = World::new();
    let model =
        MockModel::start_responding(
            |request| match (is_child(request), messages(request).len()) {
                (true, 1) => {
                    anthropic::tool_call("c1", "write", r#"{"path":"x.txt","content":"x"}"#)
                }
                (true, _) => anthropic::text("I may not write"),
                (false, 1) => tasks(&[task(
                    "t1",
                    "write a file",
                    "Write x.txt.",
                    Some(&["read", "write"]),
                )]),
                (false, 3) => tasks(&[task("t2", "try anyway", "Write x.txt.", None)]),
                (false, _) => anthropic::text("planned"),
            },
        )
        .await;
    let run = zot(&w, &model, &["--json", "--no-session", "--plan", "make x"]);
    assert_eq!(run.code, 0, "{run:?}");
    let parents = parent_requests(&model);
    let refused = result_for(&parents[1], "t1");
    assert_eq!(refused["is_error"], true, "{refused}");
    assert!(
        refused.to_string().contains("not available in plan mode"),
        "{refused}"
    );
    // The default child is offered no tool that writes, and a write it
    // asks for anyway does not run.
    let children = child_requests(&model);
    assert_eq!(children.len(), 2, "{children:?}");
    assert!(!tool_names(&children[0]).contains(&"write".to_owned()));
    assert_eq!(result_for(&children[1], "c1")["is_error"], true);
    assert!(!w.project.join("x.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelling_the_parent_cancels_its_child() {
    let w = World::new();
    let model =
        MockModel::start_responding(
            |request| match (is_child(request), messages(request).len()) {
                (true, _) => anthropic::Script::new()
                    .text("looking")
                    .build_partial()
                    .stall(),
                (false, 1) => tasks(&[task("t1", "a long search", "Search everything.", None)]),
                (false, _) => anthropic::text("after abort"),
            },
        )
        .await;
    let mut rpc = Rpc::start(&w, &model, "anthropic", &[], None);
    rpc.send(r#"{"type":"prompt","message":"search"}"#);
    let delta = rpc.until_line(|l| matches!(l.event, Event::TextDelta { .. }));
    assert_eq!(
        delta.parent_tool_call_id.as_deref(),
        Some("t1"),
        "{delta:?}"
    );
    rpc.send(r#"{"type":"abort"}"#);
    let result = rpc.until_event(|e| matches!(e, Event::ToolResult { id, .. } if id == "t1"));
    let Event::ToolResult {
        is_error, content, ..
    } = &result
    else {
        unreachable!()
    };
    assert!(*is_error, "{result:?}");
    assert!(
        content.iter().any(|b| text(b).contains("aborted")),
        "{result:?}"
    );
    rpc.until_line(|l| matches!(l.event, Event::Done) && l.parent_tool_call_id.is_none());
    model.wait_hangups(1).await;
    // The conversation stays valid: the next prompt works.
    rpc.send(r#"{"type":"prompt","message":"again"}"#);
    assert_eq!(text(&rpc.next_answer()[0]), "after abort");
    assert_eq!(rpc.close(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_tui_shows_a_task_folded_with_its_calls_on_expand() {
    let w = World::new();
    std::fs::write(w.project.join("a.txt"), "the needle is here\n").unwrap();
    let model =
        MockModel::start_responding(
            |request| match (is_child(request), messages(request).len()) {
                (true, 1) => anthropic::tool_call("c1", "grep", r#"{"pattern":"needle"}"#),
                (true, _) => anthropic::text("the needle is in a.txt"),
                (false, 1) => tasks(&[task("t1", "find the needle", "Find the needle.", None)]),
                (false, _) => anthropic::text("it is in a.txt, says the helper"),
            },
        )
        .await;
    let tmux = Tmux::against(&w, "subagent-view", &model, &[]);
    tmux.wait_for("anthropic/claude-sonnet-5-5");
    tmux.type_text("where is the needle?");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("says the helper");
    assert!(screen.contains("task find the needle"), "{screen}");
    assert!(screen.contains("1 tool call (ctrl+o to show)"), "{screen}");
    assert!(!screen.contains("↳ grep"), "folded until asked:\n{screen}");
    tmux.keys(&["C-o"]);
    tmux.wait_for("↳ grep");
    tmux.type_text("/exit");
    tmux.keys(&["Enter"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_childs_call_is_confirmed_and_a_refusal_stops_the_prompt() {
    let w = World::new();
    let model = MockModel::start_responding(|request| {
        let job = first_text(request);
        match (is_child(request), messages(request).len()) {
            (true, 1) if job.contains("job one") => {
                anthropic::tool_call("c1", "write", r#"{"path":"a.txt","content":"a"}"#)
            }
            (true, 1) => anthropic::tool_call("c2", "write", r#"{"path":"b.txt","content":"b"}"#),
            (true, _) => anthropic::text("written"),
            (false, 1) => tasks(&[task("t1", "write a", "Do job one.", Some(&["write"]))]),
            (false, 5) => tasks(&[task("t2", "write b", "Do job two.", Some(&["write"]))]),
            (false, _) => anthropic::text("the helper is done"),
        }
    })
    .await;
    let tmux = Tmux::against(&w, "subagent-confirm", &model, &["--no-yolo"]);
    tmux.wait_for("anthropic/claude-sonnet-5-5");
    tmux.type_text("write a");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("Run this tool?");
    assert!(screen.contains("a.txt"), "{screen}");
    tmux.type_text("y");
    tmux.wait_for("the helper is done");
    assert_eq!(
        std::fs::read_to_string(w.project.join("a.txt")).unwrap(),
        "a"
    );

    tmux.type_text("write b");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("Run this tool?");
    assert!(screen.contains("b.txt"), "{screen}");
    tmux.type_text("n");
    tmux.wait_for("type what to do instead");
    assert!(!w.project.join("b.txt").exists());
    // The parent model is not asked again after the refusal.
    let parents = parent_requests(&model);
    assert_eq!(parents.len(), 3, "{parents:?}");
    assert_eq!(child_requests(&model).len(), 3);
    tmux.type_text("/exit");
    tmux.keys(&["Enter"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_child_that_never_answers_stops_at_its_step_limit() {
    let w = World::new();
    let model = MockModel::start_responding(|request| {
        let turn = messages(request).len();
        match (is_child(request), turn) {
            (true, _) => anthropic::tool_call(&format!("c{turn}"), "ls", "{}"),
            (false, 1) => tasks(&[task("t1", "loop", "Look around.", None)]),
            (false, _) => anthropic::text("gave up"),
        }
    })
    .await;
    let run = zot(&w, &model, &["--json", "--no-session", "look"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(child_requests(&model).len(), 40);
    let result = result_for(parent_requests(&model).last().unwrap(), "t1");
    assert_eq!(result["is_error"], true, "{result}");
    assert!(
        result.to_string().contains("limit of 40 model calls"),
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_works_on_chat_completions_too() {
    let w = World::new();
    let is_child = |request: &Recorded| request.body["messages"][0].to_string().contains(CHILD);
    let model = MockModel::start_responding(move |request| {
        let turn = request.body["messages"].as_array().unwrap().len();
        match (is_child(request), turn) {
            // The system prompt, then the task's prompt.
            (true, 2) => zot_testkit::openai::tool_call("c1", "ls", "{}"),
            (true, _) => zot_testkit::openai::text("two files"),
            (false, 2) => zot_testkit::openai::tool_call(
                "t1",
                "task",
                r#"{"description":"count files","prompt":"How many files are there?"}"#,
            ),
            (false, _) => zot_testkit::openai::text("there are two"),
        }
    })
    .await;
    std::fs::write(w.project.join("one.txt"), "1").unwrap();
    let run: Run = w
        .against(&model, "openai", &["--json", "--no-session", "count"])
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    let requests = model.requests();
    let children: Vec<&Recorded> = requests.iter().filter(|r| is_child(r)).collect();
    assert_eq!(children.len(), 2);
    let first = children[0].body["messages"].as_array().unwrap();
    assert_eq!(first[1]["role"], "user");
    assert!(first[1].to_string().contains("How many files are there?"));
    let offered: Vec<&str> = children[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        !offered.contains(&"write") && !offered.contains(&"task"),
        "{offered:?}"
    );
    let last = requests.last().unwrap().body["messages"].to_string();
    assert!(last.contains("two files"), "{last}");
    let evs = typed_lines(&run);
    assert!(evs.iter().any(
        |l| matches!(&l.event, Event::ToolResult { id, .. } if id == "c1")
            && l.parent_tool_call_id.as_deref() == Some("t1")
    ));
}
