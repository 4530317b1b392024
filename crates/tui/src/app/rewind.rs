//! The app's side of `/undo` and `/rewind`: the worker plans, the user
//! confirms in the rewind dialog (`crate::rewind`), the worker goes back.

use super::{App, StatusKind};
use crate::modal::Dialog;
use crate::rewind::RewindOffer;
use crate::transcript::Entry;
use crate::worker::Work;

impl App {
    /// `/undo` (no prompt: the last one) or a prompt picked in `/rewind`:
    /// asks the worker what going back would change.
    pub(super) fn plan_rewind(&mut self, entry_id: Option<String>) {
        match &self.worker {
            Some(worker) => worker.send(Work::PlanRewind(entry_id)),
            None => self.set_status("no session yet", StatusKind::Info),
        }
    }

    /// The plan arrived: the dialog that shows it.
    pub(super) fn offer_rewind(&mut self, offer: RewindOffer) {
        self.modal.open_dialog(Dialog::Rewind(offer));
    }

    /// The user confirmed: go back.
    pub(super) fn rewind(&mut self, entry_id: String, code: bool, conversation: bool) {
        if let Some(worker) = &self.worker {
            worker.abort();
            worker.send(Work::Rewind {
                entry_id,
                code,
                conversation,
            });
            self.busy = true;
        }
    }

    /// A prompt's checkpoint was recorded: what it leaves out goes to the
    /// transcript, the count to the status line.
    pub(super) fn on_checkpoint(&mut self, files: usize, notes: Vec<String>) {
        for note in notes {
            self.transcript.push(Entry::Info(note));
        }
        let text = match files {
            1 => "checkpoint: 1 file changed (/undo takes it back)".to_owned(),
            n => format!("checkpoint: {n} files changed (/undo takes them back)"),
        };
        self.set_status(text, StatusKind::Info);
    }
}
