//! What the TUI remembers: `/model <id>` goes to the user config, and the
//! transcript says where, and when the environment or a project file overrides it.

use zot_tui::transcript::Entry;

use super::support::{app, app_with, config};

#[tokio::test]
async fn model_is_saved_and_the_status_line_says_where() {
    let (mut app, host, _) = app();
    app.submit("/model claude-haiku-4-5");
    assert_eq!(app.config().model, "claude-haiku-4-5");
    assert_eq!(*host.saved_models.lock().unwrap(), ["claude-haiku-4-5"]);
    // In the transcript, where the switch happened.
    let Some(Entry::Info(text)) = app.entries().last() else {
        panic!("{:?}", app.entries());
    };
    assert!(
        text.contains("saved to /home/pat/.local/state/zot/config.json"),
        "{text}"
    );
    assert!(!text.contains("overrides"), "{text}");
}

#[tokio::test]
async fn the_status_line_names_what_overrides_a_saved_model() {
    for by in [
        "env ZOT_MODEL",
        "project /home/pat/project/.zot/config.json",
    ] {
        let mut cfg = config();
        cfg.model_override = Some(by.into());
        let (mut app, host, _) = app_with(cfg);
        app.submit("/model claude-haiku-4-5");
        assert_eq!(host.saved_models.lock().unwrap().len(), 1);
        let Some(Entry::Info(text)) = app.entries().last() else {
            panic!("{:?}", app.entries());
        };
        assert!(text.contains(&format!("but {by} overrides it")), "{text}");
    }
}

#[tokio::test]
async fn config_warnings_are_on_the_first_screen() {
    let mut cfg = config();
    cfg.warnings = vec!["/p/.zot/config.json: \"base_url\" is ignored".into()];
    let (mut app, _, _) = app_with(cfg);
    assert!(
        matches!(&app.entries()[0], Entry::Info(t) if t.contains("base_url") && t.starts_with("warning:"))
    );
}
