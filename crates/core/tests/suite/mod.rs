mod hooks;
mod parallel_tools;
mod prefix;
mod providers;
mod sessions;
mod sse_props;
mod switch;
mod tool_output;
mod tools;
mod validation;

use std::sync::Arc;

use zot_core::provider::{Provider, ProviderConfig, ProviderKind};
use zot_core::{Agent, AgentConfig, Hooks};
use zot_testkit::MockModel;

/// An agent on `config` whose model is the loopback `model`, spoken to in
/// the Anthropic wire format.
fn agent_against(model: &MockModel, config: AgentConfig, hooks: Arc<dyn Hooks>) -> Agent {
    let provider = Provider::new(ProviderConfig::builtin(
        ProviderKind::Anthropic,
        model.url(),
        "k".into(),
        zot_core::provider::Wire::Messages,
    ));
    Agent::new(provider, config, hooks, "system".into())
}

/// An agent on claude-sonnet-4-5 at the loopback `model`, without hooks,
/// working in `dir`, with what a prompt needs: an event sender (whose
/// receiver is dropped) and a cancel token.
fn sonnet_against(
    model: &MockModel,
    dir: &std::path::Path,
) -> (
    Agent,
    tokio::sync::mpsc::UnboundedSender<zot_core::event::AgentEvent>,
    zot_core::CancellationToken,
) {
    let agent = agent_against(
        model,
        AgentConfig::new(dir, "claude-sonnet-4-5"),
        Arc::new(zot_core::hooks::NoHooks),
    );
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    (agent, tx, zot_core::CancellationToken::new())
}

/// A prompt of one text block.
fn text_prompt(text: &str) -> Vec<zot_core::message::Block> {
    vec![zot_core::message::Block::Text { text: text.into() }]
}
