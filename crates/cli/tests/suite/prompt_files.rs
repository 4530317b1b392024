//! `@path` in a prompt attaches the file (or a directory's listing) after
//! the prompt's text, in print and JSON modes as in the TUI; a word naming
//! nothing stays text, a binary file gets a note.

use zot_testkit::{MockModel, anthropic};

use super::rpc::Rpc;
use super::support::{Event, Run, World, text};

#[tokio::test(flavor = "multi_thread")]
async fn print_mode_attaches_referenced_files_and_directories() {
    let w = World::new();
    std::fs::create_dir_all(w.project.join("src")).unwrap();
    std::fs::write(
        w.project.join("src/lib.rs"),
        "pub fn answer() -> u8 { 42 }\n",
    )
    .unwrap();
    std::fs::write(w.project.join("src/util.rs"), "// util\n").unwrap();
    std::fs::write(w.project.join("logo.bin"), b"\x7fELF\0\0").unwrap();
    let model = MockModel::start([anthropic::text("it answers 42")]).await;
    let prompt = "explain @src/lib.rs, list @src and @logo.bin; ask @nobody";
    let run: Run = w
        .against(&model, "anthropic", &["-p", prompt])
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout.trim(), "it answers 42");
    let body = &model.requests()[0].body;
    let content = body["messages"][0]["content"].as_array().unwrap();
    let texts: Vec<&str> = content.iter().filter_map(|b| b["text"].as_str()).collect();
    assert_eq!(texts[0], prompt, "the prompt is sent as typed");
    assert_eq!(
        texts[1],
        "<file path=\"src/lib.rs\">\npub fn answer() -> u8 { 42 }\n</file>"
    );
    assert!(
        texts[2].starts_with("<directory path=\"src\">\n")
            && texts[2].contains(" lib.rs\n")
            && texts[2].contains(" util.rs\n"),
        "{}",
        texts[2]
    );
    assert_eq!(texts[3], "[@logo.bin: not attached: a binary file]");
    assert_eq!(texts.len(), 4, "{texts:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn json_mode_attaches_a_quoted_path_with_spaces() {
    let w = World::new();
    std::fs::write(w.project.join("release notes.md"), "v2: faster\n").unwrap();
    let model = MockModel::start([anthropic::text("faster")]).await;
    let run: Run = w
        .against(
            &model,
            "anthropic",
            &["--json", r#"what changed in @"release notes.md"?"#],
        )
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    let body = &model.requests()[0].body;
    let content = &body["messages"][0]["content"];
    assert_eq!(
        content[1]["text"], "<file path=\"release notes.md\">\nv2: faster\n</file>",
        "{content}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_rpc_prompt_attaches_its_file_in_the_request_and_its_user_message() {
    let w = World::new();
    std::fs::write(w.project.join("todo.txt"), "ship it\n").unwrap();
    let model = MockModel::start([anthropic::text("shipping")]).await;
    let mut rpc = Rpc::start(&w, &model, "anthropic", &[], None);
    rpc.send(r#"{"type":"prompt","message":"do @todo.txt"}"#);
    let user = match rpc.until_event(|e| matches!(e, Event::UserMessage { .. })) {
        Event::UserMessage { content, .. } => content,
        other => unreachable!("until_event returned {other:?}"),
    };
    assert_eq!(text(&user[0]), "do @todo.txt");
    let attached = "<file path=\"todo.txt\">\nship it\n</file>";
    assert_eq!(text(&user[1]), attached);
    rpc.done();
    let content = &model.requests()[0].body["messages"][0]["content"];
    assert_eq!(content[1]["text"], attached, "{content}");
    assert_eq!(rpc.close(), 0);
}
