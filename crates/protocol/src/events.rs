//! The front-end protocol's events: what `--json` prints and `zot rpc`
//! streams, one JSON object per line, `type` first. Every line zot writes in
//! those modes is serialised from these types; `schema/` holds their JSON
//! Schema for clients in any language.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Why a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its answer.
    EndTurn,
    /// The model asked for tools; the agent runs them and calls it again.
    ToolUse,
    /// The output hit the token limit.
    Length,
    Error,
    /// The user cancelled.
    Aborted,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::EndTurn => "end_turn",
            Self::ToolUse => "tool_use",
            Self::Length => "length",
            Self::Error => "error",
            Self::Aborted => "aborted",
        }
    }
}
