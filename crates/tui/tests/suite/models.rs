//! The model picker's offer after a failed turn: Ctrl+P opens the picker
//! to run that turn again, until a new prompt makes it a plain switch.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use zot_tui::modal::Dialog;
use zot_tui::transcript::Entry;
use zot_tui::worker::WorkerEvent;

use super::support::{app, render};

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

#[tokio::test]
async fn ctrl_p_runs_the_failed_turn_again_until_a_new_prompt_is_sent() {
    let (mut app, _host, _rx) = app();
    app.on_key(ctrl('p'));
    let screen = render(&mut app, 100, 30);
    assert!(screen.contains("Switch model"), "{screen}");
    assert!(screen.contains("● anthropic:claude-sonnet-4-5"), "{screen}");
    app.on_key(KeyEvent::from(KeyCode::Esc));
    assert!(app.dialog().is_none());

    app.on_worker(WorkerEvent::Retryable);
    assert!(
        matches!(app.entries().last(), Some(Entry::Info(t)) if t.contains("Ctrl+P to run this turn again"))
    );
    app.on_key(ctrl('p'));
    assert!(matches!(app.dialog(), Some(Dialog::Models(_))));
    let screen = render(&mut app, 100, 30);
    assert!(screen.contains("Run the failed turn again"), "{screen}");
    app.on_key(KeyEvent::from(KeyCode::Esc));

    app.submit("something else");
    app.on_key(ctrl('p'));
    let screen = render(&mut app, 100, 30);
    assert!(screen.contains("Switch model"), "{screen}");
}
