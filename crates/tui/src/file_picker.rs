//! The `@` file picker: an `@` starting a word in the editor lists the
//! project's files and directories (ripgrep's ignore rules: `.gitignore`,
//! `.ignore`, hidden files), filtered fuzzily by what follows the `@`; Enter
//! or Tab puts `@path` in its place. The list is walked on a thread of its
//! own, so typing never waits for a big tree.

use std::path::{Path, PathBuf};
use std::sync::mpsc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;

use crate::editor::Editor;
use crate::theme::Theme;

/// Most paths the walk collects: a large monorepo's worth. Past it the walk
/// stops (and the picker says so) rather than hold memory and a thread for
/// a home directory or a whole disk.
pub const MAX_PICKER_PATHS: usize = 50_000;

/// Rows of paths the picker shows at once.
pub const FILE_ROWS: usize = 10;

/// The best matches kept in order for the rows: only a few are ever
/// looked at, and ranking every match of a one-letter query over a big
/// tree would cost each keystroke a full sort.
pub const MAX_RANKED: usize = 500;

/// What a key did to the picker.
#[derive(Debug, PartialEq, Eq)]
pub enum FileStep {
    /// Not the picker's key: the editor takes it.
    NotMine,
    /// The picker used it (moved, closed).
    Used,
    /// Replace the `@word` starting at this column of the cursor's line
    /// with `text`.
    Insert { at: usize, text: String },
}

pub struct FilePicker {
    root: PathBuf,
    /// The project's paths, relative with `/`, directories ending in `/`:
    /// shallow ones first, each level sorted.
    paths: Vec<String>,
    /// The walk stopped at [`MAX_PICKER_PATHS`].
    capped: bool,
    /// A walk under way: its list arrives here.
    walk: Option<mpsc::Receiver<(Vec<String>, bool)>>,
    /// The `@word` it is open on: the row and char column of its `@`.
    at: Option<(usize, usize)>,
    /// An `@word` the user closed with Esc: it stays closed while the
    /// cursor is in it.
    dismissed: Option<(usize, usize)>,
    query: String,
    /// Every index into `paths` that matches `matched_for`, in no order: a
    /// longer query is matched against these alone.
    matched: Vec<usize>,
    matched_for: String,
    /// The best of `matched` (at most [`MAX_RANKED`]), best first.
    shown: Vec<usize>,
    selected: usize,
}

