//! The prompt editor: multi-line text with a cursor, word movement,
//! history, and pastes (a long one shown folded). Pure state; the view draws
//! it (wrapped, see [`Editor::layout`]) and the app feeds it keys.

use unicode_width::UnicodeWidthChar;

/// A paste of more lines than this shows as `[pasted N lines]` until
/// expanded (the issue: "a paste over 10 lines"); the whole text is sent.
pub const PASTE_FOLD_LINES: usize = 10;

/// A multi-line text buffer with a cursor (line, char column).
#[derive(Debug, Clone, Default)]
pub struct Editor {
    lines: Vec<String>,
    row: usize,
    col: usize,
    history: Vec<String>,
    /// Position while browsing history; `None` when editing a fresh entry.
    browsing: Option<usize>,
    /// What was being typed before browsing started.
    draft: String,
    /// Folded pastes: the marker standing in the text, and what it stands for.
    pastes: Vec<(String, String)>,
    /// The text's first character came from a paste (a pasted `!…` is
    /// text, never a shell command).
    lead_pasted: bool,
}

impl Editor {
    pub fn new() -> Self {
        Self {
            lines: vec![String::new()],
            ..Self::default()
        }
    }

    /// The text as shown: folded pastes as their markers.
    pub fn text(&self) -> String {
        self.lines.join("\n")
    }

    /// The text to send: each folded paste's marker replaced by the paste.
    pub fn full_text(&self) -> String {
        let mut text = self.text();
        for (marker, paste) in &self.pastes {
            if let Some(at) = text.find(marker.as_str()) {
                text.replace_range(at..at + marker.len(), paste);
            }
        }
        text
    }

    /// Whether a paste is shown folded.
    pub fn has_folded_paste(&self) -> bool {
        let text = self.text();
        self.pastes
            .iter()
            .any(|(marker, _)| text.contains(marker.as_str()))
    }

    /// Inserts a paste: a long one as a `[pasted N lines]` marker.
    pub fn paste(&mut self, text: &str) {
        let at_start = (self.row, self.col) == (0, 0);
        self.paste_at_cursor(text);
        self.lead_pasted |= at_start && !text.is_empty();
    }

    /// Whether the text's first character was pasted rather than typed.
    pub fn lead_pasted(&self) -> bool {
        self.lead_pasted
    }

    fn paste_at_cursor(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let lines = text.lines().count();
        if lines <= PASTE_FOLD_LINES {
            return self.insert_str(&text);
        }
        let mut marker = format!("[pasted {lines} lines]");
        let mut n = 1;
        while self.pastes.iter().any(|(m, _)| *m == marker) {
            n += 1;
            marker = format!("[pasted {lines} lines #{n}]");
        }
        self.insert_str(&marker);
        self.pastes.push((marker, text));
    }

    /// Shows every folded paste whole in the editor.
    pub fn expand_pastes(&mut self) {
        let (text, lead_pasted) = (self.full_text(), self.lead_pasted);
        self.pastes.clear();
        self.set_text(&text);
        self.lead_pasted = lead_pasted;
    }

    /// The lines as rows of at most `width` columns (broken after the last
    /// space that fits, else anywhere), and the cursor's row and column
    /// among them; the cursor always has a cell of its own.
    pub fn layout(&self, width: usize) -> (Vec<String>, (usize, usize)) {
        let width = width.max(1);
        let mut rows: Vec<String> = Vec::new();
        let mut cursor = (0, 0);
        for (r, line) in self.lines.iter().enumerate() {
            let chars: Vec<char> = line.chars().collect();
            let mut start = 0;
            loop {
                let (mut end, mut used, mut space) = (start, 0, None);
                while end < chars.len() {
                    let w = chars[end].width().unwrap_or(0);
                    if used + w > width && end > start {
                        break;
                    }
                    used += w;
                    if chars[end] == ' ' {
                        space = Some(end);
                    }
                    end += 1;
                }
                if end < chars.len()
                    && let Some(space) = space
                {
                    end = space + 1;
                }
                let last = end >= chars.len();
                rows.push(chars[start..end].iter().collect());
                if r == self.row && self.col >= start && (self.col < end || last) {
                    let x: usize = chars[start..self.col]
                        .iter()
                        .map(|c| c.width().unwrap_or(0))
                        .sum();
                    cursor = if x >= width {
                        // After a full last row: the cursor starts the next.
                        rows.push(String::new());
                        (rows.len() - 1, 0)
                    } else {
                        (rows.len() - 1, x)
                    };
                }
                if last {
                    break;
                }
                start = end;
            }
        }
        (rows, cursor)
    }

