//! The editor's `@` file picker and the theme that follows the terminal's
//! background, end to end in tmux: what the picker lists and inserts, and
//! the file it names reaching the model; light colours on a light pane.

use std::process::Command;
use std::time::{Duration, Instant};

use zot_testkit::{MockModel, anthropic};

use super::conversation::texts;
use super::support::World;
use super::tui::Tmux;

/// Waits until `screen` no longer shows `text`.
fn wait_gone(tmux: &Tmux, text: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let screen = tmux.screen();
        if !screen.contains(text) {
            return screen;
        }
        assert!(Instant::now() < deadline, "{text:?} stays:\n{screen}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until the model has had `n` requests.
fn wait_requests(model: &MockModel, n: usize, tmux: &Tmux) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while model.requests().len() < n {
        assert!(
            Instant::now() < deadline,
            "no request {n}; screen:\n{}",
            tmux.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn git(dir: &std::path::Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_at_picker_lists_filters_and_inserts_and_the_file_is_attached() {
    let w = World::new();
    git(&w.project, &["init", "-q"]);
    std::fs::write(w.project.join(".gitignore"), "*.log\n").unwrap();
    std::fs::create_dir_all(w.project.join("src")).unwrap();
    std::fs::create_dir_all(w.project.join("docs")).unwrap();
    std::fs::write(w.project.join("src/main.rs"), "fn main() { MARKER_42 }\n").unwrap();
    std::fs::write(w.project.join("docs/guide.md"), "# guide\n").unwrap();
    std::fs::write(w.project.join("build.log"), "ignored\n").unwrap();
    let model = MockModel::start([anthropic::text("read it"), anthropic::text("listed")]).await;
    let tmux = Tmux::against(&w, "at-picker", &model, &[]);
    tmux.wait_for("anthropic/claude-sonnet-5-5");

    // An address is no reference: no picker.
    tmux.type_text("mail me@x.org");
    tmux.wait_for("mail me@x.org");
    assert!(!tmux.screen().contains("Enter/Tab insert"));
    tmux.keys(&["C-u"]);

    tmux.type_text("explain @");
    let screen = tmux.wait_for("@src/main.rs");
    assert!(
        screen.contains("@docs/guide.md") && screen.contains("Enter/Tab insert"),
        "{screen}"
    );
    assert!(
        !screen.contains("build.log"),
        "a .gitignored file: {screen}"
    );
    tmux.type_text("mai");
    wait_gone(&tmux, "@docs/guide.md");
    tmux.keys(&["Enter"]);
    let screen = wait_gone(&tmux, "Enter/Tab insert");
    assert!(screen.contains("explain @src/main.rs"), "{screen}");
    assert_eq!(model.requests().len(), 0, "Enter picked, it did not send");
    tmux.keys(&["Enter"]);
    tmux.wait_for("read it");
    let sent = texts(&model.requests()[0].body);
    assert_eq!(
        sent[0],
        "explain @src/main.rs |<file path=\"src/main.rs\">\nfn main() { MARKER_42 }\n</file>"
    );

    // A directory: Tab inserts it and the picker goes on inside it.
    tmux.type_text("list @doc");
    tmux.wait_for("@docs/guide.md");
    tmux.keys(&["Tab"]);
    tmux.wait_for("list @docs/");
    tmux.type_text(" now");
    wait_gone(&tmux, "Enter/Tab insert");
    tmux.keys(&["Enter"]);
    wait_requests(&model, 2, &tmux);
    let sent = texts(&model.requests()[1].body);
    let last = sent.last().unwrap();
    assert!(
        last.starts_with("list @docs/ now|<directory path=\"docs/\">\n")
            && last.contains("guide.md"),
        "{last}"
    );
    tmux.type_text("/exit");
    tmux.keys(&["Enter"]);
}

/// The light theme's border colour as tmux shows it (`capture-pane -e`).
const LIGHT_BORDER: &str = "38;2;154;154;154";

#[tokio::test(flavor = "multi_thread")]
async fn a_light_terminal_gets_the_light_theme_unless_the_config_names_one() {
    // tmux answers the OSC 11 query with the pane's background.
    let light = "set -g window-style 'bg=#ffffff'\n";
    // A loaded machine may take longer than the default wait to answer.
    let wait = [("ZOT_TERMINAL_TIMEOUT_MS", "5000".to_owned())];
    let w = World::new();
    let tmux = Tmux::start_configured(&w, "light", &["--no-session"], &wait, light);
    tmux.wait_for("no API key");
    let styled = tmux.styled_screen();
    assert!(styled.contains(LIGHT_BORDER), "{styled}");
    // Nothing of the terminal's answers reached the editor.
    assert!(!tmux.screen().contains("rgb:"), "{}", tmux.screen());
    drop(tmux);

    let dark = Tmux::start(&w, "dark", &["--no-session"], &[]);
    dark.wait_for("no API key");
    assert!(!dark.styled_screen().contains(LIGHT_BORDER));
    drop(dark);

    std::fs::write(w.home.join("config.json"), r#"{"theme":"dark"}"#).unwrap();
    let named = Tmux::start_configured(&w, "named", &["--no-session"], &wait, light);
    named.wait_for("no API key");
    assert!(!named.styled_screen().contains(LIGHT_BORDER));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resumed_prompt_shows_as_typed_without_its_attachment() {
    let w = World::new();
    std::fs::write(w.project.join("notes.md"), "ATTACHED_BODY\n").unwrap();
    let model = MockModel::start([anthropic::text("noted")]).await;
    let first: super::support::Run = w
        .against(&model, "anthropic", &["-p", "summarise @notes.md"])
        .output()
        .unwrap()
        .into();
    assert_eq!(first.code, 0, "{first:?}");
    assert!(
        model.requests()[0]
            .body
            .to_string()
            .contains("ATTACHED_BODY")
    );
    let tmux = Tmux::keeping_session(&w, "resume-at", &model, &["-c"], &[]);
    let screen = tmux.wait_for("noted");
    assert!(screen.contains("› summarise @notes.md"), "{screen}");
    assert!(!screen.contains("ATTACHED_BODY"), "{screen}");
}
