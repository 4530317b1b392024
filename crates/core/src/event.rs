//! `AgentEvent`: everything the agent reports while it works. Every front
//! end consumes this one stream; `--json` and `rpc` are serialisations of it.

use serde::Serialize;
use serde_json::Value;

use crate::message::{Block, Message};
use crate::provider::{StopReason, Usage};

/// Token counts and cost, per call and cumulative.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct UsageReport {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    /// USD at list prices, when the model's prices are known (else 0).
    pub cost_usd: f64,
}

impl UsageReport {
    /// One call's usage, priced at `price` (USD per million input and output
    /// tokens); cache reads cost a tenth of input, cache writes a quarter more.
    pub fn priced(u: Usage, price: Option<(f64, f64)>) -> Self {
        let cost_usd = price.map_or(0.0, |(input, output)| {
            (u.input as f64 * input
                + u.output as f64 * output
                + u.cache_read as f64 * input * 0.1
                + u.cache_write as f64 * input * 1.25)
                / 1e6
        });
        Self {
            input: u.input,
            output: u.output,
            cache_read: u.cache_read,
            cache_write: u.cache_write,
            cost_usd,
        }
    }
}

impl From<Usage> for UsageReport {
    fn from(u: Usage) -> Self {
        Self::priced(u, None)
    }
}

impl std::ops::AddAssign for UsageReport {
    fn add_assign(&mut self, other: Self) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.cost_usd += other.cost_usd;
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    UserMessage {
        content: Vec<Block>,
        #[serde(skip_serializing_if = "Option::is_none")]
        time: Option<String>,
    },
    /// 1-based per prompt.
    TurnStart {
        step: u32,
    },
    AssistantStart,
    TextDelta {
        delta: String,
    },
    ThinkingDelta {
        delta: String,
    },
    ToolUseStart {
        id: String,
        name: String,
    },
    ToolUseArgs {
        id: String,
        delta: String,
    },
    ToolUseEnd {
        id: String,
    },
    Usage {
        #[serde(flatten)]
        usage: UsageReport,
        cumulative: UsageReport,
    },
    /// The message as the user sees it (an extension may have replaced its text).
    AssistantMessage {
        content: Vec<Block>,
        #[serde(skip_serializing_if = "Option::is_none")]
        time: Option<String>,
    },
    /// An extension hid the assistant message; the transcript keeps it.
    AssistantBlocked {
        extension: String,
        reason: String,
    },
    ToolCall {
        id: String,
        name: String,
        args: Value,
    },
    ToolConfirmationRequested {
        id: String,
        name: String,
        preview: String,
    },
    ToolProgress {
        id: String,
        text: String,
    },
    ToolResult {
        id: String,
        is_error: bool,
        content: Vec<Block>,
    },
    TurnEnd {
        stop: StopReason,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The prompt is finished.
    Done,
    /// Older messages were replaced by a summary.
    CompactDone {
        summary: String,
        automatic: bool,
    },
    Error {
        message: String,
    },
}

impl AgentEvent {
    pub fn assistant(message: &Message) -> Self {
        Self::AssistantMessage {
            content: message.content.clone(),
            time: message.time.clone(),
        }
    }
}
