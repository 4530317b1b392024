//! The request's prefix (system prompt and tools) noted each turn, so a
//! change of it leaves thinking bound to the old prefix out.

use super::Agent;
use crate::message::Role;
use crate::tool::{ToolSpec, ToolsSeen};

/// What the last request's prefix was made of. Kept rather than hashed: a
/// turn compares the system prompt and the tools' names and descriptions
/// as bytes and their schemas by pointer, where a hash walked every schema
/// and every string on every turn.
#[derive(Debug)]
pub(super) struct Prefix {
    system: Option<String>,
    tools: ToolsSeen,
}

impl Prefix {
    fn of(system: Option<&str>, tools: &[ToolSpec]) -> Self {
        Self {
            system: system.map(str::to_owned),
            tools: ToolsSeen::of(tools),
        }
    }

    fn matches(&self, system: Option<&str>, tools: &[ToolSpec]) -> bool {
        self.system.as_deref() == system && self.tools.matches(tools)
    }
}

impl Agent {
    /// Notes the prefix (system prompt and tools) of the coming request.
    /// When it changed (plan mode, an extension reload, an MCP server
    /// joining), the provider's cache starts again from there, and earlier
    /// thinking, bound to the old prefix, is left out from now on; only the
    /// running tool loop's own thinking stays, as the API needs it.
    pub(super) fn note_prefix(&mut self, tools: &[ToolSpec]) {
        let system = self.prepared.as_deref();
        match &self.prefix {
            Some(last) if last.matches(system, tools) => return,
            Some(_) => {
                let loop_start = match self.messages.last() {
                    Some(last) if last.role == Role::Tool => self
                        .messages
                        .iter()
                        .rposition(|m| m.role == Role::Assistant)
                        .unwrap_or(self.messages.len()),
                    _ => self.messages.len(),
                };
                self.stale_thinking_before = self.stale_thinking_before.max(loop_start);
                tracing::debug!(
                    stale_thinking_before = self.stale_thinking_before,
                    "system prompt or tools changed: the prompt cache starts again"
                );
            }
            None => {}
        }
        self.prefix = Some(Prefix::of(system, tools));
    }
}