impl FilePicker {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            paths: Vec::new(),
            capped: false,
            walk: None,
            at: None,
            dismissed: None,
            query: String::new(),
            matched: Vec::new(),
            matched_for: String::new(),
            shown: Vec::new(),
            selected: 0,
        }
    }

    pub fn is_open(&self) -> bool {
        self.at.is_some()
    }

    /// The paths shown, best match first.
    pub fn shown(&self) -> impl Iterator<Item = &str> {
        self.shown.iter().map(|&i| self.paths[i].as_str())
    }

    /// Follows the editor: open while the cursor ends an `@word` (walking
    /// the project again each time it opens, so new files show), closed
    /// otherwise.
    pub fn sync(&mut self, editor: &Editor) {
        self.poll();
        let Some((row, col, query)) = editor.at_word() else {
            self.at = None;
            self.dismissed = None;
            return;
        };
        if self.dismissed == Some((row, col)) {
            self.at = None;
            return;
        }
        if self.at != Some((row, col)) {
            self.at = Some((row, col));
            self.start_walk();
            self.query = query;
            return self.refilter();
        }
        if self.query != query {
            self.query = query;
            self.refilter();
        }
    }

    /// Takes the walk's list if it has arrived.
    pub fn poll(&mut self) {
        let Some(walk) = &self.walk else { return };
        match walk.try_recv() {
            Ok((paths, capped)) => {
                self.paths = paths;
                self.capped = capped;
                self.walk = None;
                self.matched_for.clear();
                self.refilter();
            }
            Err(mpsc::TryRecvError::Empty) => {}
            Err(mpsc::TryRecvError::Disconnected) => self.walk = None,
        }
    }

    fn start_walk(&mut self) {
        if self.walk.is_some() {
            return;
        }
        let (tx, rx) = mpsc::channel();
        let root = self.root.clone();
        let spawned = std::thread::Builder::new()
            .name("zot-file-picker".into())
            .spawn(move || {
                let _ = tx.send(walk(&root, MAX_PICKER_PATHS));
            });
        if spawned.is_ok() {
            self.walk = Some(rx);
        }
    }

    /// Ranks the paths by the query (nucleo's path matching: a match in
    /// the file name counts most); shorter paths first among equal scores.
    fn refilter(&mut self) {
        self.selected = 0;
        let query = self.query.trim_start_matches('"').to_owned();
        if query.is_empty() {
            self.matched_for.clear();
            self.shown = (0..self.paths.len()).take(MAX_RANKED).collect();
            return;
        }
        let pattern = Pattern::parse(&query, CaseMatching::Smart, Normalization::Smart);
        let mut matcher = Matcher::new(Config::DEFAULT.match_paths());
        let mut buf = Vec::new();
        let paths = &self.paths;
        let mut score = |i: usize| {
            let score = pattern.score(Utf32Str::new(&paths[i], &mut buf), &mut matcher)?;
            Some((score, i))
        };
        let mut scored: Vec<(u32, usize)> = if narrows(&self.matched_for, &query) {
            self.matched.iter().filter_map(|&i| score(i)).collect()
        } else {
            (0..paths.len()).filter_map(score).collect()
        };
        self.matched = scored.iter().map(|&(_, i)| i).collect();
        self.matched_for = query;
        let rank = |&(score, i): &(u32, usize)| (std::cmp::Reverse(score), paths[i].len(), i);
        if scored.len() > MAX_RANKED {
            scored.select_nth_unstable_by_key(MAX_RANKED, rank);
            scored.truncate(MAX_RANKED);
        }
        scored.sort_unstable_by_key(rank);
        self.shown = scored.into_iter().map(|(_, i)| i).collect();
    }

    pub fn key(&mut self, key: KeyEvent) -> FileStep {
        let Some((row, at)) = self.at else {
            return FileStep::NotMine;
        };
        let last = self.shown.len().saturating_sub(1);
        match key.code {
            KeyCode::Esc => {
                self.dismissed = Some((row, at));
                self.at = None;
            }
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                return FileStep::NotMine;
            }
            // With nothing to pick, Enter still sends the prompt.
            _ if self.shown.is_empty() => return FileStep::NotMine,
            KeyCode::Up => self.selected = self.selected.checked_sub(1).unwrap_or(last),
            KeyCode::Down => {
                self.selected = if self.selected >= last {
                    0
                } else {
                    self.selected + 1
                }
            }
            KeyCode::Enter | KeyCode::Tab => {
                let path = &self.paths[self.shown[self.selected.min(last)]];
                return FileStep::Insert {
                    at,
                    text: reference(path),
                };
            }
            _ => return FileStep::NotMine,
        }
        FileStep::Used
    }

    /// The picker's rows for the view: the paths around the selection,
    /// then what the keys do.
    pub(crate) fn lines(&self, theme: &Theme) -> Vec<Line<'static>> {
        let muted = Style::default().fg(theme.muted);
        let mut lines = Vec::new();
        if self.shown.is_empty() {
            let why = if self.walk.is_some() {
                "listing the project's files…"
            } else {
                "no file matches"
            };
            lines.push(Line::styled(why, muted));
        }
        let first = self.selected.saturating_sub(FILE_ROWS - 1);
        for (i, path) in self.shown().enumerate().skip(first).take(FILE_ROWS) {
            let style = if i == self.selected {
                Style::default().add_modifier(Modifier::REVERSED)
            } else if path.ends_with('/') {
                Style::default().fg(theme.accent)
            } else {
                Style::default()
            };
            lines.push(Line::styled(format!("@{path}"), style));
        }
        let mut help = "↑↓ move · Enter/Tab insert · Esc close".to_owned();
        if self.capped {
            help.push_str(&format!(" · the first {MAX_PICKER_PATHS} paths"));
        }
        lines.push(Line::styled(help, muted));
        lines
    }
}

/// Whether every path matching `query` also matches `before`, so only
/// `before`'s matches need scoring: `query` is `before` with plain path
/// characters added (nucleo's `!`, `^`, `$`, `'` and spaces change what
/// matches in other ways).
fn narrows(before: &str, query: &str) -> bool {
    !before.is_empty()
        && query.strip_prefix(before).is_some_and(|added| {
            added
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '/' | '.' | '_' | '-'))
        })
        && !before.contains(['!', '^', '$', '\'', ' ', '\\'])
}

/// How a picked path goes into the prompt, as `file_refs` reads it back:
/// quoted when it has a space. A file is followed by a space (the picker
/// closes); a directory is not, so typing on filters inside it.
fn reference(path: &str) -> String {
    let quoted = if path.contains(char::is_whitespace) {
        format!("@\"{path}\"")
    } else {
        format!("@{path}")
    };
    if path.ends_with('/') {
        quoted
    } else {
        quoted + " "
    }
}

