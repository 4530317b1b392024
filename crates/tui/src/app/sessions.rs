//! The app's side of sessions: the resume picker (`zot -r`, `/sessions`),
//! `/tree`, `/fork`, `/jump` and `/name`. The worker owns the agent and its
//! session; these open the dialogs and send it the user's choices.

use zot_core::session::{SUMMARY_HEADING, index};
use zot_protocol::sessions::SessionSummary;

use super::{App, StatusKind};
use crate::modal::{Dialog, PromptAction, PromptPicker, SessionPicker};
use crate::transcript::Entry;
use crate::worker::Work;

impl App {
    /// The picker over this directory's sessions (every directory's with
    /// `all`), newest first.
    pub(super) fn open_sessions(&mut self, all: bool) {
        let Some(zot_home) = self.config.zot_home.clone() else {
            self.set_status("no $ZOT_HOME: no sessions", StatusKind::Error);
            return;
        };
        let cwd = std::path::PathBuf::from(&self.config.cwd);
        match index::list(&zot_home, (!all).then_some(cwd.as_path())) {
            Ok(items) => self
                .modal
                .open_dialog(Dialog::Sessions(SessionPicker::new(items, all))),
            Err(e) => self.set_status(format!("sessions: {e}"), StatusKind::Error),
        }
    }

    /// A confirmed delete from the picker.
    pub(super) fn delete_session(&mut self, summary: SessionSummary, all: bool) {
        let (Some(worker), Some(zot_home)) = (&self.worker, self.config.zot_home.clone()) else {
            return;
        };
        worker.send(Work::DeleteSession {
            summary: Box::new(summary),
            all,
            zot_home,
        });
    }

    /// `/tree`, `/fork`, `/jump`: asks the worker for the session's prompts.
    pub(super) fn ask_tree(&mut self, action: PromptAction) {
        match &self.worker {
            Some(worker) => worker.send(Work::Tree(action)),
            None => self.set_status("no session yet", StatusKind::Info),
        }
    }

    /// The session's prompts arrived: the picker for `action`.
    pub(super) fn open_prompts(
        &mut self,
        action: PromptAction,
        rows: Vec<zot_core::session::OutlineRow>,
    ) {
        let picker = PromptPicker::new(action, rows);
        if picker.is_empty() {
            self.set_status("no prompts in this session yet", StatusKind::Info);
        } else {
            self.modal.open_dialog(Dialog::Prompts(picker));
        }
    }

    /// A prompt picked: `back` is how many prompts of the current path
    /// follow it.
    pub(super) fn prompt_picked(&mut self, action: PromptAction, entry_id: String, back: usize) {
        match action {
            PromptAction::Jump => self.jump(back),
            PromptAction::Rewind => self.plan_rewind(Some(entry_id)),
            PromptAction::Tree | PromptAction::Fork => {
                if let Some(worker) = &self.worker {
                    worker.abort();
                    worker.send(Work::Branch(action, entry_id));
                    self.busy = true;
                }
            }
        }
    }

    /// Scrolls the transcript to the prompt `back` prompts before the last.
    fn jump(&mut self, back: usize) {
        // The prompt may be older than what the chat has made so far.
        self.transcript.load_all();
        let target = self
            .transcript
            .entries()
            .iter()
            .enumerate()
            .rev()
            .filter(|(_, e)| matches!(e, Entry::User(t) if !t.starts_with(SUMMARY_HEADING)))
            .nth(back)
            .map(|(i, _)| i);
        match target {
            Some(index) => self.transcript.jump_to(index),
            None => self.set_status(
                "that prompt was compacted away (/tree still reaches it)",
                StatusKind::Info,
            ),
        }
    }

    /// `/export [md]`: the session's current branch as a page (or
    /// Markdown) in the working directory.
    pub(super) fn export_session(&mut self, args: &str) {
        let format = match args.trim() {
            "" | "html" => zot_export::Format::Html,
            "md" | "markdown" => zot_export::Format::Markdown,
            other => {
                self.set_status(
                    format!("/export: unknown format {other:?} (html or md)"),
                    StatusKind::Error,
                );
                return;
            }
        };
        if let Some(worker) = &self.worker {
            worker.send(Work::Export(
                format,
                std::path::PathBuf::from(&self.config.cwd),
            ));
        }
    }

    /// `/name [title]`.
    pub(super) fn name_session(&mut self, title: &str) {
        if let Some(worker) = &self.worker {
            worker.send(Work::SetTitle(title.to_owned()));
        }
    }
}
