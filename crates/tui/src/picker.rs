//! The session dialogs: the resume picker (`zot -r`, `/sessions`: a fuzzy
//! filter over titles, directories and models, delete with a confirmation,
//! widen to every directory) and the prompt list behind `/tree`, `/fork`
//! and `/jump`.

use std::path::PathBuf;
use std::time::SystemTime;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use zot_core::session::OutlineRow;
use zot_core::session::index::ago;
use zot_protocol::sessions::SessionSummary;

use crate::step::{PromptAction, Step};
use crate::theme::Theme;

/// Sessions the picker shows at once (two or three rows each).
const PICKER_ROWS: usize = 7;
/// Prompts the prompt list shows at once.
const PROMPT_ROWS: usize = 14;

pub struct SessionPicker {
    /// Newest first.
    items: Vec<SessionSummary>,
    /// Indices into `items` that pass the filter, best match first.
    shown: Vec<usize>,
    filter: String,
    selected: usize,
    /// Every directory's sessions, not only this one's.
    pub(crate) all: bool,
    /// Delete asked for the selected session: waiting for `y`.
    confirm: bool,
    now: SystemTime,
}

impl SessionPicker {
    pub(crate) fn new(items: Vec<SessionSummary>, all: bool) -> Self {
        let mut picker = Self {
            shown: (0..items.len()).collect(),
            items,
            filter: String::new(),
            selected: 0,
            all,
            confirm: false,
            now: SystemTime::now(),
        };
        picker.refilter();
        picker
    }

    /// The sessions shown, in order.
    pub fn shown(&self) -> impl Iterator<Item = &SessionSummary> {
        self.shown.iter().map(|&i| &self.items[i])
    }

    pub fn filter(&self) -> &str {
        &self.filter
    }

    fn current(&self) -> Option<&SessionSummary> {
        self.shown.get(self.selected).map(|&i| &self.items[i])
    }

    /// Ranks the sessions by the filter (nucleo's fuzzy score over title,
    /// directory, model and id); the newest first among equal scores.
    fn refilter(&mut self) {
        self.selected = 0;
        let haystacks = self
            .items
            .iter()
            .map(|s| format!("{} {} {} {}", s.title, s.cwd, s.model, s.id));
        self.shown = rank(&self.filter, haystacks);
    }

    pub(crate) fn key(&mut self, key: KeyEvent) -> Step {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if self.confirm {
            self.confirm = false;
            return match (key.code, self.current()) {
                (KeyCode::Char('y' | 'Y'), Some(s)) => Step::DeleteSession(s.clone(), self.all),
                _ => Step::Stay,
            };
        }
        match key.code {
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => {
                self.selected = (self.selected + 1).min(self.shown.len().saturating_sub(1));
            }
            KeyCode::Enter => {
                return self
                    .current()
                    .map_or(Step::Close, |s| Step::Resume(PathBuf::from(&s.path)));
            }
            KeyCode::Esc => return Step::Close,
            KeyCode::Char('c') if ctrl => return Step::Close,
            KeyCode::Char('d') if ctrl => self.confirm = self.current().is_some(),
            KeyCode::Tab => return Step::WidenSessions(!self.all),
            _ if edit_filter(&mut self.filter, key) => self.refilter(),
            _ => {}
        }
        Step::Stay
    }

    pub(crate) fn title(&self) -> String {
        let scope = if self.all {
            "every directory"
        } else {
            "this directory"
        };
        format!(" Resume a session ({scope}) ")
    }

    pub(crate) fn body(&self, theme: &Theme) -> Vec<Line<'static>> {
        let muted = Style::default().fg(theme.muted);
        let mut body = vec![filter_line(&self.filter, theme)];
        if self.shown.is_empty() {
            let none = if self.items.is_empty() {
                "no sessions yet"
            } else {
                "no session matches"
            };
            body.push(Line::styled(none, muted));
        }
        let start = self.selected.saturating_sub(PICKER_ROWS - 1);
        for (row, s) in self.shown().enumerate().skip(start).take(PICKER_ROWS) {
            let style = if row == self.selected {
                Style::default().add_modifier(Modifier::REVERSED)
            } else {
                Style::default().add_modifier(Modifier::BOLD)
            };
            let title = if s.title.is_empty() {
                "(no prompt yet)"
            } else {
                &s.title
            };
            body.push(Line::styled(title.to_owned(), style));
            body.push(Line::styled(
                format!(
                    "  {} · {} messages · ${:.2} · {}",
                    ago(&s.updated, self.now),
                    s.message_count,
                    s.cost_usd,
                    s.model,
                ),
                muted,
            ));
            if self.all {
                body.push(Line::styled(format!("  {}", s.cwd), muted));
            }
        }
        body.push(Line::default());
        let help = match self.current() {
            Some(s) if self.confirm => format!("delete \"{}\"? y yes · any other key no", s.title),
            _ => format!(
                "type to filter · Enter resume · Ctrl+D delete · Tab {} · Esc close",
                if self.all {
                    "this directory only"
                } else {
                    "every directory"
                }
            ),
        };
        body.push(Line::styled(help, muted));
        body
    }
}

