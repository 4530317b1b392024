//! `AgentEvent`: everything the agent reports while it works. Every front
//! end consumes this one stream; `--json` and `rpc` print it as the typed
//! lines of `zot_protocol::events` (`AgentEvent::to_wire`).

use serde_json::Value;
use zot_protocol::events as wire;
use zot_protocol::events::StopReason;

use crate::message::{Block, Message};
use crate::models::Price;
use crate::provider::usage::Usage;

/// Token counts and cost, per call and cumulative (the session file keeps
/// one per call).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct UsageReport {
    pub input: u64,
    pub output: u64,
    /// The part of `output` spent reasoning; session files written before
    /// it was recorded lack it.
    #[serde(default)]
    pub reasoning: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    /// USD at list prices, when the model's prices are known (else 0).
    pub cost_usd: f64,
}

impl UsageReport {
    /// One call's usage, priced at the model's list prices (0 when unknown).
    pub fn priced(u: Usage, price: Option<&Price>) -> Self {
        let cost_usd = price.map_or(0.0, |price| price.cost(&u));
        Self {
            input: u.input,
            output: u.output,
            reasoning: u.reasoning,
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
        self.reasoning += other.reasoning;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.cost_usd += other.cost_usd;
    }
}

/// Not serialisable on purpose: the streams print [`AgentEvent::to_wire`].
#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    UserMessage {
        content: Vec<Block>,
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
        usage: UsageReport,
        cumulative: UsageReport,
    },
    /// The message as the user sees it (an extension may have replaced its text).
    AssistantMessage {
        content: Vec<Block>,
        time: Option<String>,
    },
    /// An extension hid the assistant message; the transcript keeps it.
    AssistantBlocked {
        extension: String,
        reason: String,
    },
    /// The prompt was dropped before it reached the conversation
    /// (`source`: who dropped it, such as `hook`); `Done` follows.
    PromptBlocked {
        source: String,
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
    /// Output of a running tool. When the reader fell behind, the oldest
    /// output was dropped: `dropped_bytes` bytes came before `text`.
    ToolProgress {
        id: String,
        text: String,
        dropped_bytes: u64,
    },
    ToolResult {
        id: String,
        is_error: bool,
        content: Vec<Block>,
    },
    TurnEnd {
        stop: StopReason,
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
    /// The model's plan after a `todo_write` call (or restored with a session).
    Todo {
        items: Vec<zot_protocol::events::TodoItem>,
    },
    /// The prompt `entry_id` changed these files and a checkpoint of them
    /// was recorded (see [`crate::checkpoint`]).
    Checkpoint {
        entry_id: String,
        files: Vec<zot_protocol::checkpoints::FileChange>,
        notes: Vec<String>,
    },
    /// An event of a subagent: the child agent the `task` call
    /// `parent_tool_call_id` runs (never another `Subagent`).
    Subagent {
        parent_tool_call_id: String,
        event: Box<AgentEvent>,
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

impl UsageReport {
    /// The share of the prompt read from the cache (0 when nothing was sent).
    pub fn cache_share(&self) -> f64 {
        let prompt = self.input + self.cache_read + self.cache_write;
        if prompt == 0 {
            0.0
        } else {
            self.cache_read as f64 / prompt as f64
        }
    }
}

impl From<UsageReport> for wire::Usage {
    fn from(u: UsageReport) -> Self {
        Self {
            input: u.input,
            output: u.output,
            reasoning: u.reasoning,
            cache_read: u.cache_read,
            cache_write: u.cache_write,
            cost_usd: u.cost_usd,
        }
    }
}

/// A block as the streams show it: an image's size in `bytes`, not its data.
pub fn wire_block(block: &Block) -> wire::Block {
    match block {
        Block::Text { text } => wire::Block::Text { text: text.clone() },
        Block::Image { mime_type, data } => {
            let padding = data.bytes().rev().take_while(|b| *b == b'=').count();
            let bytes = (data.len() / 4 * 3).saturating_sub(padding.min(2));
            wire::Block::Image {
                mime_type: mime_type.clone(),
                bytes: bytes as u64,
            }
        }
        Block::Thinking {
            thinking,
            signature,
        } => wire::Block::Thinking {
            thinking: thinking.clone(),
            signature: signature.clone(),
        },
        Block::RedactedThinking { .. } => wire::Block::RedactedThinking {},
        Block::Reasoning { summary, .. } => wire::Block::Thinking {
            thinking: summary.clone(),
            signature: None,
        },
        Block::ToolCall { id, name, args } => wire::Block::ToolCall {
            id: id.clone(),
            name: name.clone(),
            args: args.clone(),
        },
        Block::ToolResult {
            call_id,
            is_error,
            content,
        } => wire::Block::ToolResult {
            call_id: call_id.clone(),
            is_error: *is_error,
            content: wire_blocks(content),
        },
    }
}

fn wire_blocks(blocks: &[Block]) -> Vec<wire::Block> {
    blocks.iter().map(wire_block).collect()
}

impl AgentEvent {
    /// The event as a `--json` / `zot rpc` line: a subagent's carries the
    /// id of its `task` call.
    pub fn to_line(&self) -> wire::EventLine {
        match self {
            Self::Subagent {
                parent_tool_call_id,
                event,
            } => wire::EventLine {
                event: event.to_wire(),
                parent_tool_call_id: Some(parent_tool_call_id.clone()),
            },
            event => event.to_wire().into(),
        }
    }

    /// The event as a stream event (a subagent's without its `task` call:
    /// see [`to_line`](Self::to_line)).
    pub fn to_wire(&self) -> wire::Event {
        use wire::Event as W;
        match self.clone() {
            Self::UserMessage { content, time } => W::UserMessage {
                content: wire_blocks(&content),
                time,
            },
            Self::TurnStart { step } => W::TurnStart { step },
            Self::AssistantStart => W::AssistantStart,
            Self::TextDelta { delta } => W::TextDelta { delta },
            Self::ThinkingDelta { delta } => W::ThinkingDelta { delta },
            Self::ToolUseStart { id, name } => W::ToolUseStart { id, name },
            Self::ToolUseArgs { id, delta } => W::ToolUseArgs { id, delta },
            Self::ToolUseEnd { id } => W::ToolUseEnd { id },
            Self::Usage { usage, cumulative } => W::Usage {
                usage: usage.into(),
                cumulative: cumulative.into(),
            },
            Self::AssistantMessage { content, time } => W::AssistantMessage {
                content: wire_blocks(&content),
                time,
            },
            Self::AssistantBlocked { extension, reason } => {
                W::AssistantBlocked { extension, reason }
            }
            Self::PromptBlocked { source, reason } => W::PromptBlocked { source, reason },
            Self::ToolCall { id, name, args } => W::ToolCall { id, name, args },
            Self::ToolConfirmationRequested { id, name, preview } => {
                W::ToolConfirmationRequested { id, name, preview }
            }
            Self::ToolProgress {
                id,
                text,
                dropped_bytes,
            } => W::ToolProgress {
                id,
                text,
                dropped_bytes,
            },
            Self::ToolResult {
                id,
                is_error,
                content,
            } => W::ToolResult {
                id,
                is_error,
                content: wire_blocks(&content),
            },
            Self::TurnEnd { stop, error } => W::TurnEnd { stop, error },
            Self::Done => W::Done,
            Self::CompactDone { summary, automatic } => W::CompactDone { summary, automatic },
            Self::Error { message } => W::Error { message },
            Self::Todo { items } => W::Todo { items },
            Self::Checkpoint {
                entry_id,
                files,
                notes,
            } => W::Checkpoint {
                entry_id,
                files,
                notes,
            },
            Self::Subagent { event, .. } => event.to_wire(),
        }
    }
}
