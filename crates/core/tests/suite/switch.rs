//! Going on elsewhere: a prompt whose turn failed is taken back (so sending
//! it again adds it once), and a switch of provider keeps the conversation
//! but not the old provider's thinking, with the new model's output limit.

use zot_core::message::Role;
use zot_core::provider::{Provider, ProviderConfig, ProviderKind, Wire};
use zot_testkit::{MockModel, anthropic, status};

use super::prefix::thinking_in;

#[tokio::test]
async fn a_failed_prompt_is_taken_back_and_sent_once_to_another_provider_without_thinking() {
    let tmp = tempfile::tempdir().unwrap();
    let model = MockModel::start([
        anthropic::Script::new()
            .thinking("hmm", "sig-1")
            .text("one")
            .build(),
        status(401, anthropic::error_body(401, "invalid x-api-key")),
        anthropic::text("two"),
    ])
    .await;
    let (mut agent, tx, cancel) = super::sonnet_against(&model, tmp.path());
    let prompt = super::text_prompt;
    agent.prompt(prompt("a"), &tx, &cancel).await.unwrap();
    assert!(agent.prompt(prompt("b"), &tx, &cancel).await.is_err());
    assert!(agent.take_back_prompt());
    let roles: Vec<Role> = agent.messages().iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant]);

    let proxy = ProviderConfig {
        name: "proxy".into(),
        ..ProviderConfig::builtin(
            ProviderKind::Anthropic,
            model.url(),
            "k2".into(),
            Wire::Messages,
        )
    };
    agent.set_model(Provider::new(proxy), "claude-haiku-4-5".into());
    assert_eq!(agent.provider().name(), "proxy");
    agent.prompt(prompt("b"), &tx, &cancel).await.unwrap();
    let sent = &model.requests()[2];
    assert_eq!(sent.header("x-api-key"), Some("k2"));
    assert_eq!(thinking_in(&sent.body), 0, "{}", sent.body);
    let users = sent.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .count();
    assert_eq!(users, 2, "{}", sent.body);
    let haiku = zot_core::models::info(ProviderKind::Anthropic, "claude-haiku-4-5");
    assert_eq!(
        sent.body["max_tokens"],
        haiku.max_output.min(zot_core::models::MAX_TOKENS_CAP)
    );
}
