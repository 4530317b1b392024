//! Compaction: older messages replaced by the model's summary (or an
//! extension's), when the user asks, when a call's input nears the context
//! window, or when the conversation no longer fits it.

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Agent, AgentError};
use crate::event::AgentEvent;
use crate::hooks::{CompactOutcome, CompactPlan, HookEvent, SessionSource};
use crate::message::{Block, Message, Role};
use crate::provider::{Request, StopReason};
use crate::session::{Compaction, Served, summary_message};

/// Messages kept verbatim after a compaction (research zot.md §1.6: keepTail=4).
pub const COMPACT_KEEP_TAIL: usize = 4;

/// Auto-compaction starts by default when a call's input reaches this share
/// of the context window (the agent issue: 85%).
pub const AUTO_COMPACT_RATIO: f64 = 0.85;

/// `max_tokens` of the summarising call.
pub const COMPACT_MAX_TOKENS: u32 = 4096;

const COMPACT_SYSTEM: &str = "You summarise a coding session so it can continue with less context. \
Keep every fact the next steps need: goals, constraints, files and functions touched, decisions and \
why, what is done, what is left, errors seen. Be concise; use the headings Goal, Constraints, \
Progress, Key Decisions, Next Steps, Critical Context.";

/// Characters per token assumed when capping the summary request's input:
/// code and JSON run at about three (the usual estimate of four is for
/// prose), so the cap errs on the side of fitting.
const CHARS_PER_TOKEN: usize = 3;

/// Tokens of the context window kept free for the summary request's system
/// prompt and framing, beyond its output ([`COMPACT_MAX_TOKENS`]).
const COMPACT_OVERHEAD_TOKENS: usize = 2048;

impl Agent {
    pub(super) fn needs_compaction(&self) -> bool {
        match (self.config.context_window, self.config.auto_compact) {
            (Some(window), Some(share)) => self.last_input as f64 >= share * f64::from(window),
            _ => false,
        }
    }

    /// Compaction the user asked for (`/compact`, RPC `compact`): like the
    /// automatic one, it ends with `CompactDone`, here `automatic: false`.
    pub async fn compact_now(
        &mut self,
        events: &mpsc::UnboundedSender<AgentEvent>,
        cancel: &CancellationToken,
    ) -> Result<String, AgentError> {
        let summary = self
            .compact_with(false, COMPACT_KEEP_TAIL, events, cancel)
            .await?;
        let _ = events.send(AgentEvent::CompactDone {
            summary: summary.clone(),
            automatic: false,
        });
        Ok(summary)
    }

    /// Summarises all but the last `keep_tail` messages with the model and
    /// replaces them with the summary. The tail never starts with tool
    /// results, so no tool call is separated from its result; it may start
    /// inside a long tool loop, where compaction is needed most.
    pub async fn compact(
        &mut self,
        keep_tail: usize,
        cancel: &CancellationToken,
    ) -> Result<String, AgentError> {
        let (events, _) = mpsc::unbounded_channel();
        self.compact_with(false, keep_tail, &events, cancel).await
    }

