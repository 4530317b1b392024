//! The request's prefix (system prompt and tools) noted each turn, so a
//! change of it leaves thinking bound to the old prefix out.

use serde_json::Value;

use super::Agent;
use crate::message::Role;
use crate::tool::ToolSpec;

impl Agent {
    /// Notes the prefix (system prompt and tools) of the coming request.
    /// When it changed (plan mode, an extension reload, an MCP server
    /// joining), the provider's cache starts again from there, and earlier
    /// thinking, bound to the old prefix, is left out from now on; only the
    /// running tool loop's own thinking stays, as the API needs it.
    pub(super) fn note_prefix(&mut self, tools: &[ToolSpec]) {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.prepared.hash(&mut hasher);
        for tool in tools {
            tool.name.hash(&mut hasher);
            tool.description.hash(&mut hasher);
            hash_json(&tool.schema, &mut hasher);
        }
        let prefix = hasher.finish();
        if self.prefix.is_some_and(|old| old != prefix) {
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
        self.prefix = Some(prefix);
    }
}

/// Feeds `value` to `hasher` as its JSON text would (objects in their
/// order), without writing that text: the prompt prefix's fingerprint is
/// taken on every turn, over every tool's schema.
fn hash_json(value: &Value, hasher: &mut impl std::hash::Hasher) {
    use std::hash::Hash;
    match value {
        Value::Null => 0u8.hash(hasher),
        Value::Bool(b) => (1u8, b).hash(hasher),
        Value::Number(n) => {
            (2u8, n.as_f64().map(f64::to_bits), n.as_i64(), n.as_u64()).hash(hasher)
        }
        Value::String(text) => (3u8, text).hash(hasher),
        Value::Array(items) => {
            (4u8, items.len()).hash(hasher);
            for item in items {
                hash_json(item, hasher);
            }
        }
        Value::Object(fields) => {
            (5u8, fields.len()).hash(hasher);
            for (key, field) in fields {
                key.hash(hasher);
                hash_json(field, hasher);
            }
        }
    }
}
