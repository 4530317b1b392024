//! When the system prompt or the tool list changes mid-session (here plan
//! mode, which offers only read-only tools), the cache restarts and earlier
//! thinking, bound to the old prefix, is left out of later requests.

use serde_json::Value;
use zot_testkit::{MockModel, anthropic};

pub(super) fn thinking_in(body: &Value) -> usize {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "thinking")
        .count()
}

#[tokio::test]
async fn a_changed_tool_list_leaves_earlier_thinking_out() {
    let tmp = tempfile::tempdir().unwrap();
    let model = MockModel::start([
        anthropic::Script::new()
            .thinking("hmm", "sig-1")
            .text("one")
            .build(),
        anthropic::Script::new()
            .thinking("more", "sig-2")
            .text("two")
            .build(),
        anthropic::text("three"),
    ])
    .await;
    let (mut agent, tx, cancel) = super::sonnet_against(&model, tmp.path());
    let prompt = super::text_prompt;
    agent.prompt(prompt("a"), &tx, &cancel).await.unwrap();
    agent.prompt(prompt("b"), &tx, &cancel).await.unwrap();
    // Same prefix: the first answer's thinking goes back verbatim.
    assert_eq!(thinking_in(&model.requests()[1].body), 1);
    agent.set_plan(true);
    agent.prompt(prompt("c"), &tx, &cancel).await.unwrap();
    let third = &model.requests()[2].body;
    assert_ne!(third["tools"], model.requests()[1].body["tools"]);
    assert_eq!(thinking_in(third), 0, "{third}");
}