/// The paths under `root` by ripgrep's rules, at most `max`, shallow ones
/// first; and whether the walk stopped at `max`.
fn walk(root: &Path, max: usize) -> (Vec<String>, bool) {
    let mut paths = Vec::new();
    let mut capped = false;
    for entry in ignore::WalkBuilder::new(root).build().flatten() {
        if entry.depth() == 0 {
            continue;
        }
        if paths.len() >= max {
            capped = true;
            break;
        }
        let Ok(relative) = entry.path().strip_prefix(root) else {
            continue;
        };
        let mut path = relative.to_string_lossy().into_owned();
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            path.push('/');
        }
        paths.push(path);
    }
    paths.sort_by(|a, b| {
        let depth = |p: &str| p.trim_end_matches('/').matches('/').count();
        depth(a).cmp(&depth(b)).then_with(|| a.cmp(b))
    });
    (paths, capped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn picker_over(root: &Path) -> FilePicker {
        let mut picker = FilePicker::new(root);
        let (paths, capped) = walk(root, MAX_PICKER_PATHS);
        picker.paths = paths;
        picker.capped = capped;
        picker
    }

    #[test]
    fn the_walk_lists_shallow_paths_first_and_stops_at_its_cap() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        std::fs::write(root.join("src/deep/x.rs"), "").unwrap();
        std::fs::write(root.join("src/lib.rs"), "").unwrap();
        std::fs::write(root.join("b.md"), "").unwrap();
        std::fs::write(root.join(".hidden"), "").unwrap();
        let (paths, capped) = walk(root, 100);
        assert_eq!(
            paths,
            ["b.md", "src/", "src/deep/", "src/lib.rs", "src/deep/x.rs"]
        );
        assert!(!capped);
        let (paths, capped) = walk(root, 2);
        assert_eq!(paths.len(), 2);
        assert!(capped);
    }

    #[test]
    fn a_longer_query_rescores_only_the_earlier_matches_and_ranks_alike() {
        assert!(narrows("ma", "main.r"));
        assert!(!narrows("", "a"));
        assert!(!narrows("ma", "ma !x"));
        assert!(!narrows("ma$", "ma$x"));
        assert!(!narrows("ma", "m"));

        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in 0..30 {
            std::fs::create_dir(root.join(format!("mod{d}"))).unwrap();
            for f in 0..30 {
                std::fs::write(root.join(format!("mod{d}/file_{f}.rs")), "").unwrap();
            }
        }
        let mut typed = picker_over(root);
        let mut editor = Editor::new();
        editor.insert_char('@');
        for c in "mod1/file_2".chars() {
            editor.insert_char(c);
            typed.sync(&editor);
            let mut fresh = picker_over(root);
            fresh.query = typed.query.clone();
            fresh.refilter();
            assert!(typed.shown().eq(fresh.shown()), "after {c:?}");
            assert!(typed.shown.len() <= MAX_RANKED);
        }
        assert_eq!(typed.shown().next(), Some("mod1/file_2.rs"));
    }

    #[test]
    fn an_at_word_opens_filters_inserts_and_esc_keeps_it_closed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::fs::write(root.join("docs/guide.md"), "").unwrap();
        std::fs::write(root.join("my notes.txt"), "").unwrap();
        std::fs::write(root.join("main.rs"), "").unwrap();
        let mut picker = picker_over(root);
        let mut editor = Editor::new();

        editor.insert_str("mail me@x");
        picker.sync(&editor);
        assert!(!picker.is_open(), "an @ inside a word is an address");

        editor.clear();
        editor.insert_str("see (@gui");
        picker.sync(&editor);
        assert!(picker.is_open());
        assert_eq!(picker.shown().next(), Some("docs/guide.md"));
        let step = picker.key(key(KeyCode::Enter));
        assert_eq!(
            step,
            FileStep::Insert {
                at: 5,
                text: "@docs/guide.md ".into()
            }
        );

        editor.clear();
        editor.insert_str("@notes");
        picker.sync(&editor);
        assert_eq!(
            picker.key(key(KeyCode::Tab)),
            FileStep::Insert {
                at: 0,
                text: "@\"my notes.txt\" ".into()
            }
        );

        editor.clear();
        editor.insert_str("@do");
        picker.sync(&editor);
        assert_eq!(picker.shown().next(), Some("docs/"));
        assert_eq!(picker.key(key(KeyCode::Esc)), FileStep::Used);
        assert!(!picker.is_open());
        editor.insert_char('c');
        picker.sync(&editor);
        assert!(
            !picker.is_open(),
            "closed while the cursor stays in that word"
        );
        editor.insert_str(" @");
        picker.sync(&editor);
        assert!(picker.is_open(), "a new @ opens it again");

        editor.insert_str("zzzz");
        picker.sync(&editor);
        assert_eq!(picker.shown().count(), 0);
        assert_eq!(picker.key(key(KeyCode::Enter)), FileStep::NotMine);
    }
}
