//! Going on elsewhere mid-session: what a switch of provider drops (the
//! old provider's thinking, which only its server can read), and taking
//! back a prompt whose turn failed, to run it again on another model.

use super::Agent;
use crate::message::{Block, Role};
use crate::provider::Provider;
use crate::session::outline;

impl Agent {
    /// Before a switch to `next`: another provider's thinking is not sent
    /// to it (each server signs or encrypts its own).
    pub(super) fn forget_thinking_unless(&mut self, next: &Provider) {
        if next.name() != self.provider.name() {
            self.stale_thinking_before = self.messages.len();
        }
    }

    /// Takes back the last prompt and everything after it (a turn that
    /// failed), so that sending it again does not add it twice: with a
    /// session, a new branch before it (the failed turn stays in the file);
    /// without one, the conversation cut before it. False when there is no
    /// prompt to take back.
    pub fn take_back_prompt(&mut self) -> bool {
        if let Some(session) = &self.session {
            let rows = outline(&session.entries(), session.leaf_id());
            let Some(last) = rows.iter().rev().find(|row| row.on_path) else {
                return false;
            };
            let id = last.id.clone();
            return self.fork_before(&id).is_ok();
        }
        let prompt = self.messages.iter().rposition(|m| {
            m.role == Role::User
                && !m
                    .content
                    .iter()
                    .any(|b| matches!(b, Block::ToolResult { .. }))
        });
        match prompt {
            Some(index) => {
                self.messages.truncate(index);
                self.stale_thinking_before = self.stale_thinking_before.min(index);
                true
            }
            None => false,
        }
    }
}
