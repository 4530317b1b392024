//! The agent's messages as an append-only history with an identity:
//! pushing a message keeps the identity, any other change (a clear, a
//! compaction, a branch, a copy) gives a new one. A provider keeps what it
//! serialised of a history under its identity (`provider::body`) and reuses
//! it for as long as the identity holds, so a long session's turn writes
//! only its new messages.

use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::message::Message;

/// Identities are never reused, so a cache can never mistake a new history
/// for an old one that happened to have the same length.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn fresh_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// Messages that only grow at the end while their [`id`](Self::id) holds.
/// There is no mutable access to the messages themselves: every change
/// goes through a method that says what it does to the identity.
#[derive(Debug)]
pub struct Conversation {
    id: u64,
    messages: Vec<Message>,
}

impl Conversation {
    pub fn new() -> Self {
        Self::from(Vec::new())
    }

    /// The identity of this append-only history.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Appends a message: the history before it is unchanged.
    pub fn push(&mut self, message: Message) {
        self.messages.push(message);
    }

    /// Replaces the history (a compaction, a branch, a resumed session).
    pub fn replace(&mut self, messages: Vec<Message>) {
        *self = Self::from(messages);
    }

    pub fn clear(&mut self) {
        self.replace(Vec::new());
    }

    /// Keeps the first `len` messages: an earlier history, so a new identity.
    pub fn truncate(&mut self, len: usize) {
        if len < self.messages.len() {
            self.messages.truncate(len);
            self.id = fresh_id();
        }
    }

    /// Takes the messages out, leaving an empty history of a new identity.
    pub fn take(&mut self) -> Vec<Message> {
        let messages = std::mem::take(&mut self.messages);
        self.id = fresh_id();
        messages
    }
}

impl Default for Conversation {
    fn default() -> Self {
        Self::new()
    }
}

/// A copy may grow apart from the original (a side question appends to
/// one), so it is a history of its own.
impl Clone for Conversation {
    fn clone(&self) -> Self {
        Self::from(self.messages.clone())
    }
}

impl From<Vec<Message>> for Conversation {
    fn from(messages: Vec<Message>) -> Self {
        Self {
            id: fresh_id(),
            messages,
        }
    }
}

impl Deref for Conversation {
    type Target = [Message];

    fn deref(&self) -> &[Message] {
        &self.messages
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_appending_keeps_the_identity() {
        let mut history = Conversation::new();
        let first = history.id();
        history.push(Message::user("a"));
        history.push(Message::user("b"));
        assert_eq!(history.id(), first);
        assert_eq!(history.len(), 2);

        let copy = history.clone();
        assert_ne!(copy.id(), first);
        assert_eq!(&copy[..], &history[..]);

        history.truncate(5);
        assert_eq!(history.id(), first, "nothing was cut");
        history.truncate(1);
        let cut = history.id();
        assert_ne!(cut, first);

        let taken = history.take();
        assert_eq!(taken.len(), 1);
        assert!(history.is_empty());
        assert_ne!(history.id(), cut);

        let before = history.id();
        history.replace(taken);
        assert_ne!(history.id(), before);
        let before = history.id();
        history.clear();
        assert_ne!(history.id(), before);
    }
}