    pub fn is_empty(&self) -> bool {
        self.lines.len() == 1 && self.lines[0].is_empty()
    }

    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// (row, column in chars).
    pub fn cursor(&self) -> (usize, usize) {
        (self.row, self.col)
    }

    pub fn set_text(&mut self, text: &str) {
        self.lines = text.split('\n').map(str::to_owned).collect();
        if self.lines.is_empty() {
            self.lines.push(String::new());
        }
        self.row = self.lines.len() - 1;
        self.col = self.line_len(self.row);
        self.lead_pasted = false;
    }

    pub fn clear(&mut self) {
        self.lines = vec![String::new()];
        self.row = 0;
        self.col = 0;
        self.lead_pasted = false;
        self.browsing = None;
        self.pastes.clear();
    }

    /// Takes the text out (for sending), folded pastes whole, and records
    /// it in the history.
    pub fn take(&mut self) -> String {
        let text = self.full_text();
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        self.clear();
        text
    }

    fn line_len(&self, row: usize) -> usize {
        self.lines.get(row).map_or(0, |l| l.chars().count())
    }

    fn byte_at(&self, row: usize, col: usize) -> usize {
        let line = &self.lines[row];
        line.char_indices().nth(col).map_or(line.len(), |(i, _)| i)
    }

    pub fn insert_char(&mut self, c: char) {
        if c == '\n' {
            return self.newline();
        }
        if (self.row, self.col) == (0, 0) {
            self.lead_pasted = false;
        }
        let at = self.byte_at(self.row, self.col);
        self.lines[self.row].insert(at, c);
        self.col += 1;
    }

    /// Inserts text (a paste), newlines included; CRLF becomes LF.
    pub fn insert_str(&mut self, text: &str) {
        for c in text.replace("\r\n", "\n").replace('\r', "\n").chars() {
            self.insert_char(c);
        }
    }

    pub fn newline(&mut self) {
        let at = self.byte_at(self.row, self.col);
        let rest = self.lines[self.row].split_off(at);
        self.lines.insert(self.row + 1, rest);
        self.row += 1;
        self.col = 0;
    }

    pub fn backspace(&mut self) {
        if self.col > 0 {
            let start = self.byte_at(self.row, self.col - 1);
            let end = self.byte_at(self.row, self.col);
            self.lines[self.row].replace_range(start..end, "");
            self.col -= 1;
        } else if self.row > 0 {
            let line = self.lines.remove(self.row);
            self.row -= 1;
            self.col = self.line_len(self.row);
            self.lines[self.row].push_str(&line);
        }
    }

    pub fn delete(&mut self) {
        if self.col < self.line_len(self.row) {
            let start = self.byte_at(self.row, self.col);
            let end = self.byte_at(self.row, self.col + 1);
            self.lines[self.row].replace_range(start..end, "");
        } else if self.row + 1 < self.lines.len() {
            let next = self.lines.remove(self.row + 1);
            self.lines[self.row].push_str(&next);
        }
    }

    pub fn left(&mut self) {
        if self.col > 0 {
            self.col -= 1;
        } else if self.row > 0 {
            self.row -= 1;
            self.col = self.line_len(self.row);
        }
    }

