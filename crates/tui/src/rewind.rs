//! The dialog before `/undo` and `/rewind` put files back: what will be
//! written, created and deleted, the files the user changed since zot's
//! last checkpoint (overwritten only by going on), and whether to take
//! back the code, the conversation, or both.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use zot_protocol::checkpoints::{Change, FileChange};

use crate::step::Step;
use crate::theme::Theme;

/// Files the dialog lists at most (the rest are counted).
const LISTED_FILES: usize = 12;

/// A rewind the worker planned, waiting for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewindOffer {
    pub entry_id: String,
    pub text: String,
    pub changes: Vec<FileChange>,
    pub edited: Vec<String>,
    pub unrestorable: Vec<String>,
    /// `/undo` (the last prompt) rather than `/rewind`.
    pub undo: bool,
}

impl RewindOffer {
    pub(crate) fn key(&self, key: KeyEvent) -> Step {
        let step = |code, conversation| Step::Rewind {
            entry_id: self.entry_id.clone(),
            code,
            conversation,
        };
        match key.code {
            KeyCode::Enter => step(true, true),
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => Step::Close,
            KeyCode::Char('c') => step(true, false),
            KeyCode::Char('v') => step(false, true),
            KeyCode::Esc => Step::Close,
            _ => Step::Stay,
        }
    }

    pub(crate) fn title(&self) -> String {
        match self.undo {
            true => " Undo the last prompt ".to_owned(),
            false => " Rewind to before a prompt ".to_owned(),
        }
    }

    pub(crate) fn body(&self, theme: &Theme) -> Vec<Line<'static>> {
        let muted = Style::default().fg(theme.muted);
        let warn = Style::default()
            .fg(theme.error)
            .add_modifier(Modifier::BOLD);
        let first = self.text.lines().next().unwrap_or_default();
        let mut body = vec![Line::raw(format!("before: {first}"))];
        if self.changes.is_empty() {
            body.push(Line::styled("no files to put back", muted));
        }
        for file in self.changes.iter().take(LISTED_FILES) {
            // Said as what the rewind does to the file now.
            let what = match file.change {
                Change::Created => "recreate",
                Change::Modified => "restore ",
                Change::Deleted => "delete  ",
            };
            let mut line = format!("  {what} {}", file.path);
            let edited = self.edited.contains(&file.path);
            if edited {
                line.push_str("  (changed since: your edit is overwritten)");
            }
            body.push(match edited {
                true => Line::styled(line, warn),
                false => Line::raw(line),
            });
        }
        if self.changes.len() > LISTED_FILES {
            let more = self.changes.len() - LISTED_FILES;
            body.push(Line::styled(format!("  … and {more} more"), muted));
        }
        for path in &self.unrestorable {
            body.push(Line::styled(
                format!("  not restorable (too large to keep): {path}"),
                muted,
            ));
        }
        body.push(Line::default());
        body.push(Line::styled(
            "Enter code and conversation · c code only · v conversation only · Esc cancel",
            muted,
        ));
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keys_choose_what_goes_back() {
        let offer = RewindOffer {
            entry_id: "e1".into(),
            text: "fix it".into(),
            changes: vec![FileChange {
                path: "a.txt".into(),
                change: Change::Modified,
            }],
            edited: vec!["a.txt".into()],
            unrestorable: Vec::new(),
            undo: true,
        };
        let key = |code| offer.key(KeyEvent::from(code));
        let is = |step: Step, c: bool, v: bool| matches!(step, Step::Rewind { code, conversation, .. } if code == c && conversation == v);
        assert!(is(key(KeyCode::Enter), true, true));
        assert!(is(key(KeyCode::Char('c')), true, false));
        assert!(is(key(KeyCode::Char('v')), false, true));
        assert!(matches!(key(KeyCode::Esc), Step::Close));
        let body: Vec<String> = offer
            .body(&Theme::default())
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(
            body[1].contains("restore  a.txt  (changed since"),
            "{body:?}"
        );
    }
}
