//! Text the agent makes of messages: the one-line preview of a tool call,
//! a message's text replaced, the note on an answer cut at the output
//! limit, and a transcript capped to fit the summary request.

use serde_json::Value;

use super::PREVIEW_CHARS;
use crate::message::{Block, Message, now};

/// A copy of `message` whose text blocks are replaced by one block of
/// `text` at the position of the first.
pub(super) fn with_text(message: &Message, text: &str) -> Message {
    let mut content = Vec::new();
    let mut placed = false;
    for block in &message.content {
        match block {
            Block::Text { .. } if !placed => {
                content.push(Block::Text {
                    text: text.to_owned(),
                });
                placed = true;
            }
            Block::Text { .. } => {}
            other => content.push(other.clone()),
        }
    }
    Message {
        role: message.role,
        content,
        time: message.time.clone().or_else(|| Some(now())),
    }
}

/// The one-line preview of a tool call: the first of command, path,
/// file_path, url, query, name; else the JSON; cut to [`PREVIEW_CHARS`].
pub fn preview(args: &Value) -> String {
    let text = ["command", "path", "file_path", "url", "query", "name"]
        .iter()
        .find_map(|key| args.get(key).and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| args.to_string());
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() > PREVIEW_CHARS {
        let cut: String = line.chars().take(PREVIEW_CHARS - 1).collect();
        format!("{cut}…")
    } else {
        line.to_owned()
    }
}

/// Drops the tool calls of an answer cut at the output limit (the last one
/// is incomplete, and none may run on a cut answer) and says so.
pub(super) fn cut_note(message: &mut Message, max_tokens: u32) -> String {
    let cut: Vec<String> = message
        .tool_calls()
        .map(|(_, name, _)| name.to_owned())
        .collect();
    message
        .content
        .retain(|block| !matches!(block, Block::ToolCall { .. }));
    let mut note = format!("the answer was cut at the output limit ({max_tokens} tokens)");
    if !cut.is_empty() {
        note.push_str(&format!(
            "; its tool calls were not run: {}",
            cut.join(", ")
        ));
    }
    note
}

/// `transcript` cut to at most `max_chars` bytes: its start (the task) and
/// its end (the latest work), with a marker where the middle was left out.
pub(super) fn cap_transcript(transcript: String, max_chars: usize) -> String {
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