    /// [`compact`](Self::compact), saying whether the context filled up
    /// (`automatic`); the summarising call's usage goes to `events`.
    pub(super) async fn compact_with(
        &mut self,
        automatic: bool,
        keep_tail: usize,
        events: &mpsc::UnboundedSender<AgentEvent>,
        cancel: &CancellationToken,
    ) -> Result<String, AgentError> {
        let entries = serde_json::to_value(&self.messages[..]).unwrap_or_default();
        // The model's own count from the last request (what auto-compaction
        // goes by); before any request, about four characters a token.
        let tokens_before = match self.last_input {
            0 => entries.to_string().len() as u64 / 4,
            counted => counted,
        };
        let (extra, custom) = match self
            .hooks
            .before_compact(automatic, "", tokens_before, entries)
            .await
        {
            CompactPlan::Block { reason } => return Err(AgentError::CompactionBlocked(reason)),
            CompactPlan::Proceed { instruction } => (instruction, None),
            CompactPlan::Custom {
                summary,
                first_kept_index,
            } => (None, Some((summary, first_kept_index))),
        };
        let result = match custom {
            // An index past the end falls back to the model's summary.
            Some((summary, index)) if index <= self.messages.len() => {
                let mut split = index;
                // Never keep a tool result without the call it answers.
                while split > 0
                    && self
                        .messages
                        .get(split)
                        .is_some_and(|m| m.role == Role::Tool)
                {
                    split -= 1;
                }
                self.replace_with_summary(Compaction {
                    summary: summary.clone(),
                    first_kept: split,
                    tokens_before,
                    automatic,
                    served: None,
                });
                Ok((summary, split, "Compacted by extension."))
            }
            _ => match self.summarise(keep_tail, extra.as_deref(), cancel).await {
                Ok((summary, split, served)) => {
                    self.count_usage(&served, events);
                    self.replace_with_summary(Compaction {
                        summary: summary.clone(),
                        first_kept: split,
                        tokens_before,
                        automatic,
                        served: Some(served),
                    });
                    Ok((summary, split, "Compacted."))
                }
                Err(e) => Err(e),
            },
        };
        let outcome = match &result {
            Ok((summary, kept, message)) => CompactOutcome {
                did_compact: true,
                summary: summary.clone(),
                first_kept_index: *kept,
                tokens_before,
                message: (*message).to_owned(),
            },
            Err(e) => CompactOutcome {
                did_compact: false,
                summary: String::new(),
                first_kept_index: 0,
                tokens_before,
                message: format!("Compaction failed: {e}"),
            },
        };
        self.hooks.event(HookEvent::Compacted(outcome)).await;
        result.map(|(summary, ..)| summary)
    }

    /// Puts the summary in place of the messages before `first_kept`, in
    /// the session too.
    fn replace_with_summary(&mut self, compaction: Compaction) {
        let mut compacted = vec![summary_message(&compaction.summary)];
        compacted.extend(self.messages.take().drain(compaction.first_kept..));
        self.messages.replace(compacted);
        // The summary took the place of the messages before `first_kept`.
        if self.stale_thinking_before > 0 {
            self.stale_thinking_before =
                (self.stale_thinking_before + 1).saturating_sub(compaction.first_kept);
        }
        self.last_input = 0;
        self.session_source = Some(SessionSource::Compact);
        self.store_entries();
        if let Some(session) = &mut self.session {
            session.append_compaction(compaction);
        }
    }

