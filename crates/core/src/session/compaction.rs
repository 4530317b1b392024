//! What a compaction leaves in a session: the record of it, who served the
//! summarising call, and the conversation it makes (the summary message,
//! then the messages kept). Below the session file and its tree, which both
//! replay it.

use serde::{Deserialize, Serialize};

use crate::message::Message;
use crate::provider::usage::Usage;

/// The first line of a compacted conversation's summary message.
pub const SUMMARY_HEADING: &str = "## Context Summary (compacted)";

/// The message a compaction puts in place of the messages it replaced.
pub fn summary_message(summary: &str) -> Message {
    Message::user(format!("{SUMMARY_HEADING}\n\n{summary}"))
}

/// Who produced an assistant message: the provider and model that served
/// the call, and its token counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Served {
    pub provider: String,
    pub model: String,
    pub usage: Usage,
}

/// A compaction as the session records it: the messages before
/// `first_kept` (an index into the conversation as it was) were replaced
/// by one [`summary_message`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Compaction {
    pub summary: String,
    pub first_kept: usize,
    /// The context's size before, in tokens (the model's count when known).
    pub tokens_before: u64,
    /// Started because the context filled up, not asked for.
    #[serde(default)]
    pub automatic: bool,
    /// The summarising call, when a model wrote the summary (an extension may).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served: Option<Served>,
}

/// `messages` after `compaction`: its summary, then the messages it kept.
pub(super) fn compact(messages: &mut Vec<Message>, compaction: &Compaction) {
    let kept = messages.split_off(compaction.first_kept.min(messages.len()));
    *messages = std::iter::once(summary_message(&compaction.summary))
        .chain(kept)
        .collect();
}
