//! What zot prints to a terminal carries no control sequences from outside
//! zot (the model's answer, project file names), while a pipe gets the text
//! as it is. The terminal is a real pseudo-terminal (python3's `pty`).

use zot_testkit::{MockModel, anthropic};

use super::support::{Run, World, on_terminal};

/// OSC 52 (write the clipboard), a colour and a window title.
const HOSTILE: &str = "\u{1b}]52;c;aGk=\u{7}safe \u{1b}[31mred\u{1b}[0m\u{1b}]0;title\u{7} end";

#[tokio::test(flavor = "multi_thread")]
async fn the_answer_on_a_terminal_has_no_escapes_and_a_pipe_gets_it_whole() {
    let w = World::new();
    let model = MockModel::start([anthropic::text(HOSTILE), anthropic::text(HOSTILE)]).await;
    let args = ["-p", "--no-session", "hi"];
    let run = on_terminal(&w.against(&model, "anthropic", &args));
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("safe red end"), "{run:?}");
    assert!(
        !run.stdout.contains('\u{1b}') && !run.stdout.contains('\u{7}'),
        "{run:?}"
    );

    let piped: Run = w
        .against(&model, "anthropic", &args)
        .output()
        .unwrap()
        .into();
    assert_eq!(piped.stdout, format!("{HOSTILE}\n"), "{piped:?}");
}

#[test]
fn project_file_names_reach_a_terminal_without_escapes() {
    let w = World::new();
    let name = "srv\u{1b}]52;c;aGk=\u{7}\u{1b}[2J";
    std::fs::write(
        w.project.join(".mcp.json"),
        serde_json::json!({"mcpServers": {name: {"command": "true"}}}).to_string(),
    )
    .unwrap();
    let commands = w.project.join(".claude/commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(commands.join("cmd\u{1b}[2Jx.md"), "Say hi").unwrap();

    let list = on_terminal(&w.cmd(&["mcp", "list"]));
    assert!(list.stdout.contains("srv"), "{list:?}");
    assert!(!list.stdout.contains('\u{1b}'), "{list:?}");

    // The warnings about both files name them, without their escapes.
    let warned = on_terminal(&w.cmd(&["-p", "--no-session", "hi"]));
    assert!(
        warned.stdout.contains("commands/cmdx.md") && warned.stdout.contains("mcpServers.srv"),
        "{warned:?}"
    );
    assert!(!warned.stdout.contains('\u{1b}'), "{warned:?}");
}
