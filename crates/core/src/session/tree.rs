//! A session's entries as a tree: each entry (message, compaction, model
//! change, extension data) has an id and a parent; the conversation is the
//! path from the current leaf back to the root. Branching adds entries and
//! moves the leaf; it never changes an entry, so a branch sends the prefix it
//! shares with its parent byte for byte as before.

use std::collections::HashMap;

use zot_protocol::sessions::{TreeEntry, TreeEntryKind};

use super::compaction::{Compaction, compact};
use crate::message::{Block, Message, Role};

/// One entry of the tree.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) id: String,
    pub(super) parent: Option<usize>,
    pub(super) kind: EntryKind,
}

#[derive(Debug, Clone)]
pub(super) enum EntryKind {
    Message(Message),
    Compaction(Compaction),
    ModelChange { provider: String, model: String },
    Extension { extension: String },
}

/// The entries of one session, in file order, and where the conversation is.
#[derive(Debug, Default)]
pub(super) struct Tree {
    entries: Vec<Entry>,
    by_id: HashMap<String, usize>,
    leaf: Option<usize>,
}

impl Tree {
    /// Adds an entry under `parent`; it becomes the leaf.
    pub(super) fn push(&mut self, id: String, parent: Option<usize>, kind: EntryKind) -> usize {
        let index = self.entries.len();
        self.by_id.insert(id.clone(), index);
        self.entries.push(Entry { id, parent, kind });
        self.leaf = Some(index);
        index
    }

    /// How many entries the tree has.
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(super) fn find(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).copied()
    }

    pub(super) fn contains(&self, id: &str) -> bool {
        self.by_id.contains_key(id)
    }

    pub(super) fn leaf(&self) -> Option<usize> {
        self.leaf
    }

    pub(super) fn leaf_id(&self) -> Option<&str> {
        self.leaf.map(|i| self.entries[i].id.as_str())
    }

    pub(super) fn set_leaf(&mut self, leaf: Option<usize>) {
        self.leaf = leaf;
    }

    pub(super) fn entry(&self, index: usize) -> &Entry {
        &self.entries[index]
    }

    pub(super) fn has_messages(&self) -> bool {
        self.entries
            .iter()
            .any(|e| matches!(e.kind, EntryKind::Message(_)))
    }

    /// The entries from the root to the leaf.
    pub(super) fn path(&self) -> Vec<usize> {
        let mut path = Vec::new();
        let mut at = self.leaf;
        while let Some(index) = at {
            path.push(index);
            at = self.entries[index].parent;
        }
        path.reverse();
        path
    }

    /// Every message on the path, those a compaction summarised included.
    pub(super) fn history(&self) -> Vec<&Message> {
        self.path()
            .into_iter()
            .filter_map(|index| match &self.entries[index].kind {
                EntryKind::Message(message) => Some(message),
                _ => None,
            })
            .collect()
    }

    /// The conversation the model sees at the leaf: the path's messages
    /// with its compactions applied.
    pub(super) fn conversation(&self) -> Vec<Message> {
        let mut messages = Vec::new();
        for index in self.path() {
            match &self.entries[index].kind {
                EntryKind::Message(message) => messages.push(message.clone()),
                EntryKind::Compaction(compaction) => compact(&mut messages, compaction),
                EntryKind::ModelChange { .. } | EntryKind::Extension { .. } => {}
            }
        }
        messages
    }

    /// The model of the path's last model change.
    pub(super) fn model(&self) -> Option<(&str, &str)> {
        self.path()
            .into_iter()
            .rev()
            .find_map(|index| match &self.entries[index].kind {
                EntryKind::ModelChange { provider, model } => {
                    Some((provider.as_str(), model.as_str()))
                }
                _ => None,
            })
    }

    /// The text of the entry at `index` when it is a prompt the user typed.
    pub(super) fn prompt_text(&self, index: usize) -> Option<String> {
        match &self.entries[index].kind {
            EntryKind::Message(message) if is_prompt(message) => Some(message.text()),
            _ => None,
        }
    }

    /// The first prompt in file order (the title until the user names it).
    pub(super) fn first_prompt(&self) -> Option<String> {
        (0..self.entries.len()).find_map(|i| self.prompt_text(i))
    }

    /// The last entry of the turn a prompt at `index` began: down its
    /// newest children until the next prompt.
    pub(super) fn turn_end(&self, index: usize) -> usize {
        let mut at = index;
        loop {
            let next = (at + 1..self.entries.len())
                .rev()
                .find(|&i| self.entries[i].parent == Some(at));
            match next {
                Some(child) if self.prompt_text(child).is_none() => at = child,
                _ => return at,
            }
        }
    }

    /// Every entry for a front end, in file order.
    pub(super) fn describe(&self) -> Vec<TreeEntry> {
        self.entries
            .iter()
            .map(|entry| {
                let (kind, role, text) = match &entry.kind {
                    EntryKind::Message(message) => (
                        if is_prompt(message) {
                            TreeEntryKind::Prompt
                        } else {
                            TreeEntryKind::Message
                        },
                        Some(role_name(message.role).to_owned()),
                        preview(&message.text()),
                    ),
                    EntryKind::Compaction(c) => {
                        (TreeEntryKind::Compaction, None, preview(&c.summary))
                    }
                    EntryKind::ModelChange { provider, model } => (
                        TreeEntryKind::ModelChange,
                        None,
                        format!("{provider}/{model}"),
                    ),
                    EntryKind::Extension { extension } => {
                        (TreeEntryKind::Extension, None, extension.clone())
                    }
                };
                TreeEntry {
                    id: entry.id.clone(),
                    parent_id: entry.parent.map(|p| self.entries[p].id.clone()),
                    kind,
                    role,
                    text,
                }
            })
            .collect()
    }
}

