//! The conversation: messages made of content blocks. This is the shape
//! sessions store and providers translate to and from their wire formats.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
    /// Tool results, sent back to the model after an assistant message with tool calls.
    Tool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Vec<Block>,
    /// RFC 3339, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
}

/// One block of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Text {
        text: String,
    },
    Image {
        mime_type: String,
        /// Standard base64.
        data: String,
    },
    /// Model reasoning; `signature` is the provider's opaque replay token.
    Thinking {
        thinking: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Reasoning the provider encrypted (Anthropic `redacted_thinking`):
    /// sent back verbatim with its turn.
    RedactedThinking {
        data: String,
    },
    /// An OpenAI Responses API reasoning item: its summary (shown as
    /// thinking) and the encrypted reasoning that, sent back in order with
    /// the calls it preceded, lets a stateless (`store: false`) model keep
    /// its reasoning across tool calls. Only that API reads it back.
    Reasoning {
        id: String,
        #[serde(default)]
        summary: String,
        encrypted_content: String,
    },
    ToolCall {
        id: String,
        name: String,
        args: Value,
    },
    ToolResult {
        call_id: String,
        #[serde(default)]
        is_error: bool,
        /// Text and image blocks.
        content: Vec<Block>,
    },
}

impl Message {
    pub fn new(role: Role, content: Vec<Block>) -> Self {
        Self {
            role,
            content,
            time: Some(now()),
        }
    }

    pub fn user(text: impl Into<String>) -> Self {
        Self::new(Role::User, vec![Block::Text { text: text.into() }])
    }

    /// The text blocks joined with "\n".
    pub fn text(&self) -> String {
        text_of(&self.content)
    }

    /// The tool calls of an assistant message, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = (&str, &str, &Value)> {
        self.content.iter().filter_map(|b| match b {
            Block::ToolCall { id, name, args } => Some((id.as_str(), name.as_str(), args)),
            _ => None,
        })
    }
}

/// The text blocks of `blocks` joined with "\n".
pub fn text_of(blocks: &[Block]) -> String {
    let texts: Vec<&str> = blocks
        .iter()
        .filter_map(|b| match b {
            Block::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n")
}

/// The current time, RFC 3339 with seconds.
pub fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}
