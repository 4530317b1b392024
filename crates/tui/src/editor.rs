//! The prompt editor: multi-line text with a cursor, word movement,
//! history and paste. Pure state; the view draws it and the app feeds it keys.

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
}

impl Editor {
    pub fn new() -> Self {
        Self {
            lines: vec![String::new()],
            ..Self::default()
        }
    }

    pub fn text(&self) -> String {
        self.lines.join("\n")
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
    }

    pub fn clear(&mut self) {
        self.lines = vec![String::new()];
        self.row = 0;
        self.col = 0;
        self.browsing = None;
    }

    /// Takes the text out (for sending) and records it in the history.
    pub fn take(&mut self) -> String {
        let text = self.text();
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
