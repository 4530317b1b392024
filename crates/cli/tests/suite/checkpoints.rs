//! Checkpoints and undo through the built binary: a prompt's `edit`,
//! `write` and `bash` changes (a sed, a created, a deleted and a renamed
//! file) taken back by RPC `rewind` and by `/undo` in tmux, in a git
//! repository whose own `.git` stays untouched and in a plain folder; a
//! user's edit after the prompt needs `force`; the fallback of an oversized
//! project; and a restore interrupted half way.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use zot_testkit::{MockModel, Response, anthropic};

use super::conversation::prompt;
use super::rpc::Rpc;
use super::support::{Event, Run, World, events, git, typed};
use super::tui::Tmux;

/// The project's files before the prompt (`.git` aside).
const FILES: &[(&str, &str)] = &[
    ("edit.txt", "alpha\nbeta\n"),
    ("sed.txt", "one x two\n"),
    ("gone.txt", "delete me\n"),
    ("old.txt", "rename me\n"),
    ("sub/deep.txt", "deep\n"),
];

/// Every file under `dir` with its bytes, `.git` included or not.
fn tree(dir: &Path, with_git: bool) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap().flatten() {
            let path = entry.path();
            let name = path.strip_prefix(dir).unwrap().display().to_string();
            if !with_git && name == ".git" {
                continue;
            }
            if entry.file_type().unwrap().is_dir() {
                stack.push(path);
            } else {
                files.insert(name, std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

/// What git says of the project, and a digest of every file of its `.git`
/// (read first: `status` here takes no optional locks, so it writes nothing).
#[derive(Debug, PartialEq, Eq)]
struct GitState {
    said: Vec<String>,
    dot_git: BTreeMap<String, u64>,
}

fn git_state(dir: &Path) -> GitState {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let dot_git = tree(&dir.join(".git"), true)
        .into_iter()
        .map(|(path, bytes)| {
            let mut hasher = DefaultHasher::new();
            bytes.hash(&mut hasher);
            (path, hasher.finish())
        })
        .collect();
    let said = [
        git(dir, &["status", "--porcelain", "--ignored"]),
        git(dir, &["stash", "list"]),
        git(dir, &["branch", "-a"]),
        git(dir, &["reflog"]),
    ];
    GitState {
        said: said.to_vec(),
        dot_git,
    }
}

fn setup(w: &World, with_git: bool) {
    for (path, text) in FILES {
        let file = w.project.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    if with_git {
        git(&w.project, &["init", "-q", "-b", "main"]);
        std::fs::write(w.project.join(".gitignore"), "ignored.log\n").unwrap();
        std::fs::write(w.project.join("ignored.log"), "log\n").unwrap();
        git(&w.project, &["add", "-A"]);
        git(&w.project, &["commit", "-qm", "start"]);
        git(&w.project, &["branch", "side"]);
        // A stash and an uncommitted change the checkpoints must not disturb.
        std::fs::write(w.project.join("sub/deep.txt"), "stashed\n").unwrap();
        git(&w.project, &["stash", "-q"]);
        std::fs::write(w.project.join("sub/deep.txt"), "deep, edited\n").unwrap();
    }
}

/// One prompt's tool calls: an edit, a write of a new file, and a bash
/// command that seds, deletes and renames; then the answer.
fn changing_turns() -> [Response; 2] {
    let edit = json!({"path": "edit.txt", "edits": [{"oldText": "beta", "newText": "BETA"}]});
    let write = json!({"path": "sub/new.txt", "content": "brand new\n"});
    let bash =
        json!({"command": "sed -i 's/x/y/' sed.txt && rm gone.txt && mv old.txt renamed.txt"});
    [
        anthropic::Script::new()
            .tool_call("c1", "edit", &edit.to_string())
            .tool_call("c2", "write", &write.to_string())
            .tool_call("c3", "bash", &bash.to_string())
            .build(),
        anthropic::text("all changed"),
    ]
}

/// `zot rpc -c` with one more variable set.
fn rpc_with(w: &World, model: &MockModel, (name, value): (&str, &str)) -> Rpc {
    let mut cmd = w.against(model, "anthropic", &["rpc", "-c"]);
    cmd.env(name, value)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    Rpc::from_command(cmd)
}

/// Sends the prompt of [`changing_turns`]; its `checkpoint` event once done.
fn change_everything(rpc: &mut Rpc) -> Value {
    prompt(rpc, "change everything");
    let event = rpc.until(|v| matches!(typed(v), Event::Checkpoint { .. }));
    rpc.done();
    event
}

fn call(rpc: &mut Rpc, request: Value) -> Value {
    let command = request["type"].as_str().unwrap().to_owned();
    rpc.send(&request.to_string());
    rpc.response(&command)
}

fn ok_data(response: Value) -> Value {
    assert_eq!(response["success"], true, "{response}");
    response["data"].clone()
}

/// The changes of a `checkpoint` event or a checkpoint entry, sorted.
fn changes(files: &Value) -> Vec<(String, String)> {
    let mut all: Vec<(String, String)> = files
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let path = f["path"].as_str().unwrap().to_owned();
            (path, f["change"].as_str().unwrap().to_owned())
        })
        .collect();
    all.sort();
    all
}

fn expected_changes() -> Vec<(String, String)> {
    let mut all: Vec<(String, String)> = [
        ("edit.txt", "modified"),
        ("gone.txt", "deleted"),
        ("old.txt", "deleted"),
        ("renamed.txt", "created"),
        ("sed.txt", "modified"),
        ("sub/new.txt", "created"),
    ]
    .iter()
    .map(|(p, c)| (p.to_string(), c.to_string()))
    .collect();
    all.sort();
    all
}

async fn rewind_restores_a_prompts_changes(with_git: bool) {
    let w = World::new();
    setup(&w, with_git);
    let before = tree(&w.project, false);
    let git_before = with_git.then(|| git_state(&w.project));
    let model = MockModel::start(changing_turns()).await;
    let mut rpc = Rpc::start(&w, &model, "anthropic", &["-c"], None);
    let event = change_everything(&mut rpc);
    assert_eq!(changes(&event["files"]), expected_changes(), "{event}");
    assert_eq!(
        std::fs::read_to_string(w.project.join("edit.txt")).unwrap(),
        "alpha\nBETA\n"
    );
    assert!(w.project.join("renamed.txt").exists());

    let listed = ok_data(call(&mut rpc, json!({"type": "get_checkpoints"})));
    let prompts = listed["checkpoints"].as_array().unwrap();
    assert_eq!(prompts.len(), 1, "{listed}");
    assert_eq!(prompts[0]["text"], "change everything");
    assert_eq!(changes(&prompts[0]["files"]), expected_changes());
    assert_eq!(prompts[0]["entry_id"], event["entry_id"]);
    if let Some(git_before) = &git_before {
        // Only the work tree's status differs: the prompt changed files.
        let now = git_state(&w.project);
        assert_eq!(now.said[1..], git_before.said[1..]);
        assert_eq!(now.dot_git, git_before.dot_git, ".git changed");
    }

    let entry = event["entry_id"].as_str().unwrap();
    let rewound = ok_data(call(&mut rpc, json!({"type": "rewind", "entry_id": entry})));
    assert_eq!(rewound["text"], "change everything");
    assert_eq!(rewound["conversation"], true);
    assert_eq!(changes(&rewound["restored"]).len(), 6, "{rewound}");
    assert_eq!(tree(&w.project, false), before);
    if let Some(git_before) = &git_before {
        assert_eq!(
            git_state(&w.project),
            *git_before,
            "git saw the checkpoints"
        );
    }
    // The conversation went back too: nothing before the prompt.
    let listed = ok_data(call(&mut rpc, json!({"type": "get_checkpoints"})));
    assert_eq!(listed["checkpoints"], json!([]));
    assert_eq!(rpc.close(), 0);
    private_store(&w);
}

/// `$ZOT_HOME/checkpoints` and every folder under it is the user's alone.
fn private_store(w: &World) {
    use std::os::unix::fs::PermissionsExt;
    let root = w.home.join("checkpoints");
    let mut stack = vec![root.clone()];
    let mut seen = 0;
    while let Some(dir) = stack.pop() {
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{}", dir.display());
        seen += 1;
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            } else {
                let mode = entry.metadata().unwrap().permissions().mode() & 0o077;
                assert_eq!(mode, 0, "{}", entry.path().display());
            }
        }
    }
    assert!(seen > 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn rewind_restores_edit_write_and_bash_changes_in_a_git_repository_untouched() {
    rewind_restores_a_prompts_changes(true).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rewind_restores_edit_write_and_bash_changes_in_a_plain_folder() {
    rewind_restores_a_prompts_changes(false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_the_user_edited_after_the_prompt_is_only_overwritten_with_force() {
    let w = World::new();
    setup(&w, false);
    let model = MockModel::start(changing_turns()).await;
    let mut rpc = Rpc::start(&w, &model, "anthropic", &["-c"], None);
    let event = change_everything(&mut rpc);
    std::fs::write(w.project.join("edit.txt"), "my own edit\n").unwrap();
    let entry = event["entry_id"].as_str().unwrap();
    let refused = call(&mut rpc, json!({"type": "rewind", "entry_id": entry}));
    assert_eq!(refused["success"], false, "{refused}");
    let error = refused["error"].as_str().unwrap();
    assert!(
        error.contains("edit.txt") && error.contains("force"),
        "{error}"
    );
    // Nothing was touched, and the conversation stayed.
    assert_eq!(
        std::fs::read_to_string(w.project.join("edit.txt")).unwrap(),
        "my own edit\n"
    );
    assert!(w.project.join("renamed.txt").exists());
    let listed = ok_data(call(&mut rpc, json!({"type": "get_checkpoints"})));
    assert_eq!(listed["checkpoints"].as_array().unwrap().len(), 1);

    // Code only, forced: the files go back, the conversation stays.
    let rewound = ok_data(call(
        &mut rpc,
        json!({"type": "rewind", "entry_id": entry, "conversation": false, "force": true}),
    ));
    assert_eq!(rewound["conversation"], false);
    assert_eq!(
        std::fs::read_to_string(w.project.join("edit.txt")).unwrap(),
        "alpha\nbeta\n"
    );
    assert!(!w.project.join("renamed.txt").exists());
    let listed = ok_data(call(&mut rpc, json!({"type": "get_checkpoints"})));
    assert_eq!(listed["checkpoints"].as_array().unwrap().len(), 1);
    assert_eq!(rpc.close(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_oversized_project_falls_back_to_the_files_edit_and_write_change() {
    let w = World::new();
    setup(&w, false);
    let model = MockModel::start(changing_turns()).await;
    // Three files at most: the project's five are over it.
    let mut rpc = rpc_with(
        &w,
        &model,
        ("ZOT_TEST_CHECKPOINT_LIMITS", "3,1000000,1000000"),
    );
    let event = change_everything(&mut rpc);
    let notes = event["notes"].to_string();
    assert!(notes.contains("not what bash changes"), "{event}");
    let mut expected = vec![
        ("edit.txt".to_owned(), "modified".to_owned()),
        ("sub/new.txt".to_owned(), "created".to_owned()),
    ];
    expected.sort();
    assert_eq!(changes(&event["files"]), expected);
    let entry = event["entry_id"].as_str().unwrap();
    ok_data(call(&mut rpc, json!({"type": "rewind", "entry_id": entry})));
    assert_eq!(
        std::fs::read_to_string(w.project.join("edit.txt")).unwrap(),
        "alpha\nbeta\n"
    );
    assert!(!w.project.join("sub/new.txt").exists());
    // What bash did is not covered there, and stays.
    assert!(w.project.join("renamed.txt").exists());
    assert_eq!(
        std::fs::read_to_string(w.project.join("sed.txt")).unwrap(),
        "one y two\n"
    );
    assert_eq!(rpc.close(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_restore_interrupted_half_way_leaves_each_file_old_or_new() {
    let w = World::new();
    setup(&w, false);
    let model = MockModel::start(changing_turns()).await;
    // The test-only fault point: the process ends after three files.
    let mut rpc = rpc_with(&w, &model, ("ZOT_TEST_RESTORE_FAULT", "3"));
    let event = change_everything(&mut rpc);
    let after = tree(&w.project, false);
    let before: BTreeMap<String, Vec<u8>> = FILES
        .iter()
        .map(|(p, t)| (p.to_string(), t.as_bytes().to_vec()))
        .collect();
    let entry = event["entry_id"].as_str().unwrap();
    rpc.send(&json!({"type": "rewind", "entry_id": entry}).to_string());
    assert_eq!(rpc.close(), 86, "the fault point ends the process");
    let now = tree(&w.project, false);
    let mut restored = 0;
    let paths: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    for path in paths {
        let state = now.get(path);
        let old = before.get(path);
        let new = after.get(path);
        assert!(
            state == old || state == new,
            "{path} is neither as before nor as after: {state:?}"
        );
        if state == old && old != new {
            restored += 1;
        }
    }
    assert_eq!(restored, 3, "{now:?}");
    // No temp file of the restore was left behind.
    assert!(now.keys().all(|p| !p.contains(".zot-")), "{now:?}");
}

#[test]
fn json_mode_reports_the_checkpoint_and_a_deleted_sessions_is_pruned_at_the_next_start() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let w = World::new();
    setup(&w, false);
    let model = rt.block_on(MockModel::start(changing_turns()));
    let run: Run = w
        .against(&model, "anthropic", &["--json", "change everything"])
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    // Every line is checked against the event schema.
    let checkpoint = events(&run)
        .into_iter()
        .find(|e| matches!(typed(e), Event::Checkpoint { .. }))
        .unwrap_or_else(|| panic!("no checkpoint event: {run:?}"));
    assert_eq!(changes(&checkpoint["files"]), expected_changes());
    let store = std::fs::read_dir(w.home.join("checkpoints"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path()
        .join("git");
    let refs = |store: &Path| {
        let out = Command::new("git")
            .args(["--git-dir", store.to_str().unwrap(), "for-each-ref"])
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    assert_eq!(refs(&store), 1);
    for file in super::conversation::session_files(&w) {
        std::fs::remove_file(file).unwrap();
    }
    // Any start prunes: here one that fails for want of a model answer.
    w.zot(&[
        "--no-session",
        "-p",
        "hi",
        "--provider",
        "anthropic",
        "--api-key",
        "k",
        "--base-url",
        &model.url(),
    ]);
    assert_eq!(refs(&store), 0);
}

/// Types `text` and Enter, then waits for `answer` on the screen.
fn send(tmux: &Tmux, text: &str, answer: &str) -> String {
    tmux.type_text(text);
    tmux.keys(&["Enter"]);
    tmux.wait_for(answer)
}

/// Waits until the session file holds `count` checkpoint lines.
fn wait_checkpoints(w: &World, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        // Read as text: a line may be half written while zot runs.
        let lines = super::conversation::session_files(w)
            .iter()
            .filter_map(|file| std::fs::read_to_string(file).ok())
            .map(|text| text.matches(r#"{"type":"checkpoint""#).count())
            .sum::<usize>();
        if lines >= count {
            return;
        }
        assert!(Instant::now() < deadline, "{lines} checkpoint lines");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits for `path` to hold `text`.
fn wait_file(path: &Path, text: Option<&str>) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let now = std::fs::read_to_string(path).ok();
        if now.as_deref() == text {
            return;
        }
        assert!(Instant::now() < deadline, "{}: {now:?}", path.display());
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn undo_in_the_tui_takes_back_the_last_prompt_twice() {
    let w = World::new();
    setup(&w, true);
    let git_before = git_state(&w.project);
    let [changing, answer] = changing_turns();
    let second = json!({"command": "printf 'later\\n' > edit.txt && touch later.txt"});
    let model = MockModel::start([
        changing,
        answer,
        anthropic::tool_call("c4", "bash", &second.to_string()),
        anthropic::text("more changed"),
    ])
    .await;
    let tmux = Tmux::keeping_session(&w, "undo", &model, &[], &[]);
    tmux.wait_for("anthropic/claude-sonnet-5-5");
    send(&tmux, "change everything", "all changed");
    tmux.wait_for("checkpoint: 6 files changed (/undo takes them back)");
    send(&tmux, "change more", "more changed");
    wait_file(&w.project.join("later.txt"), Some(""));

    // The first /undo shows what it will change, then takes back "change more".
    let screen = send(&tmux, "/undo", "Undo the last prompt");
    assert!(screen.contains("before: change more"), "{screen}");
    assert!(screen.contains("delete   later.txt"), "{screen}");
    assert!(screen.contains("restore  edit.txt"), "{screen}");
    tmux.keys(&["Enter"]);
    tmux.wait_for("rewound: 2 files put back");
    wait_file(&w.project.join("edit.txt"), Some("alpha\nBETA\n"));
    assert!(!w.project.join("later.txt").exists());
    let screen = tmux.screen();
    assert!(!screen.contains("more changed"), "{screen}");

    // The second takes back "change everything": the project is as it was.
    tmux.keys(&["C-u"]);
    let screen = send(&tmux, "/undo", "before: change everything");
    assert!(screen.contains("recreate gone.txt"), "{screen}");
    tmux.keys(&["Enter"]);
    tmux.wait_for("rewound: 6 files put back");
    wait_file(&w.project.join("edit.txt"), Some("alpha\nbeta\n"));
    assert_eq!(git_state(&w.project), git_before);
    // The prompt's text is back in the editor.
    tmux.wait_for("change everything");
    tmux.type_text("/exit");
}

#[tokio::test(flavor = "multi_thread")]
async fn large_files_and_nested_repositories_are_named_and_left_alone() {
    let w = World::new();
    setup(&w, false);
    let vendor = w.project.join("vendor/lib");
    std::fs::create_dir_all(&vendor).unwrap();
    git(&vendor, &["init", "-q"]);
    std::fs::write(vendor.join("x.txt"), "theirs\n").unwrap();
    let edit = json!({"path": "edit.txt", "edits": [{"oldText": "beta", "newText": "BETA"}]});
    let bash =
        json!({"command": "head -c 100 /dev/zero > big.bin && echo ours > vendor/lib/x.txt"});
    let model = MockModel::start([
        anthropic::Script::new()
            .tool_call("c1", "edit", &edit.to_string())
            .tool_call("c2", "bash", &bash.to_string())
            .build(),
        anthropic::text("all changed"),
    ])
    .await;
    // Files over 64 bytes are named, not kept.
    let mut rpc = rpc_with(
        &w,
        &model,
        ("ZOT_TEST_CHECKPOINT_LIMITS", "1000,1000000,64"),
    );
    let event = change_everything(&mut rpc);
    assert_eq!(
        changes(&event["files"]),
        [("edit.txt".to_owned(), "modified".to_owned())]
    );
    let notes = event["notes"].to_string();
    assert!(
        notes.contains("nested repositories") && notes.contains("vendor/lib"),
        "{notes}"
    );
    assert!(notes.contains("not restorable: big.bin"), "{notes}");
    let listed = ok_data(call(&mut rpc, json!({"type": "get_checkpoints"})));
    assert_eq!(listed["checkpoints"][0]["unrestorable"], json!(["big.bin"]));
    // The session keeps its hash only: sha256 of its 100 zero bytes.
    let recorded: Vec<Value> = super::conversation::session_files(&w)
        .iter()
        .flat_map(|file| super::conversation::session_lines(file))
        .filter(|line| line["type"] == "checkpoint")
        .collect();
    assert_eq!(
        recorded[0]["checkpoint"]["hashes"]["big.bin"],
        "cd00e292c5970d3c5e2f0ffa5171e555bc46bfc4faddfb4a418b6840b86e79a3"
    );

    let entry = event["entry_id"].as_str().unwrap();
    ok_data(call(&mut rpc, json!({"type": "rewind", "entry_id": entry})));
    assert_eq!(
        std::fs::read_to_string(w.project.join("edit.txt")).unwrap(),
        "alpha\nbeta\n"
    );
    // Neither is touched by the rewind.
    assert_eq!(std::fs::read(w.project.join("big.bin")).unwrap().len(), 100);
    assert_eq!(
        std::fs::read_to_string(vendor.join("x.txt")).unwrap(),
        "ours\n"
    );
    assert_eq!(rpc.close(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn rewind_in_the_tui_flags_the_users_edit_and_can_take_back_the_code_only() {
    let w = World::new();
    let write = |path: &str, text: &str| json!({"path": path, "content": text}).to_string();
    let model = MockModel::start([
        anthropic::tool_call("c1", "write", &write("a.txt", "one\n")),
        anthropic::text("first done"),
        anthropic::tool_call("c2", "write", &write("b.txt", "two\n")),
        anthropic::text("second done"),
    ])
    .await;
    let tmux = Tmux::keeping_session(&w, "rewind", &model, &[], &[]);
    tmux.wait_for("anthropic/claude-sonnet-5-5");
    send(&tmux, "first", "first done");
    send(&tmux, "second", "second done");
    // Once the prompt's checkpoint is written, the user changes a file zot wrote.
    wait_checkpoints(&w, 2);
    std::fs::write(w.project.join("a.txt"), "mine\n").unwrap();

    send(&tmux, "/rewind", "Rewind: back to before a prompt");
    tmux.keys(&["Up"]);
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("before: first");
    assert!(
        screen.contains("delete   a.txt  (changed since: your edit is overwritten)"),
        "{screen}"
    );
    assert!(screen.contains("delete   b.txt"), "{screen}");
    // Code only: the files go, the conversation stays.
    tmux.keys(&["c"]);
    tmux.wait_for("rewound the code: 2 files put back");
    assert!(!w.project.join("a.txt").exists());
    assert!(!w.project.join("b.txt").exists());
    assert!(tmux.screen().contains("second done"));
    tmux.type_text("/exit");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_that_changed_nothing_rewinds_its_conversation_without_a_snapshot() {
    let w = World::new();
    setup(&w, false);
    let model = MockModel::start([anthropic::text("just talk")]).await;
    let mut rpc = Rpc::start(&w, &model, "anthropic", &["-c"], None);
    prompt(&mut rpc, "only talk");
    rpc.done();
    let listed = ok_data(call(&mut rpc, json!({"type": "get_checkpoints"})));
    assert_eq!(listed["checkpoints"][0]["files"], json!([]), "{listed}");
    let entry = listed["checkpoints"][0]["entry_id"].as_str().unwrap();
    let rewound = ok_data(call(&mut rpc, json!({"type": "rewind", "entry_id": entry})));
    assert_eq!(rewound["restored"], json!([]));
    assert_eq!(rewound["text"], "only talk");
    // No prompt wrote, so no store was made, not even for the rewind.
    assert!(!w.home.join("checkpoints").exists());
    let unknown = call(&mut rpc, json!({"type": "rewind", "entry_id": entry}));
    assert_eq!(unknown["success"], false, "{unknown}");
    assert!(
        unknown["error"].as_str().unwrap().contains("no prompt"),
        "{unknown}"
    );
    assert_eq!(rpc.close(), 0);
}
