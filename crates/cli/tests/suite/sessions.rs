//! Sessions you can find and branch: the tree on disk, forks over RPC,
//! `--resume=ID`, `zot sessions list/show/rm/prune` and the index.

use std::path::{Path, PathBuf};

use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use zot_testkit::{MockModel, anthropic};

use super::conversation::{answered, ok, session_files, session_lines as lines, texts};
use super::rpc::Rpc;
use super::support::{Run, World};
use super::tui::Tmux;

/// The data of a successful response to `request`.
fn call(rpc: &mut Rpc, request: Value) -> Value {
    let command = request["type"].as_str().unwrap().to_owned();
    rpc.send(&request.to_string());
    let response = rpc.response(&command);
    assert_eq!(response["success"], true, "{response}");
    response["data"].clone()
}

/// The id of the prompt entry whose text is `text`.
fn prompt_id(tree: &Value, text: &str) -> String {
    tree["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "prompt" && e["text"] == text)
        .unwrap_or_else(|| panic!("no prompt {text} in {tree}"))["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Entries no other entry names as its parent.
fn leaves(tree: &Value) -> Vec<String> {
    let entries = tree["entries"].as_array().unwrap();
    entries
        .iter()
        .filter(|e| !entries.iter().any(|c| c["parent_id"] == e["id"]))
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect()
}

fn list(w: &World, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["sessions", "list", "--json"];
    all.extend_from_slice(args);
    let run = ok(w.zot(&all));
    serde_json::from_str(&run.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fork_branches_before_a_prompt_and_sends_the_shared_prefix_unchanged() {
    let w = World::new();
    let model = MockModel::start([
        anthropic::Script::new()
            .thinking("let me think", "sig-first")
            .text("a1")
            .build(),
        anthropic::text("a2"),
        anthropic::text("a3"),
        anthropic::text("a4"),
    ])
    .await;
    let mut rpc = Rpc::start(&w, &model, "anthropic", &["-c"], None);
    answered(&mut rpc, "one");
    answered(&mut rpc, "two");
    let tree = call(&mut rpc, json!({"type": "get_tree"}));
    let two = prompt_id(&tree, "two");
    let forked = call(&mut rpc, json!({"type": "fork", "entry_id": two}));
    assert_eq!(forked["text"], "two");
    // The new leaf is the answer to "one", the entry before "two".
    let parent_of_two = tree["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == two.as_str())
        .unwrap()["parent_id"]
        .clone();
    assert_eq!(forked["leaf_id"], parent_of_two);
    answered(&mut rpc, "two, again");

    let requests = model.requests();
    assert_eq!(texts(&requests[2].body), ["one", "a1", "two, again"]);
    // The shared prefix, thinking and its signature included, as it was sent.
    let before = &requests[1].body["messages"];
    let after = &requests[2].body["messages"];
    assert_eq!(before[0], after[0]);
    assert_eq!(before[1], after[1]);
    assert!(requests[2].raw_body.contains(r#""signature":"sig-first""#));

    let tree = call(&mut rpc, json!({"type": "get_tree"}));
    assert_eq!(leaves(&tree).len(), 2, "{tree}");
    let leaf = tree["leaf_id"].as_str().unwrap().to_owned();
    assert!(leaves(&tree).contains(&leaf), "{tree}");
    assert_eq!(rpc.close(), 0);

    // On disk: every entry has an id and a parent; the new prompt hangs
    // under the first answer, beside "two", after a branch line.
    let files = session_files(&w);
    assert_eq!(files.len(), 1, "{files:?}");
    let lines = lines(&files[0]);
    assert_eq!(lines[0]["type"], "meta");
    assert_eq!(lines[0]["meta"]["format"], 2);
    for line in lines.iter().filter(|l| l["type"] == "message") {
        assert!(line["id"].is_string(), "{line}");
        assert!(line.get("parent_id").is_some(), "{line}");
    }
    let again = lines
        .iter()
        .find(|l| l["message"]["content"][0]["text"] == "two, again")
        .unwrap();
    assert_eq!(again["parent_id"], parent_of_two);
    assert!(
        lines
            .iter()
            .any(|l| l["type"] == "branch" && l["leaf_id"] == parent_of_two)
    );

    // Resuming by a prefix of the id goes on from the new branch only.
    let id = lines[0]["meta"]["id"].as_str().unwrap();
    ok(w.against(
        &model,
        "anthropic",
        &["-p", &format!("--resume={}", &id[..12]), "three"],
    )
    .output()
    .unwrap()
    .into());
    assert_eq!(
        texts(&model.requests()[3].body),
        ["one", "a1", "two, again", "a3", "three"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn titles_come_from_the_first_prompt_until_the_user_names_the_session() {
    let w = World::new();
    let model = MockModel::start([anthropic::text("hello")]).await;
    let mut rpc = Rpc::start(&w, &model, "anthropic", &["-c"], None);
    answered(
        &mut rpc,
        "  \n  fix the parser's off-by-one\nin detail please",
    );
    let sessions = call(&mut rpc, json!({"type": "list_sessions"}));
    let listed = &sessions["sessions"][0];
    assert_eq!(listed["title"], "fix the parser's off-by-one");
    assert_eq!(listed["message_count"], 2);
    let titled = call(
        &mut rpc,
        json!({"type": "set_title", "title": "parser fix"}),
    );
    assert_eq!(titled["title"], "parser fix");
    let sessions = call(&mut rpc, json!({"type": "list_sessions"}));
    assert_eq!(sessions["sessions"][0]["title"], "parser fix");
    assert_eq!(rpc.close(), 0);
    let shown = ok(w.zot(&["sessions", "show", listed["id"].as_str().unwrap()]));
    assert!(shown.stdout.starts_with("parser fix\n"), "{shown:?}");
    assert!(
        shown.stdout.contains("fix the parser's off-by-one"),
        "{shown:?}"
    );
}

/// A session file as zot wrote them before the tree: no ids, no format.
fn old_format_session(w: &World, id: &str) -> PathBuf {
    let dir = w.home.join("sessions").join("0123456789abcdef");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{id}.jsonl"));
    let meta = json!({"type": "meta", "meta": {
        "id": id, "cwd": w.project.display().to_string(), "provider": "anthropic",
        "model": "claude-sonnet-4-5", "started": "2026-11-01T10:00:00Z", "version": "0.1.0"}});
    let user = json!({"type": "message", "message": {"role": "user",
        "content": [{"type": "text", "text": "old question"}]}});
    let assistant = json!({"type": "message", "message": {"role": "assistant",
        "content": [{"type": "text", "text": "old answer"}]}});
    let usage = json!({"type": "usage", "model": "claude-sonnet-4-5", "usage":
        {"input": 10, "output": 5, "cache_read": 0, "cache_write": 0, "cost_usd": 0.25}});
    std::fs::write(&path, format!("{meta}\n{user}\n{assistant}\n{usage}\n")).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread")]
async fn files_of_the_old_format_resume_as_they_are_and_grow_a_tree() {
    let w = World::new();
    let model = MockModel::start([anthropic::text("new answer"), anthropic::text("a2")]).await;
    let path = old_format_session(&w, "20261101-100000-abcdef01");
    let listed = list(&w, &["--all"]);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["title"], "old question");
    assert_eq!(listed[0]["message_count"], 2);
    assert_eq!(listed[0]["cost_usd"], 0.25);

    ok(w.against(
        &model,
        "anthropic",
        &["-p", "--resume=20261101-1000", "new question"],
    )
    .output()
    .unwrap()
    .into());
    assert_eq!(
        texts(&model.requests()[0].body),
        ["old question", "old answer", "new question"]
    );
    // The old lines stay as they were; the new ones hang under the last
    // old one, named by its line number.
    let lines = lines(&path);
    assert!(lines[1].get("id").is_none());
    assert_eq!(lines[4]["parent_id"], "L3");

    // The tree reads back whole: fork before the new question over RPC.
    let mut rpc = Rpc::start(&w, &model, "anthropic", &["--resume=20261101"], None);
    let tree = call(&mut rpc, json!({"type": "get_tree"}));
    assert_eq!(tree["entries"][0]["id"], "L2");
    let new = prompt_id(&tree, "new question");
    let forked = call(&mut rpc, json!({"type": "fork", "entry_id": new}));
    assert_eq!(forked["leaf_id"], "L3");
    answered(&mut rpc, "other question");
    assert_eq!(
        texts(&model.requests()[1].body),
        ["old question", "old answer", "other question"]
    );
    assert_eq!(rpc.close(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_are_listed_shown_removed_and_pruned() {
    let w = World::new();
    let model = MockModel::start([
        anthropic::text("a"),
        anthropic::text("b"),
        anthropic::text("c"),
    ])
    .await;
    ok(w.against(&model, "anthropic", &["-p", "here first"])
        .output()
        .unwrap()
        .into());
    ok(w.against(&model, "anthropic", &["-p", "here second"])
        .output()
        .unwrap()
        .into());
    let elsewhere = w.scratch.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    ok(w.against(&model, "anthropic", &["-p", "over there"])
        .current_dir(&elsewhere)
        .output()
        .unwrap()
        .into());

    let here = list(&w, &[]);
    let titles: Vec<&str> = here.iter().map(|s| s["title"].as_str().unwrap()).collect();
    assert_eq!(titles.len(), 2);
    assert!(titles.contains(&"here first") && titles.contains(&"here second"));
    assert_eq!(list(&w, &["--all"]).len(), 3);
    let text = ok(w.zot(&["sessions", "list", "--all"]));
    assert!(text.stdout.contains("over there"), "{text:?}");
    assert!(
        text.stdout.contains(&elsewhere.display().to_string()),
        "{text:?}"
    );
    assert!(text.stdout.contains("2 messages"), "{text:?}");

    // rm by a unique prefix; an ambiguous or unknown one is refused.
    let ambiguous = w.zot(&["sessions", "rm", "2"]);
    assert_ne!(ambiguous.code, 0);
    assert!(
        ambiguous.stderr.contains("matches several sessions"),
        "{ambiguous:?}"
    );
    let unknown = w.zot(&["sessions", "rm", "nope"]);
    assert_ne!(unknown.code, 0);
    assert!(unknown.stderr.contains("no session matches"), "{unknown:?}");
    let first = here.iter().find(|s| s["title"] == "here first").unwrap();
    let id = first["id"].as_str().unwrap();
    ok(w.zot(&["sessions", "rm", &id[..id.len() - 2]]));
    assert!(!Path::new(first["path"].as_str().unwrap()).exists());
    assert_eq!(list(&w, &["--all"]).len(), 2);

    // prune: only what has not changed for the given time goes.
    let old = list(&w, &["--all"])
        .into_iter()
        .find(|s| s["title"] == "over there")
        .unwrap();
    let file = std::fs::File::options()
        .append(true)
        .open(old["path"].as_str().unwrap())
        .unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(40 * 86_400))
        .unwrap();
    let pruned = ok(w.zot(&["sessions", "prune", "--older-than", "30d"]));
    assert!(pruned.stderr.contains("1 session removed"), "{pruned:?}");
    let left = list(&w, &["--all"]);
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["title"], "here second");
    let bad = w.zot(&["sessions", "prune", "--older-than", "soon"]);
    assert_ne!(bad.code, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_index_is_rebuilt_for_each_file_that_disagrees_with_it() {
    let w = World::new();
    let model = MockModel::start([anthropic::text("a"), anthropic::text("b")]).await;
    ok(w.against(&model, "anthropic", &["-p", "first"])
        .output()
        .unwrap()
        .into());
    let listed = list(&w, &[]);
    assert_eq!(listed[0]["message_count"], 2);
    let index = w.home.join("sessions").join("index.json");
    assert!(index.exists());
    // A file that changed since it was indexed is read again.
    let id = listed[0]["id"].as_str().unwrap().to_owned();
    ok(w.against(
        &model,
        "anthropic",
        &["-p", &format!("--resume={id}"), "second"],
    )
    .output()
    .unwrap()
    .into());
    assert_eq!(list(&w, &[])[0]["message_count"], 4);
    // A broken index is rebuilt, not trusted.
    std::fs::write(&index, "{not json").unwrap();
    assert_eq!(list(&w, &[])[0]["message_count"], 4);
    let rebuilt: Value = serde_json::from_slice(&std::fs::read(&index).unwrap()).unwrap();
    assert_eq!(rebuilt["sessions"].as_object().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn resume_needs_an_id_outside_the_tui_and_a_known_one() {
    let w = World::new();
    let model = MockModel::start([]).await;
    let bare = Run::from(
        w.against(&model, "anthropic", &["-p", "--resume", "hi"])
            .output()
            .unwrap(),
    );
    assert_ne!(bare.code, 0);
    assert!(bare.stderr.contains("--resume=ID"), "{bare:?}");
    let unknown = Run::from(
        w.against(&model, "anthropic", &["-p", "--resume=abc", "hi"])
            .output()
            .unwrap(),
    );
    assert_ne!(unknown.code, 0);
    assert!(
        unknown.stderr.contains("no session matches \"abc\""),
        "{unknown:?}"
    );
    assert!(model.requests().is_empty());
    // RPC without a session file says how to get one.
    let mut rpc = Rpc::start(&w, &model, "anthropic", &[], None);
    rpc.send(r#"{"type":"get_tree"}"#);
    let response = rpc.response("get_tree");
    assert_eq!(response["success"], false);
    assert!(
        response["error"]
            .as_str()
            .unwrap()
            .contains("no session file"),
        "{response}"
    );
    assert_eq!(rpc.close(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_resume_picker_filters_deletes_widens_and_resumes() {
    let w = World::new();
    let model = MockModel::start([
        anthropic::text("parser fixed"),
        anthropic::text("docs written"),
        anthropic::text("deployed"),
        anthropic::text("elsewhere done"),
        anthropic::text("resumed answer"),
    ])
    .await;
    for prompt in ["fix the parser", "write the docs", "deploy the app"] {
        ok(w.against(&model, "anthropic", &["-p", prompt])
            .output()
            .unwrap()
            .into());
    }
    let elsewhere = w.scratch.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    ok(w.against(&model, "anthropic", &["-p", "work elsewhere"])
        .current_dir(&elsewhere)
        .output()
        .unwrap()
        .into());

    let tmux = Tmux::keeping_session(&w, "picker", &model, &["-r"], &[]);
    let screen = tmux.wait_for("Resume a session (this directory)");
    assert!(
        screen.contains("fix the parser") && screen.contains("write the docs"),
        "{screen}"
    );
    assert!(screen.contains("2 messages"), "{screen}");
    assert!(!screen.contains("work elsewhere"), "{screen}");
    // Fuzzy: letters in order, not a substring.
    tmux.type_text("wrtdcs");
    let screen = tmux.wait_for("filter: wrtdcs");
    assert!(screen.contains("write the docs"), "{screen}");
    assert!(!screen.contains("fix the parser"), "{screen}");
    // Delete asks first; anything but y keeps it.
    tmux.keys(&["C-d"]);
    tmux.wait_for("delete \"write the docs\"? y yes");
    tmux.type_text("n");
    tmux.wait_for("Enter resume");
    tmux.keys(&["C-d"]);
    tmux.wait_for("delete \"write the docs\"?");
    tmux.type_text("y");
    tmux.wait_for("deleted \"write the docs\"");
    let screen = tmux.wait_for("Resume a session (this directory)");
    assert!(!screen.contains("│write the docs"), "{screen}");
    assert_eq!(list(&w, &["--all"]).len(), 3);
    // Tab widens to every directory.
    tmux.keys(&["Tab"]);
    tmux.wait_for("Resume a session (every directory)");
    tmux.wait_for("work elsewhere");
    tmux.type_text("parser");
    tmux.wait_for("filter: parser");
    tmux.keys(&["Enter"]);
    tmux.wait_for("parser fixed");
    tmux.type_text("and now?");
    tmux.keys(&["Enter"]);
    tmux.wait_for("resumed answer");
    assert_eq!(
        texts(&model.requests()[4].body),
        ["fix the parser", "parser fixed", "and now?"]
    );
    tmux.type_text("/exit");
    tmux.keys(&["Enter"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn tree_fork_jump_and_name_in_the_tui() {
    let w = World::new();
    let long = (1..=40)
        .map(|i| format!("line {i} of a long answer"))
        .collect::<Vec<_>>()
        .join("\n\n");
    let model = MockModel::start([
        anthropic::text("a1"),
        anthropic::text(&long),
        anthropic::text("a3"),
        anthropic::text("a4"),
    ])
    .await;
    let tmux = Tmux::keeping_session(&w, "tree", &model, &[], &[]);
    tmux.wait_for("anthropic/claude-sonnet-5-5");
    tmux.type_text("one");
    tmux.keys(&["Enter"]);
    tmux.wait_for("a1");
    tmux.type_text("two");
    tmux.keys(&["Enter"]);
    tmux.wait_for("line 40 of a long answer");

    // /jump brings the first prompt back to the top of the chat.
    tmux.type_text("/jump");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Jump to a prompt");
    tmux.keys(&["Up"]);
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("a1");
    assert!(!screen.contains("line 40 of a long answer"), "{screen}");

    // /fork before "two": its text comes back in the editor, the chat
    // loses what followed, and the next request lacks it.
    tmux.type_text("/fork");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Fork: a new branch before a prompt");
    tmux.keys(&["Enter"]);
    tmux.wait_for("forked: edit the prompt and send it");
    let screen = tmux.screen();
    assert!(!screen.contains("line 1 of a long answer"), "{screen}");
    tmux.type_text(" again");
    tmux.keys(&["Enter"]);
    tmux.wait_for("a3");
    assert_eq!(texts(&model.requests()[2].body), ["one", "a1", "two again"]);

    // /tree shows both branches and goes back to the first one.
    tmux.type_text("/tree");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("Session tree");
    assert!(screen.contains("● one"), "{screen}");
    assert!(screen.contains("└ two again"), "{screen}");
    assert!(screen.contains("  └ two"), "{screen}");
    tmux.keys(&["Up"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("line 40 of a long answer");
    tmux.type_text("three");
    tmux.keys(&["Enter"]);
    tmux.wait_for("a4");
    assert_eq!(
        texts(&model.requests()[3].body),
        ["one", "a1", "two", &long, "three"]
    );

    tmux.type_text("/name tree work");
    tmux.keys(&["Enter"]);
    tmux.wait_for("session: tree work");
    assert_eq!(list(&w, &[])[0]["title"], "tree work");
    tmux.type_text("/exit");
    tmux.keys(&["Enter"]);
}

/// A session with a hostile prompt, a tool call whose output holds a key,
/// a code block, and a second branch; returns its id.
async fn exportable_session(w: &World) -> String {
    let model = MockModel::start([
        anthropic::tool_call("t1", "bash", r#"{"command":"echo $KEY"}"#),
        anthropic::text("Here:\n\n```rust\nfn main() { println!(\"<b>hi</b>\"); }\n```\n\nSee [docs](https://example.com) and [bad](javascript:alert(1))."),
        anthropic::text("first branch answer"),
        anthropic::text("second branch answer"),
    ])
    .await;
    let mut rpc = Rpc::start(w, &model, "anthropic", &["-c"], None);
    answered(
        &mut rpc,
        "show </script><img src=x onerror=alert(1)> and my key sk-ant-api03-SECRETSECRETSECRET0123",
    );
    answered(&mut rpc, "first follow-up");
    let tree = call(&mut rpc, json!({"type": "get_tree"}));
    let follow = prompt_id(&tree, "first follow-up");
    call(&mut rpc, json!({"type": "fork", "entry_id": follow}));
    answered(&mut rpc, "second follow-up");
    let id = tree["session_id"].as_str().unwrap().to_owned();
    assert_eq!(rpc.close(), 0);
    id
}

#[tokio::test(flavor = "multi_thread")]
async fn exports_are_self_contained_escaped_and_masked() {
    let w = World::new();
    let id = exportable_session(&w).await;
    let run = ok(w.zot(&["sessions", "export", &id[..10]]));
    let page_path = w.project.join(format!("{id}.html"));
    assert!(
        run.stderr.contains(&page_path.display().to_string()),
        "{run:?}"
    );
    let page = std::fs::read_to_string(&page_path).unwrap();
    assert!(page.contains("Content-Security-Policy"), "no policy");
    assert!(page.contains("default-src 'none'"));
    assert!(!page.contains("<script"), "a script in the page");
    assert!(!page.contains("<img src=x"), "raw HTML rendered");
    assert!(page.contains("&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"));
    assert!(!page.contains("href=\"javascript"), "a javascript: link");
    assert!(page.contains("<a href=\"https://example.com\">docs</a>"));
    assert!(!page.contains("SECRETSECRET"), "the key travelled");
    assert!(page.contains("sk-****"));
    assert!(
        page.contains("<details class=\"tool\"><summary>bash"),
        "no collapsed tool call"
    );
    assert!(
        page.contains("<span style=\"color:#"),
        "code not highlighted"
    );
    assert!(page.contains("second follow-up") && page.contains("second branch answer"));
    assert!(
        !page.contains("first branch answer"),
        "the other branch's answer shown"
    );
    assert!(page.contains("Other branches") && page.contains("first follow-up"));
    assert!(page.contains("input ") && page.contains("$"));

    let md = ok(w.zot(&["sessions", "export", &id, "--md", "-o", "-"]));
    assert!(md.stdout.starts_with("# show </script>"), "{}", md.stdout);
    assert!(md.stdout.contains("**Tool call:** `bash`"), "{}", md.stdout);
    assert!(
        md.stdout
            .contains("```json\n{\n  \"command\": \"echo $KEY\"\n}\n```"),
        "{}",
        md.stdout
    );
    assert!(!md.stdout.contains("SECRETSECRET"), "{}", md.stdout);
    let out = w.scratch.join("out.md");
    ok(w.zot(&[
        "sessions",
        "export",
        &id,
        "--md",
        "-o",
        out.to_str().unwrap(),
    ]));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), md.stdout);
    let missing = w.zot(&["sessions", "export", &id, "-o", "/nonexistent/dir/x.html"]);
    assert_ne!(missing.code, 0);
    assert!(missing.stderr.contains("cannot write"), "{missing:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn import_takes_a_copy_of_a_valid_session_only() {
    let w = World::new();
    let id = exportable_session(&w).await;
    let file = PathBuf::from(list(&w, &[])[0]["path"].as_str().unwrap());
    let carried = w.scratch.join("carried.jsonl");
    std::fs::copy(&file, &carried).unwrap();

    let other = World::new();
    let imported = ok(other.zot(&["sessions", "import", carried.to_str().unwrap()]));
    assert!(
        imported.stderr.contains(&format!("imported {id}")),
        "{imported:?}"
    );
    let listed = list(&other, &[]);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], id.as_str());
    let copy = PathBuf::from(listed[0]["path"].as_str().unwrap());
    assert!(!copy.is_symlink());
    assert_eq!(
        std::fs::read(&copy).unwrap(),
        std::fs::read(&carried).unwrap()
    );
    // It resumes like any session.
    let model = MockModel::start([anthropic::text("welcome back")]).await;
    ok(other
        .against(
            &model,
            "anthropic",
            &["-p", &format!("--resume={id}"), "more"],
        )
        .output()
        .unwrap()
        .into());
    assert_eq!(
        texts(&model.requests()[0].body).last().map(String::as_str),
        Some("more")
    );

    let again = other.zot(&["sessions", "import", carried.to_str().unwrap()]);
    assert_ne!(again.code, 0);
    assert!(again.stderr.contains("already here"), "{again:?}");
    let junk = other.scratch.join("junk.jsonl");
    std::fs::write(&junk, "not a session\n").unwrap();
    let refused = other.zot(&["sessions", "import", junk.to_str().unwrap()]);
    assert_ne!(refused.code, 0);
    assert!(refused.stderr.contains("not a zot session"), "{refused:?}");
    let sneaky = other.scratch.join("sneaky.jsonl");
    let text = std::fs::read_to_string(&carried).unwrap().replacen(
        &format!("\"id\":\"{id}\""),
        "\"id\":\"../../escape\"",
        1,
    );
    std::fs::write(&sneaky, text).unwrap();
    let refused = other.zot(&["sessions", "import", sneaky.to_str().unwrap()]);
    assert_ne!(refused.code, 0);
    assert!(refused.stderr.contains("not a plain name"), "{refused:?}");
    assert_eq!(list(&other, &["--all"]).len(), 1);
}

/// Runs headless Chromium (Debian's `chromium`) with `args` on `page`.
fn chromium(args: &[&str], page: &Path) -> Run {
    std::process::Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("Debian's chromium is needed for the export test (apt-get install chromium)")
        .into()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_exported_page_opens_cleanly_in_headless_chromium() {
    let w = World::new();
    let id = exportable_session(&w).await;
    let page = w.scratch.join("page.html");
    ok(w.zot(&["sessions", "export", &id, "-o", page.to_str().unwrap()]));

    let dom = chromium(&["--dump-dom"], &page);
    assert!(dom.stdout.contains("second follow-up"), "{dom:?}");
    // The hostile prompt is text: no element came of it.
    assert!(
        dom.stdout
            .contains("&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"),
        "{dom:?}"
    );
    assert!(!dom.stdout.contains("<img src=\"x\""), "{dom:?}");
    assert!(!dom.stdout.contains("href=\"javascript"), "{dom:?}");
    assert!(dom.stdout.contains("<details class=\"tool\">"), "{dom:?}");
    // No console message, no refused load or script.
    for line in dom.stderr.lines() {
        assert!(
            !line.contains("CONSOLE") && !line.contains("Refused to"),
            "{}",
            dom.stderr
        );
    }

    // A collapsed tool call opens on a click. The page runs no script, so
    // a copy gets one clicking its first tool call's summary (with the
    // policy that would refuse that script left out).
    let html = std::fs::read_to_string(&page).unwrap();
    let start = html
        .find("<meta http-equiv=\"Content-Security-Policy\"")
        .unwrap();
    let end = start + html[start..].find('>').unwrap() + 1;
    let clicked = html[..start].to_owned()
        + &html[end..].replace(
            "</body>",
            "<script>const d = document.querySelector('details.tool'); \
             const was = d.open; d.querySelector('summary').click(); \
             document.body.dataset.clicked = was + '-' + d.open;</script></body>",
        );
    let probe = w.scratch.join("probe.html");
    std::fs::write(&probe, clicked).unwrap();
    let dom = chromium(&["--dump-dom"], &probe);
    assert!(
        dom.stdout.contains("data-clicked=\"false-true\""),
        "{dom:?}"
    );

    // A screenshot with something on it: far from a blank page's.
    let shot = w.scratch.join("page.png");
    chromium(
        &[
            "--window-size=800,1200",
            &format!("--screenshot={}", shot.display()),
        ],
        &page,
    );
    let blank_page = w.scratch.join("blank.html");
    std::fs::write(&blank_page, "<!DOCTYPE html><html><body></body></html>").unwrap();
    let blank = w.scratch.join("blank.png");
    chromium(
        &[
            "--window-size=800,1200",
            &format!("--screenshot={}", blank.display()),
        ],
        &blank_page,
    );
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    assert!(size(&blank) > 0, "no screenshot taken");
    assert!(
        size(&shot) > 4 * size(&blank),
        "the page looks blank: {} bytes against {} for a blank page",
        size(&shot),
        size(&blank)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn rpc_switches_to_another_session_by_a_prefix_of_its_id() {
    let w = World::new();
    let model = MockModel::start([
        anthropic::text("older answer"),
        anthropic::text("newer answer"),
        anthropic::text("switched answer"),
    ])
    .await;
    ok(w.against(&model, "anthropic", &["-p", "older"])
        .output()
        .unwrap()
        .into());
    ok(w.against(&model, "anthropic", &["-p", "newer"])
        .output()
        .unwrap()
        .into());
    let older = list(&w, &[])
        .into_iter()
        .find(|s| s["title"] == "older")
        .unwrap();
    let id = older["id"].as_str().unwrap();
    let mut rpc = Rpc::start(&w, &model, "anthropic", &[], None);
    let listed = call(&mut rpc, json!({"type": "list_sessions", "all": true}));
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 2);
    let switched = call(
        &mut rpc,
        json!({"type": "switch_session", "session_id": &id[..id.len() - 3]}),
    );
    assert_eq!(switched["session_id"], id);
    assert_eq!(switched["message_count"], 2);
    answered(&mut rpc, "again");
    assert_eq!(
        texts(&model.requests()[2].body),
        ["older", "older answer", "again"]
    );
    rpc.send(r#"{"type":"switch_session","session_id":"zzz"}"#);
    let refused = rpc.response("switch_session");
    assert_eq!(refused["success"], false);
    assert_eq!(rpc.close(), 0);
}
