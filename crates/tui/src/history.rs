//! A conversation shown whole (a resumed session, a rewind, a compaction)
//! as transcript entries, made newest first a slice at a time: a resumed
//! session's first frame needs only its last screen, and older messages
//! become entries as the chat reaches them.

use crate::entry::Entry;
use zot_core::message::{Block, Message, Role};

/// Messages made into entries at a time as the chat reaches them. A screen
/// of 40 rows is a few dozen messages at most, so the first frame makes one
/// slice (that frame of a resumed 10,000-message session, the slice and the
/// drawing, took 0.8-1.3 ms of CPU at the release profile, BENCHMARKS.md,
/// issue 37); paging up makes the next slice when it reaches the top of the
/// last.
pub const SLICE_MESSAGES: usize = 128;

/// A tool result whose call was not in its slice: the call id, whether it
/// failed, its text.
type Orphan = (String, bool, String);

/// The messages of a conversation not made into entries yet.
#[derive(Default)]
pub(crate) struct History {
    /// Oldest first; slices are taken from the end.
    messages: Vec<Message>,
    /// Results of newer slices whose call was further back, in message
    /// order: each older slice gives them its calls, as the whole
    /// conversation would have.
    orphans: Vec<Orphan>,
    /// The heading that starts a compaction's summary, formatted once.
    heading: String,
}

