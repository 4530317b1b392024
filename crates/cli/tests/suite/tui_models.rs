//! The model picker in tmux: Ctrl+P over the models of every provider
//! with a key, a switch to a named provider that keeps the conversation and
//! is saved, and a turn that failed with 401 run again on the model picked
//! without its prompt being sent twice.

use serde_json::{Value, json};
use zot_testkit::{MockModel, anthropic, openai, status};

use super::support::World;
use super::tui::Tmux;

/// A named provider at the loopback server (no key needed there) with two models.
fn chatty(w: &World, model: &MockModel) {
    let config = json!({"providers": {"chatty": {
        "base_url": format!("{}/v1", model.url()),
        "models": [
            {"id": "c1", "context_window": 64000, "max_output": 4000,
             "price": {"input": 0.25, "output": 1.25}},
            {"id": "c2", "context_window": 128000, "max_output": 4000}
        ]
    }}});
    std::fs::write(w.home.join("config.json"), config.to_string()).unwrap();
}

/// Waits (with a deadline) until `text` has left the screen.
fn closed(tmux: &Tmux, text: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while tmux.screen().contains(text) {
        assert!(
            std::time::Instant::now() < deadline,
            "{text:?} stayed on the screen:\n{}",
            tmux.screen()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn saved(w: &World) -> Value {
    serde_json::from_str(&std::fs::read_to_string(w.home.join("config.json")).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_p_switches_to_another_providers_model_keeping_the_conversation() {
    let w = World::new();
    let model = MockModel::start([
        anthropic::text("first answer"),
        openai::text("second answer"),
    ])
    .await;
    chatty(&w, &model);
    let tmux = Tmux::against(&w, "picker", &model, &[]);
    tmux.wait_for("anthropic/claude-sonnet-5-5");
    tmux.type_text("one");
    tmux.keys(&["Enter"]);
    tmux.wait_for("first answer");

    tmux.keys(&["C-p"]);
    let screen = tmux.wait_for("Switch model");
    // The current model is marked; prices and context windows are shown.
    assert!(screen.contains("● anthropic:claude-sonnet-5-5"), "{screen}");
    tmux.type_text("chatty");
    let screen = tmux.wait_for("filter: chatty▏");
    assert!(
        screen.contains("64k context  $0.25/$1.25 per M"),
        "{screen}"
    );
    assert!(screen.contains("128k context  price unknown"), "{screen}");
    assert!(!screen.contains("anthropic:claude"), "{screen}");
    tmux.keys(&["Down", "Enter"]);
    tmux.wait_for("model: chatty:c2 (saved to");
    let config = saved(&w);
    assert_eq!(
        (&config["provider"], &config["model"]),
        (&json!("chatty"), &json!("c2"))
    );
    // `/model` with no argument opens the same picker, the new model marked.
    tmux.type_text("/model");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("Switch model");
    assert!(screen.contains("● chatty:c2"), "{screen}");
    tmux.keys(&["Escape"]);
    // Typed at once, the text would read as Alt+keys after the Escape.
    closed(&tmux, "Switch model");
    // `/model PROVIDER:ID` switches without the picker.
    tmux.type_text("/model anthropic:claude-haiku-4-5");
    tmux.keys(&["Enter"]);
    tmux.wait_for("model: anthropic:claude-haiku-4-5 (saved to");
    tmux.type_text("/model chatty:c2");
    tmux.keys(&["Enter"]);
    tmux.wait_for("model: chatty:c2 (saved to");
    tmux.type_text("two");
    tmux.keys(&["Enter"]);
    tmux.wait_for("second answer");
    let sent = &model.requests()[1];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.body["model"], "c2");
    let messages = sent.body["messages"].to_string();
    assert!(
        messages.contains("one") && messages.contains("first answer"),
        "{messages}"
    );
    tmux.type_text("/exit");
    tmux.keys(&["Enter"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_turn_refused_with_401_runs_again_on_the_model_picked() {
    let w = World::new();
    let model = MockModel::start([
        status(401, anthropic::error_body(401, "invalid x-api-key")),
        openai::text("rescued by c1"),
    ])
    .await;
    chatty(&w, &model);
    // With a session file: the failed attempt stays on a branch of its own.
    let tmux = Tmux::keeping_session(&w, "retry", &model, &[], &[]);
    tmux.wait_for("anthropic/claude-sonnet-5-5");
    tmux.type_text("please answer");
    tmux.keys(&["Enter"]);
    tmux.wait_for("press Ctrl+P to run this turn again on another model");
    tmux.keys(&["C-p"]);
    tmux.wait_for("Run the failed turn again on another model");
    tmux.type_text("chatty:c1");
    tmux.wait_for("filter: chatty:c1▏");
    tmux.keys(&["Enter"]);
    tmux.wait_for("rescued by c1");

    let requests = model.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!(requests[0].path, "/v1/messages");
    let retried = &requests[1];
    assert_eq!(retried.path, "/v1/chat/completions");
    assert_eq!(retried.body["model"], "c1");
    let prompts: Vec<&Value> = retried.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .collect();
    assert_eq!(prompts.len(), 1, "{prompts:?}");
    assert!(
        prompts[0].to_string().contains("please answer"),
        "{prompts:?}"
    );
    tmux.type_text("/exit");
    tmux.keys(&["Enter"]);
}
