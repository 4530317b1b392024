//! The app's side of a conversation shown whole (a resumed session, a
//! rewind, a compaction): its messages become transcript entries, and tool
//! results find their calls.

use super::App;
use crate::transcript::Entry;
use zot_core::message::{Block, Message, Role};

impl App {
    /// Shows `messages` as the transcript. The messages are the caller's
    /// copy, so their text is moved into the entries rather than copied: a
    /// resumed session's first frame waits for this over thousands of them.
    pub(super) fn load_transcript(&mut self, messages: Vec<Message>) {
        self.transcript.restart(Entry::is_ext_failure);
        let heading = format!("{}\n\n", zot_core::agent::SUMMARY_HEADING);
        for message in messages {
            let mut content = message.content;
            match message.role {
                Role::User => {
                    let text =
                        take_text(&mut content, |t| !zot_core::prompt_files::is_attachment(t));
                    if let Some(summary) = text.strip_prefix(&heading) {
                        self.transcript.push(Entry::Compaction {
                            summary: summary.to_owned(),
                            automatic: false,
                            expanded: false,
                        });
                    } else if !text.is_empty() {
                        self.transcript.push(Entry::User(text));
                    }
                }
                Role::Assistant => {
                    let text = take_text(&mut content, |_| true);
                    if !text.is_empty() {
                        self.transcript.push(Entry::Assistant(text));
                    }
                    for block in content {
                        if let Block::ToolCall { id, name, args } = block {
                            let preview = zot_core::agent::preview(&args);
                            self.transcript.push(Entry::tool(id, name, preview));
                        }
                    }
                }
                Role::Tool => {
                    for block in content {
                        if let Block::ToolResult {
                            call_id,
                            is_error,
                            content,
                        } = block
                        {
                            self.tool_result(&call_id, is_error, content);
                        }
                    }
                }
            }
        }
    }

    /// Tool call `id`'s result: its text blocks, images named, joined.
    pub(super) fn tool_result(&mut self, id: &str, is_error: bool, content: Vec<Block>) {
        let mut text = String::new();
        for (i, block) in content.into_iter().enumerate() {
            if i > 0 {
                text.push('\n');
            }
            match block {
                Block::Text { text: part } if i == 0 => text = part,
                Block::Text { text: part } => text.push_str(&part),
                Block::Image { mime_type, .. } => {
                    text.push_str(&format!("[image {mime_type}]"));
                }
                _ => {}
            }
        }
        self.transcript.update_last(
            |e| e.is_tool_call(id),
            |e| {
                if let Entry::Tool { result, .. } = e {
                    *result = Some((is_error, text));
                }
            },
        );
    }
}

/// The text blocks of `blocks` that `keep` accepts, joined with "\n"; the
/// first is moved out of its block, not copied.
fn take_text(blocks: &mut [Block], keep: impl Fn(&str) -> bool) -> String {
    let mut texts = blocks.iter_mut().filter_map(|b| match b {
        Block::Text { text } if keep(text) => Some(text),
        _ => None,
    });
    let Some(first) = texts.next() else {
        return String::new();
    };
    let mut joined = std::mem::take(first);
    for text in texts {
        joined.push('\n');
        joined.push_str(text);
    }
    joined
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: &str) -> Block {
        Block::Text { text: t.to_owned() }
    }

    #[test]
    fn taken_text_is_the_kept_blocks_joined() {
        let attachment = "<directory path=\"src\">\nmain.rs\n</directory>";
        let mut blocks = vec![
            text(attachment),
            text("first"),
            Block::ToolCall {
                id: "c1".into(),
                name: "read".into(),
                args: serde_json::json!({}),
            },
            text("second"),
        ];
        let typed = |t: &str| !zot_core::prompt_files::is_attachment(t);
        assert_eq!(take_text(&mut blocks.clone(), typed), "first\nsecond");
        assert_eq!(
            take_text(&mut blocks.clone(), typed),
            zot_core::prompt_files::typed_text(&blocks),
        );
        assert_eq!(
            take_text(&mut blocks.clone(), |_| true),
            zot_core::message::text_of(&blocks),
        );
        assert_eq!(take_text(&mut blocks[2..3], |_| true), "");
        // The first kept block's text was moved out, not copied.
        take_text(&mut blocks, typed);
        assert_eq!(blocks[1], text(""));
        assert_eq!(blocks[0], text(attachment));
    }
}
