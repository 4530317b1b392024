mod hooks;
mod parallel_tools;
mod prefix;
mod providers;
mod sse_props;
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