    pub fn right(&mut self) {
        if self.col < self.line_len(self.row) {
            self.col += 1;
        } else if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = 0;
        }
    }

    pub fn home(&mut self) {
        self.col = 0;
    }

    pub fn end(&mut self) {
        self.col = self.line_len(self.row);
    }

    fn chars(&self) -> Vec<char> {
        self.lines[self.row].chars().collect()
    }

    pub fn word_left(&mut self) {
        if self.col == 0 {
            return self.left();
        }
        let chars = self.chars();
        let mut col = self.col;
        while col > 0 && chars[col - 1].is_whitespace() {
            col -= 1;
        }
        while col > 0 && !chars[col - 1].is_whitespace() {
            col -= 1;
        }
        self.col = col;
    }

    pub fn word_right(&mut self) {
        let chars = self.chars();
        if self.col >= chars.len() {
            return self.right();
        }
        let mut col = self.col;
        while col < chars.len() && chars[col].is_whitespace() {
            col += 1;
        }
        while col < chars.len() && !chars[col].is_whitespace() {
            col += 1;
        }
        self.col = col;
    }

    /// Deletes the word before the cursor (Ctrl+W).
    pub fn delete_word(&mut self) {
        let end = self.col;
        self.word_left();
        if self.col < end && self.row < self.lines.len() {
            let start = self.byte_at(self.row, self.col);
            let stop = self.byte_at(self.row, end);
            self.lines[self.row].replace_range(start..stop, "");
        }
    }

    /// The `@word` the cursor ends, for the file picker: its row, the
    /// column of its `@` and what follows it. The `@` must start the word
    /// (after opening brackets or quotes at most), as `file_refs` reads
    /// references, so an e-mail address is none.
    pub fn at_word(&self) -> Option<(usize, usize, String)> {
        let chars = self.chars();
        let before = &chars[..self.col.min(chars.len())];
        let start = before
            .iter()
            .rposition(|c| c.is_whitespace())
            .map_or(0, |i| i + 1);
        let word = &before[start..];
        let at = word.iter().position(|&c| c == '@')?;
        if !word[..at]
            .iter()
            .all(|c| matches!(c, '(' | '[' | '"' | '\''))
        {
            return None;
        }
        Some((self.row, start + at, word[at + 1..].iter().collect()))
    }

    /// Replaces the cursor's line from column `from` to the cursor with `text`.
    pub fn replace_before_cursor(&mut self, from: usize, text: &str) {
        let from = from.min(self.col);
        let start = self.byte_at(self.row, from);
        let end = self.byte_at(self.row, self.col);
        self.lines[self.row].replace_range(start..end, "");
        self.col = from;
        self.insert_str(text);
    }

    /// Deletes from the start of the line to the cursor (Ctrl+U).
    pub fn kill_line(&mut self) {
        let at = self.byte_at(self.row, self.col);
        self.lines[self.row].replace_range(..at, "");
        self.col = 0;
    }

    /// Up: the line above, or the previous history entry on the first line.
    pub fn up(&mut self) {
        if self.row > 0 {
            self.row -= 1;
            self.col = self.col.min(self.line_len(self.row));
            return;
        }
        let next = match self.browsing {
            None if !self.history.is_empty() => {
                self.draft = self.text();
                self.history.len() - 1
            }
            Some(i) if i > 0 => i - 1,
            _ => return,
        };
        self.browsing = Some(next);
        let entry = self.history[next].clone();
        self.set_text(&entry);
    }

    /// Down: the line below, or the next history entry on the last line.
    pub fn down(&mut self) {
        if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = self.col.min(self.line_len(self.row));
            return;
        }
        let Some(i) = self.browsing else { return };
        if i + 1 < self.history.len() {
            self.browsing = Some(i + 1);
            let entry = self.history[i + 1].clone();
            self.set_text(&entry);
        } else {
            self.browsing = None;
            let draft = std::mem::take(&mut self.draft);
            self.set_text(&draft);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_editor_knows_whether_its_first_character_was_pasted() {
        let mut e = Editor::new();
        e.insert_str("!ls");
        assert!(!e.lead_pasted());
        e.clear();
        e.paste("!rm -rf x");
        assert!(e.lead_pasted());
        e.expand_pastes();
        assert!(e.lead_pasted(), "showing pastes whole keeps it");
        e.home();
        e.insert_char('!');
        assert!(!e.lead_pasted(), "a character typed before the paste leads");
        e.take();
        assert!(!e.lead_pasted());
        e.insert_str("say ");
        e.paste("!not first");
        assert!(!e.lead_pasted());
        let long: String = (0..12).map(|n| format!("!{n}\n")).collect();
        e.clear();
        e.paste(&long);
        assert!(e.lead_pasted() && e.has_folded_paste());
    }

    #[test]
    fn typing_newlines_backspace_join() {
        let mut e = Editor::new();
        e.insert_str("héllo\r\nwörld");
        assert_eq!(e.text(), "héllo\nwörld");
        assert_eq!(e.cursor(), (1, 5));
        e.home();
        e.backspace();
        assert_eq!(e.text(), "héllowörld");
        assert_eq!(e.cursor(), (0, 5));
        e.delete();
        assert_eq!(e.text(), "hélloörld");
    }

    #[test]
    fn words_and_kills() {
        let mut e = Editor::new();
        e.insert_str("cargo test  --workspace");
        e.word_left();
        assert_eq!(e.cursor(), (0, 12));
        e.word_left();
        e.word_left();
        assert_eq!(e.cursor(), (0, 0));
        e.word_right();
        assert_eq!(e.cursor(), (0, 5));
        e.end();
        e.delete_word();
        assert_eq!(e.text(), "cargo test  ");
        e.kill_line();
        assert!(e.is_empty());
    }

    #[test]
    fn long_pastes_fold_and_are_sent_whole() {
        let mut e = Editor::new();
        e.insert_str("see ");
        let long: String = (1..=12).map(|n| format!("line {n}\r\n")).collect();
        e.paste(&long);
        e.paste(&long);
        e.paste("short\npaste");
        assert_eq!(
            e.text(),
            "see [pasted 12 lines][pasted 12 lines #2]short\npaste"
        );
        assert!(e.has_folded_paste());
        let whole = long.replace('\r', "");
        assert_eq!(e.take(), format!("see {whole}{whole}short\npaste"));
        assert!(e.is_empty() && !e.has_folded_paste());

        e.paste(&long);
        e.expand_pastes();
        assert_eq!(e.text(), whole);
        assert!(!e.has_folded_paste());
    }

    #[test]
    fn layout_wraps_at_spaces_and_keeps_the_cursor_in_view() {
        let mut e = Editor::new();
        e.insert_str("one two three four");
        let (rows, cursor) = e.layout(9);
        assert_eq!(rows, ["one two ", "three ", "four"]);
        assert_eq!(cursor, (2, 4));
        e.insert_str("56789");
        // A full last row: the cursor gets the next one.
        assert_eq!(
            e.layout(9),
            (
                vec![
                    "one two ".into(),
                    "three ".into(),
                    "four56789".into(),
                    String::new()
                ],
                (3, 0)
            )
        );
        e.home();
        assert_eq!(e.layout(9).1, (0, 0));
        let mut e = Editor::new();
        e.insert_str(&"x".repeat(20));
        e.newline();
        e.insert_str("end");
        assert_eq!(
            e.layout(8),
            (
                vec!["x".repeat(8), "x".repeat(8), "xxxx".into(), "end".into()],
                (3, 3)
            )
        );
    }

    #[test]
    fn history_browsing_keeps_the_draft() {
        let mut e = Editor::new();
        e.insert_str("first");
        assert_eq!(e.take(), "first");
        e.insert_str("second");
        e.take();
        e.insert_str("draft");
        e.up();
        assert_eq!(e.text(), "second");
        e.up();
        assert_eq!(e.text(), "first");
        e.up();
        assert_eq!(e.text(), "first");
        e.down();
        e.down();
        assert_eq!(e.text(), "draft");
    }
}