impl History {
    pub(crate) fn new(messages: Vec<Message>) -> Self {
        Self {
            messages,
            orphans: Vec::new(),
            heading: format!("{}\n\n", zot_core::agent::SUMMARY_HEADING),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// The entries of the newest `count` messages or so, oldest first,
    /// with room for `room` more (none once every message was made). A
    /// slice never starts at a tool result, so results are made with their
    /// calls. The messages are moved into the entries, not copied.
    pub(crate) fn older(&mut self, count: usize, room: usize) -> Vec<Entry> {
        if self.messages.is_empty() {
            return Vec::new();
        }
        let mut start = self.messages.len().saturating_sub(count);
        while start > 0 && self.messages[start].role == Role::Tool {
            start -= 1;
        }
        let slice = if start == 0 {
            std::mem::take(&mut self.messages)
        } else {
            self.messages.split_off(start)
        };
        // About an entry a message (a prompt, an answer, a call; results
        // join their calls).
        let mut entries = Vec::with_capacity(slice.len() + room);
        let mut orphans = Vec::new();
        for message in slice {
            self.make(message, &mut entries, &mut orphans);
        }
        // What newer slices could not place, then this slice's own.
        let mut unplaced = Vec::new();
        for (id, is_error, text) in std::mem::take(&mut self.orphans) {
            if let Some(text) = set_result(&mut entries, &id, is_error, text) {
                unplaced.push((id, is_error, text));
            }
        }
        orphans.extend(unplaced);
        self.orphans = orphans;
        if self.messages.is_empty() {
            // No call is left for them, as none was in the whole conversation.
            self.orphans.clear();
        }
        entries
    }

    /// Appends `message`'s entries to `entries`; its results whose call is
    /// not there go to `orphans`.
    fn make(&self, message: Message, entries: &mut Vec<Entry>, orphans: &mut Vec<Orphan>) {
        let mut content = message.content;
        match message.role {
            Role::User => {
                let text = take_text(&mut content, |t| !zot_core::prompt_files::is_attachment(t));
                if let Some(summary) = text.strip_prefix(&self.heading) {
                    entries.push(Entry::Compaction {
                        summary: summary.to_owned(),
                        automatic: false,
                        expanded: false,
                    });
                } else if !text.is_empty() {
                    entries.push(Entry::User(text));
                }
            }
            Role::Assistant => {
                let text = take_text(&mut content, |_| true);
                if !text.is_empty() {
                    entries.push(Entry::Assistant(text));
                }
                for block in content {
                    if let Block::ToolCall { id, name, args } = block {
                        let preview = zot_core::agent::preview(&args);
                        entries.push(Entry::tool(id, name, preview));
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
                        let text = result_text(content);
                        if let Some(text) = set_result(entries, &call_id, is_error, text) {
                            orphans.push((call_id, is_error, text));
                        }
                    }
                }
            }
        }
    }
}

/// Gives the last call `id` in `entries` its result; the text back when
/// there is no such call.
fn set_result(entries: &mut [Entry], id: &str, is_error: bool, text: String) -> Option<String> {
    let Some(Entry::Tool { result, .. }) = entries.iter_mut().rev().find(|e| e.is_tool_call(id))
    else {
        return Some(text);
    };
    *result = Some((is_error, text));
    None
}

/// A tool result's text blocks, images named, joined with "\n".
pub(crate) fn result_text(content: Vec<Block>) -> String {
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
    text
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

    fn message(role: Role, content: Vec<Block>) -> Message {
        Message {
            role,
            content,
            time: None,
        }
    }

    fn call(id: &str) -> Block {
        Block::ToolCall {
            id: id.into(),
            name: "read".into(),
            args: serde_json::json!({ "path": id }),
        }
    }

    fn result(id: &str) -> Message {
        message(
            Role::Tool,
            vec![Block::ToolResult {
                call_id: id.into(),
                is_error: false,
                content: vec![text(&format!("out {id}"))],
            }],
        )
    }

    /// Every slice of `history`, newest first, joined oldest first.
    fn all(mut history: History) -> (Vec<Entry>, usize) {
        let mut slices = Vec::new();
        while !history.is_empty() {
            slices.push(history.older(SLICE_MESSAGES, 0));
        }
        let count = slices.len();
        (slices.into_iter().rev().flatten().collect(), count)
    }

    fn tool(id: &str, result: Option<&str>) -> Entry {
        let mut entry = Entry::tool(id.into(), "read".into(), id.into());
        if let (Entry::Tool { result: slot, .. }, Some(text)) = (&mut entry, result) {
            *slot = Some((false, text.to_owned()));
        }
        entry
    }

    #[test]
    fn slices_make_what_the_whole_conversation_makes() {
        // Turns of three messages: a prompt, an answer with a call, its result.
        let mut messages = vec![message(
            Role::User,
            vec![text(&format!(
                "{}\n\nearlier work",
                zot_core::agent::SUMMARY_HEADING
            ))],
        )];
        let mut expected = vec![Entry::Compaction {
            summary: "earlier work".into(),
            automatic: false,
            expanded: false,
        }];
        for turn in 0..200 {
            let id = format!("c{turn}");
            messages.push(message(Role::User, vec![text(&format!("q{turn}"))]));
            messages.push(message(Role::Assistant, vec![text("a"), call(&id)]));
            messages.push(result(&id));
            expected.push(Entry::User(format!("q{turn}")));
            expected.push(Entry::Assistant("a".into()));
            expected.push(tool(&id, Some(&format!("out {id}"))));
        }
        // One more, so each slice's first message is a result.
        messages.push(message(Role::User, vec![text("last")]));
        expected.push(Entry::User("last".into()));
        assert_eq!(messages[messages.len() - SLICE_MESSAGES].role, Role::Tool);
        let (entries, slices) = all(History::new(messages));
        assert_eq!(entries, expected);
        assert!(slices > 602 / SLICE_MESSAGES, "{slices} slices");
    }

    #[test]
    fn a_result_far_from_its_call_finds_it_in_an_older_slice() {
        let mut messages = vec![message(Role::Assistant, vec![call("early")])];
        messages.extend(
            (0..3 * SLICE_MESSAGES).map(|i| message(Role::User, vec![text(&format!("q{i}"))])),
        );
        // The last result wins, as it did when results were set in order.
        messages.push(result("early"));
        messages.push(result("nowhere"));
        let mut last = result("early");
        if let Block::ToolResult { content, .. } = &mut last.content[0] {
            *content = vec![text("again")];
        }
        messages.push(last);
        let (entries, _) = all(History::new(messages));
        assert_eq!(entries[0], tool("early", Some("again")));
        assert_eq!(entries.len(), 1 + 3 * SLICE_MESSAGES);
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
