//! The agent's side of checkpoints ([`crate::checkpoint`]): a prompt that
//! may write gets a snapshot before its first such tool call and, when it
//! changed files, a record at its end, written to the session and told to
//! the front ends as a `checkpoint` event.

use serde_json::Value;
use tokio::sync::mpsc;

use super::Agent;
use crate::checkpoint::{Checkpoints, Record};
use crate::event::AgentEvent;

impl Agent {
    /// This run's checkpoints (none without a session file or with
    /// checkpoints off).
    pub fn checkpoints(&self) -> Option<Checkpoints> {
        self.session.as_ref()?;
        self.checkpoints.clone()
    }

    /// Writes a checkpoint record to the session (a rewind's).
    pub fn record_checkpoint(&mut self, record: Record) {
        if let Some(session) = &mut self.session {
            session.append_checkpoint(record);
        }
    }

    /// A prompt joined the conversation: returns its entry id when its
    /// changes are to be recorded.
    pub(super) fn start_checkpoint(&self) -> Option<String> {
        let checkpoints = self.checkpoints()?;
        let session = self.session.as_ref()?;
        let entry = session.leaf_id()?.to_owned();
        checkpoints.start_prompt(session.path());
        Some(entry)
    }

    /// Before a tool call that may write.
    pub(super) async fn checkpoint_before(
        &self,
        name: &str,
        args: &Value,
        events: &mpsc::UnboundedSender<AgentEvent>,
    ) {
        let Some(checkpoints) = self.checkpoints() else {
            return;
        };
        for message in checkpoints.before_tool(&self.session_id, name, args).await {
            let _ = events.send(AgentEvent::Error { message });
        }
    }

    /// The prompt `entry` ended: records what it changed.
    pub(super) async fn end_checkpoint(
        &mut self,
        entry: Option<String>,
        events: &mpsc::UnboundedSender<AgentEvent>,
    ) {
        let (Some(entry), Some(checkpoints)) = (entry, self.checkpoints()) else {
            return;
        };
        let (record, notes) = checkpoints.end_prompt(&self.session_id, &entry).await;
        let Some(record) = record else {
            for message in notes {
                let _ = events.send(AgentEvent::Error { message });
            }
            return;
        };
        let _ = events.send(AgentEvent::Checkpoint {
            entry_id: entry,
            files: record.files.clone(),
            notes,
        });
        self.record_checkpoint(record);
    }
}