    /// The model's summary of all but the last `keep_tail` messages, the
    /// index the kept tail starts at, and who wrote the summary.
    async fn summarise(
        &mut self,
        keep_tail: usize,
        extra: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<(String, usize, Served), AgentError> {
        let mut split = self.messages.len().saturating_sub(keep_tail);
        while split > 0
            && self
                .messages
                .get(split)
                .is_some_and(|m| m.role == Role::Tool)
        {
            split -= 1;
        }
        if split == 0 {
            return Err(AgentError::NothingToCompact);
        }
        let mut transcript = String::new();
        for message in &self.messages[..split] {
            let role = match message.role {
                Role::User => "user",
                Role::Assistant => "assistant",
                Role::Tool => "tool",
            };
            transcript.push_str(&format!("--- {role} ---\n"));
            for block in &message.content {
                match block {
                    Block::Text { text } => transcript.push_str(text),
                    Block::ToolCall { name, args, .. } => {
                        transcript.push_str(&format!("[tool call {name} {args}]"))
                    }
                    Block::ToolResult {
                        content, is_error, ..
                    } => {
                        let text: Vec<String> = content
                            .iter()
                            .filter_map(|b| match b {
                                Block::Text { text } => Some(text.clone()),
                                _ => None,
                            })
                            .collect();
                        let kind = if *is_error {
                            "tool error"
                        } else {
                            "tool result"
                        };
                        transcript.push_str(&format!("[{kind}] {}", text.join("\n")));
                    }
                    Block::Image { .. } => transcript.push_str("[image]"),
                    Block::Thinking { .. }
                    | Block::RedactedThinking { .. }
                    | Block::Reasoning { .. } => {}
                }
                transcript.push('\n');
            }
        }
        let system = match extra {
            Some(extra) if !extra.is_empty() => format!("{COMPACT_SYSTEM}\n{extra}"),
            _ => COMPACT_SYSTEM.to_owned(),
        };
        // The summary request must fit the window it is shrinking.
        if let Some(window) = self.config.context_window {
            let tokens = (window as usize)
                .saturating_sub(COMPACT_MAX_TOKENS as usize + COMPACT_OVERHEAD_TOKENS);
            transcript = cap_transcript(transcript, tokens * CHARS_PER_TOKEN);
        }
        let messages = [Message::user(format!(
            "Summarise this conversation:\n\n{transcript}"
        ))];
        let request = Request {
            model: &self.config.model,
            system: &system,
            messages: &messages,
            tools: &[],
            max_tokens: COMPACT_MAX_TOKENS,
            reasoning: None,
            cache: crate::provider::CacheTtl::Off,
            cache_key: None,
            drop_thinking_before: 0,
            history: None,
        };
        let (tx, _rx) = mpsc::unbounded_channel();
        let completion = self.provider.complete(&request, &tx, cancel).await?;
        let summary = completion.message.text();
        if summary.trim().is_empty() {
            return Err(AgentError::EmptySummary);
        }
        Ok((summary, split, self.served(completion.usage)))
    }

    /// The conversation did not fit the context window (`cause` says how
    /// that showed): compacts it, once per prompt, so the call can be made
    /// again. When it cannot, the turn ends with the error, returned.
    pub(super) async fn overflowed(
        &mut self,
        cause: String,
        compacted: &mut bool,
        events: &mpsc::UnboundedSender<AgentEvent>,
        cancel: &CancellationToken,
    ) -> Result<(), AgentError> {
        let why = self.compact_for_overflow(compacted, events, cancel).await;
        let Err(why) = why else { return Ok(()) };
        let message = format!("{cause}; {why}");
        self.end_turn(events, StopReason::Error, Some(message.clone()))
            .await;
        let _ = events.send(AgentEvent::Error {
            message: message.clone(),
        });
        Err(AgentError::ContextFull(message))
    }

    async fn compact_for_overflow(
        &mut self,
        compacted: &mut bool,
        events: &mpsc::UnboundedSender<AgentEvent>,
        cancel: &CancellationToken,
    ) -> Result<(), String> {
        if std::mem::replace(compacted, true) {
            return Err("it still does not fit after compacting".to_owned());
        }
        self.end_turn(
            events,
            StopReason::Length,
            Some("the conversation no longer fits the model's context window: compacting it and asking again".to_owned()),
        )
        .await;
        match self
            .compact_with(true, COMPACT_KEEP_TAIL, events, cancel)
            .await
        {
            Ok(summary) => {
                let _ = events.send(AgentEvent::CompactDone {
                    summary,
                    automatic: true,
                });
                Ok(())
            }
            Err(e) => Err(format!("compacting failed: {e}")),
        }
    }
}

/// `transcript` cut to at most `max_chars` bytes: its start (the task) and
/// its end (the latest work), with a marker where the middle was left out.
fn cap_transcript(transcript: String, max_chars: usize) -> String {
    if transcript.len() <= max_chars {
        return transcript;
    }
    let floor = |at: usize| {
        (0..=at)
            .rev()
            .find(|i| transcript.is_char_boundary(*i))
            .unwrap_or(0)
    };
    let head = floor(max_chars / 4);
    let tail = floor(transcript.len() - (max_chars - head));
    let left_out = tail - head;
    format!(
        "{}\n[… {left_out} bytes of the conversation left out to fit the context window …]\n{}",
        &transcript[..head],
        &transcript[tail..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capped_transcript_keeps_its_start_and_end() {
        let transcript = format!("TASK{}LATEST", "é".repeat(10_000));
        let capped = cap_transcript(transcript.clone(), 1000);
        assert!(capped.len() < 1100, "{}", capped.len());
        assert!(capped.starts_with("TASK") && capped.ends_with("LATEST"));
        assert!(capped.contains("bytes of the conversation left out"));
        assert_eq!(cap_transcript("short".into(), 1000), "short");
    }
}