/// A message the user wrote (not tool results, not a compaction summary).
pub fn is_prompt(message: &Message) -> bool {
    message.role == Role::User
        && message
            .content
            .iter()
            .any(|b| matches!(b, Block::Text { .. } | Block::Image { .. }))
        && !message
            .content
            .iter()
            .any(|b| matches!(b, Block::ToolResult { .. }))
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

/// How much of an entry's text a tree listing carries.
const PREVIEW_CHARS: usize = 200;

fn preview(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(PREVIEW_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// One line of a session's outline: a prompt, placed in its branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutlineRow {
    pub id: String,
    /// How many branch points lie above it.
    pub depth: usize,
    /// It starts a branch (its parent prompt has other continuations).
    pub branch: bool,
    /// It is on the current path.
    pub on_path: bool,
    pub text: String,
}

/// The prompts of a session as an outline (`/tree`, `zot sessions show`):
/// one row per prompt in depth-first order, a branch's prompts one level
/// deeper than the prompt they branch from.
pub fn outline(entries: &[TreeEntry], leaf_id: Option<&str>) -> Vec<OutlineRow> {
    let index: HashMap<&str, usize> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.id.as_str(), i))
        .collect();
    let parent_of = |i: usize| {
        entries[i]
            .parent_id
            .as_deref()
            .and_then(|p| index.get(p).copied())
    };
    let mut on_path = vec![false; entries.len()];
    let mut at = leaf_id.and_then(|id| index.get(id).copied());
    while let Some(i) = at {
        on_path[i] = true;
        at = parent_of(i);
    }
    // Each prompt under the nearest prompt above it.
    let mut children: HashMap<Option<usize>, Vec<usize>> = HashMap::new();
    for (i, entry) in entries.iter().enumerate() {
        if entry.kind != TreeEntryKind::Prompt {
            continue;
        }
        let mut up = parent_of(i);
        while let Some(p) = up {
            if entries[p].kind == TreeEntryKind::Prompt {
                break;
            }
            up = parent_of(p);
        }
        children.entry(up).or_default().push(i);
    }
    let mut rows = Vec::new();
    let mut stack: Vec<(usize, usize, bool)> = Vec::new();
    let push_children = |stack: &mut Vec<(usize, usize, bool)>, of: Option<usize>, depth: usize| {
        let kids = children.get(&of).map(Vec::as_slice).unwrap_or_default();
        let branching = kids.len() > 1;
        for &kid in kids.iter().rev() {
            stack.push((kid, depth + usize::from(branching), branching));
        }
    };
    push_children(&mut stack, None, 0);
    while let Some((i, depth, branch)) = stack.pop() {
        rows.push(OutlineRow {
            id: entries[i].id.clone(),
            depth,
            branch,
            on_path: on_path[i],
            text: entries[i].text.lines().next().unwrap_or("").to_owned(),
        });
        push_children(&mut stack, Some(i), depth);
    }
    rows
}
