//! Text the agent makes of messages: the one-line preview of a tool call,
//! a message's text replaced, the note on an answer cut at the output
//! limit, and a transcript capped to fit the summary request.

use serde_json::Value;

use crate::message::{Block, Message, now};

/// Longest tool preview in a confirmation (research zot.md §1.6).
pub const PREVIEW_CHARS: usize = 120;

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
/// file_path, url, query, name, description (a task's); else the JSON; cut
/// to [`PREVIEW_CHARS`].
pub fn preview(args: &Value) -> String {
    let text = [
        "command",
        "path",
        "file_path",
        "url",
        "query",
        "name",
        "description",
    ]
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