pub struct PromptPicker {
    pub(crate) action: PromptAction,
    rows: Vec<OutlineRow>,
    selected: usize,
}

impl PromptPicker {
    /// `/tree` lists every prompt of the session; `/fork` and `/jump` the
    /// current path's. The newest prompt on the path starts selected.
    pub(crate) fn new(action: PromptAction, rows: Vec<OutlineRow>) -> Self {
        let rows: Vec<OutlineRow> = match action {
            PromptAction::Tree => rows,
            PromptAction::Fork | PromptAction::Jump | PromptAction::Rewind => {
                rows.into_iter().filter(|r| r.on_path).collect()
            }
        };
        let selected = rows.iter().rposition(|r| r.on_path).unwrap_or(0);
        Self {
            action,
            rows,
            selected,
        }
    }

    pub fn rows(&self) -> &[OutlineRow] {
        &self.rows
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub(crate) fn key(&mut self, key: KeyEvent) -> Step {
        match key.code {
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => {
                self.selected = (self.selected + 1).min(self.rows.len().saturating_sub(1));
            }
            KeyCode::Enter => {
                return match self.rows.get(self.selected) {
                    Some(row) => Step::Prompt(self.action, row.id.clone(), self.path_index()),
                    None => Step::Close,
                };
            }
            KeyCode::Esc => return Step::Close,
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                return Step::Close;
            }
            _ => {}
        }
        Step::Stay
    }

    /// How many prompts of the current path follow the selected one.
    fn path_index(&self) -> usize {
        self.rows
            .get(self.selected + 1..)
            .unwrap_or_default()
            .iter()
            .filter(|r| r.on_path)
            .count()
    }

    pub(crate) fn title(&self) -> String {
        match self.action {
            PromptAction::Tree => " Session tree: go to a prompt's answer ".to_owned(),
            PromptAction::Fork => " Fork: a new branch before a prompt ".to_owned(),
            PromptAction::Jump => " Jump to a prompt ".to_owned(),
            PromptAction::Rewind => " Rewind: back to before a prompt ".to_owned(),
        }
    }

    pub(crate) fn body(&self, theme: &Theme) -> Vec<Line<'static>> {
        let muted = Style::default().fg(theme.muted);
        let start = self.selected.saturating_sub(PROMPT_ROWS - 1);
        let mut body: Vec<Line<'static>> = self
            .rows
            .iter()
            .enumerate()
            .skip(start)
            .take(PROMPT_ROWS)
            .map(|(i, row)| {
                let style = if i == self.selected {
                    Style::default().add_modifier(Modifier::REVERSED)
                } else if row.on_path {
                    Style::default().fg(theme.accent)
                } else {
                    Style::default()
                };
                let text = format!(
                    "{}{}{}{}",
                    if row.on_path { "● " } else { "  " },
                    "  ".repeat(row.depth.saturating_sub(1)),
                    if row.branch { "└ " } else { "" },
                    row.text
                );
                Line::styled(text, style)
            })
            .collect();
        body.push(Line::default());
        body.push(Line::styled(
            "● current path · Enter pick · Esc close",
            muted,
        ));
        body
    }
}

/// The indices of `haystacks` that match `filter` (nucleo's fuzzy score),
/// best first, in their own order among equal scores; all of them for an
/// empty filter.
pub(crate) fn rank(filter: &str, haystacks: impl Iterator<Item = String>) -> Vec<usize> {
    if filter.trim().is_empty() {
        return (0..haystacks.count()).collect();
    }
    let pattern = Pattern::parse(filter, CaseMatching::Ignore, Normalization::Smart);
    let mut matcher = Matcher::new(Config::DEFAULT);
    let mut buf = Vec::new();
    let mut scored: Vec<(u32, usize)> = haystacks
        .enumerate()
        .filter_map(|(i, haystack)| {
            let score = pattern.score(Utf32Str::new(&haystack, &mut buf), &mut matcher)?;
            Some((score, i))
        })
        .collect();
    scored.sort_by_key(|&(score, i)| (std::cmp::Reverse(score), i));
    scored.into_iter().map(|(_, i)| i).collect()
}

/// The filter as a picker shows it, with a cursor after it.
pub(crate) fn filter_line(filter: &str, theme: &Theme) -> Line<'static> {
    Line::from(vec![
        Span::styled("filter: ", Style::default().fg(theme.muted)),
        Span::raw(filter.to_owned()),
        Span::styled("▏", Style::default().fg(theme.accent)),
    ])
}

/// Typing and Backspace edit a picker's filter: whether `key` was one of them.
pub(crate) fn edit_filter(filter: &mut String, key: KeyEvent) -> bool {
    match key.code {
        KeyCode::Backspace => {
            filter.pop();
            true
        }
        KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
            filter.push(c);
            true
        }
        _ => false,
    }
}
