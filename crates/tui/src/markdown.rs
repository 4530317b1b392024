//! Markdown to styled lines: headings, emphasis, lists, block quotes,
//! inline code, tables as aligned columns, links with their URL, and fenced
//! code blocks under their language label, highlighted with syntect.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use pulldown_cmark::{Alignment, CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use syntect::easy::HighlightLines;
use syntect::highlighting::ThemeSet;
use syntect::parsing::SyntaxSet;
use unicode_width::UnicodeWidthStr;

use crate::theme::Theme;
use crate::wrap::wrap;

mod fence;

/// Most distinct link targets a session turns into terminal hyperlinks;
/// links past it are still shown with their URL, only not clickable. Each
/// costs its URL's bytes for the life of the process.
pub const MAX_HYPERLINKS: usize = 65_536;

/// The column separator of a table, and its width.
const TABLE_SEPARATOR: &str = " │ ";

/// Link targets by number. A link's cells carry its number in their
/// underline colour (a style slot nothing else uses) through wrapping and
/// the frame buffer; the view turns them into OSC 8 hyperlinks.
#[derive(Default)]
struct Links {
    urls: Vec<String>,
    numbers: HashMap<String, u32>,
}

fn links() -> &'static Mutex<Links> {
    static LINKS: OnceLock<Mutex<Links>> = OnceLock::new();
    LINKS.get_or_init(Mutex::default)
}

/// The underline colour that marks a cell as part of a link to `url`
/// (`None` once [`MAX_HYPERLINKS`] targets are known).
fn link_mark(url: &str) -> Option<Color> {
    let mut links = links().lock().unwrap_or_else(PoisonError::into_inner);
    let number = match links.numbers.get(url) {
        Some(n) => *n,
        None if links.urls.len() < MAX_HYPERLINKS => {
            let n = links.urls.len() as u32;
            links.urls.push(url.to_owned());
            links.numbers.insert(url.to_owned(), n);
            n
        }
        None => return None,
    };
    let [_, r, g, b] = (number + 1).to_be_bytes();
    Some(Color::Rgb(r, g, b))
}

/// The URL a cell's underline colour marks, if it marks one.
pub fn link_target(mark: Color) -> Option<String> {
    let Color::Rgb(r, g, b) = mark else {
        return None;
    };
    let number = u32::from_be_bytes([0, r, g, b]).checked_sub(1)?;
    let links = links().lock().unwrap_or_else(PoisonError::into_inner);
    links.urls.get(number as usize).cloned()
}

/// A URL as it may reach the terminal: control characters (which could end
/// the OSC 8 sequence early and drive the terminal) removed.
fn clean_url(url: &str) -> String {
    url.chars().filter(|c| !c.is_control()).collect()
}

/// syntect's syntax definitions and colour themes, which code blocks are
/// highlighted with. Loading them takes longer than a frame (a resumed
/// session's first screen waited for it), hence [`defer_highlighting`].
struct Highlighting {
    syntaxes: SyntaxSet,
    themes: ThemeSet,
}

static HIGHLIGHTING: OnceLock<Highlighting> = OnceLock::new();
/// Set by [`defer_highlighting`] until [`load_highlighting`] has run.
static DEFERRED: AtomicBool = AtomicBool::new(false);

fn highlighting() -> &'static Highlighting {
    HIGHLIGHTING.get_or_init(|| Highlighting {
        syntaxes: SyntaxSet::load_defaults_newlines(),
        themes: ThemeSet::load_defaults(),
    })
}

/// A line of code in each of the languages agents write most, highlighted
/// once by [`load_highlighting`]: syntect compiles a syntax's patterns when
/// they are first matched, which took the first frame of a resumed session
/// with Rust code in view 150 ms at the release profile. Other languages
/// compile where their first block is rendered.
const WARM_UP: [(&str, &str); 1] = [(
    "rust",
    "pub fn main() -> Result<(), E> { let v: Vec<u8> = vec![1]; println!(\"{v:?}\"); Ok(()) } // c\n",
)];

/// Renders code blocks in the plain code colour until [`load_highlighting`]
/// runs, so the first frame does not wait for syntect. Without this call
/// the first code block loads the highlighting where it is rendered.
pub fn defer_highlighting() {
    if HIGHLIGHTING.get().is_none() {
        DEFERRED.store(true, Ordering::SeqCst);
    }
}

/// Loads the highlighting and runs [`WARM_UP`] on the calling thread, which
/// `run` does once the first frame is drawn. Not on a thread of its own: a
/// second thread's allocations go to a glibc malloc arena of its own, which
/// cannot reuse what the main thread freed, and the TUI's peak memory grew
/// by 8.5 MiB that way (`BENCHMARKS.md`, issue 37).
pub fn load_highlighting() {
    let loaded = highlighting();
    if let Some(theme) = loaded.themes.themes.values().next() {
        for (lang, code) in WARM_UP {
            if let Some(syntax) = loaded.syntaxes.find_syntax_by_token(lang) {
                let mut lines = HighlightLines::new(syntax, theme);
                for line in code.split_inclusive('\n') {
                    // Only the patterns' compiling is wanted here.
                    let _ = lines.highlight_line(line, &loaded.syntaxes);
                }
            }
        }
    }
    DEFERRED.store(false, Ordering::SeqCst);
}

/// Limits the code lines that renderings from now on highlight to `lines`
/// in all, `None` lifting the limit: a streaming frame whose text brings a
/// whole code block highlights part of it, the rest showing in the plain
/// code colour, and later renderings of the block go on from there.
pub fn limit_highlighting(lines: Option<usize>) {
    fence::limit(lines);
}

/// Whether the renderings since the last call highlighted every code line
/// (false when the limit of [`limit_highlighting`] left some uncoloured).
pub fn highlighted_whole() -> bool {
    fence::took_whole()
}

/// Whether code blocks are highlighted when rendered now: false only
/// between [`defer_highlighting`] and [`load_highlighting`].
pub fn highlighting_ready() -> bool {
    !DEFERRED.load(Ordering::SeqCst)
}

struct Renderer<'t> {
    theme: &'t Theme,
    lines: Vec<Line<'static>>,
    current: Vec<Span<'static>>,
    styles: Vec<Style>,
    /// One entry per open list: `Some(n)` numbered from n, `None` bullets.
    lists: Vec<Option<u64>>,
    quote: usize,
    code: Option<(String, String)>,
    /// A pending bullet or number for the next text of a list item.
    prefix: Option<String>,
    /// The open link: its (cleaned) target and the text shown so far.
    link: Option<(String, String)>,
    table: Option<Table>,
    /// Columns the lines are for: tables are laid out to fit them.
    width: usize,
}

/// A table being read: its rows of cells (the head first), each cell its spans.
struct Table {
    aligns: Vec<Alignment>,
    rows: Vec<Vec<Vec<Span<'static>>>>,
    head: bool,
    cell: Option<Vec<Span<'static>>>,
}

/// Renders `text` (markdown) to lines for `width` columns (tables are laid
/// out to fit; other lines are wrapped by the caller); never fails (invalid
/// markdown is text).
pub fn render(text: &str, theme: &Theme, width: usize) -> Vec<Line<'static>> {
    let mut r = Renderer {
        theme,
        lines: Vec::new(),
        current: Vec::new(),
        styles: vec![Style::default().fg(theme.assistant)],
        lists: Vec::new(),
        quote: 0,
        code: None,
        prefix: None,
        link: None,
        table: None,
        width: width.max(1),
    };
    let options =
        Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(text, options) {
        r.event(event);
    }
    if let Some((lang, code)) = r.code.take() {
        // An unfinished fence while streaming: show what has arrived.
        r.code_block(&lang, &code);
    }
    if r.table.is_some() {
        // An unfinished table while streaming: the rows so far.
        r.end_table();
    }
    r.flush();
    while r.lines.last().is_some_and(|l| l.spans.is_empty()) {
        r.lines.pop();
    }
    r.lines
}

impl Renderer<'_> {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_style(&mut self, f: impl FnOnce(Style) -> Style) {
        let next = f(self.style());
        self.styles.push(next);
    }

    fn text(&mut self, text: &str, mut style: Style) {
        style = match &mut self.link {
            Some((url, shown)) => {
                shown.push_str(text);
                style.underline_color = link_mark(url);
                style
            }
            None => style,
        };
        if let Some(cell) = self.table.as_mut().and_then(|t| t.cell.as_mut()) {
            cell.push(Span::styled(text.to_owned(), style));
            return;
        }
        if self.current.is_empty() {
            let mut lead = "│ ".repeat(self.quote);
            lead.push_str(&"  ".repeat(self.lists.len().saturating_sub(1)));
            if let Some(prefix) = self.prefix.take() {
                lead.push_str(&prefix);
            }
            if !lead.is_empty() {
                self.current
                    .push(Span::styled(lead, Style::default().fg(self.theme.muted)));
            }
        }
        self.current.push(Span::styled(text.to_owned(), style));
    }

    fn flush(&mut self) {
        if !self.current.is_empty() {
            self.lines
                .push(Line::from(std::mem::take(&mut self.current)));
        }
    }

    fn blank(&mut self) {
        self.flush();
        if self.lines.last().is_some_and(|l| !l.spans.is_empty()) {
            self.lines.push(Line::default());
        }
    }

    fn event(&mut self, event: Event<'_>) {
        if let Some((_, code)) = &mut self.code {
            match event {
                Event::Text(t) => code.push_str(&t),
                Event::End(TagEnd::CodeBlock) => {
                    if let Some((lang, code)) = self.code.take() {
                        self.code_block(&lang, &code);
                    }
                }
                _ => {}
            }
            return;
        }
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                self.blank();
                let accent = self.theme.accent;
                self.push_style(|s| {
                    let s = s.fg(accent).add_modifier(Modifier::BOLD);
                    if level == HeadingLevel::H1 {
                        s.add_modifier(Modifier::UNDERLINED)
                    } else {
                        s
                    }
                });
            }
            Event::End(TagEnd::Heading(_)) => {
                self.styles.pop();
                self.blank();
            }
            Event::Start(Tag::Paragraph) => {}
            Event::End(TagEnd::Paragraph) => {
                if self.lists.is_empty() {
                    self.blank();
                } else {
                    self.flush();
                }
            }
            Event::Start(Tag::Emphasis) => self.push_style(|s| s.add_modifier(Modifier::ITALIC)),
            Event::Start(Tag::Strong) => self.push_style(|s| s.add_modifier(Modifier::BOLD)),
            Event::Start(Tag::Strikethrough) => {
                self.push_style(|s| s.add_modifier(Modifier::CROSSED_OUT))
            }
            Event::Start(Tag::Link { dest_url, .. }) => {
                let accent = self.theme.accent;
                self.push_style(|s| s.fg(accent).add_modifier(Modifier::UNDERLINED));
                self.link = Some((clean_url(&dest_url), String::new()));
            }
            Event::End(TagEnd::Link) => {
                self.styles.pop();
                self.end_link();
            }
            Event::End(TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough) => {
                self.styles.pop();
            }
            Event::Start(Tag::Table(aligns)) => {
                self.flush();
                self.table = Some(Table {
                    aligns,
                    rows: Vec::new(),
                    head: false,
                    cell: None,
                });
            }
            Event::Start(Tag::TableHead | Tag::TableRow) => {
                if let Some(table) = &mut self.table {
                    table.rows.push(Vec::new());
                }
            }
            Event::End(TagEnd::TableHead) => {
                if let Some(table) = &mut self.table {
                    table.head = true;
                }
            }
            Event::Start(Tag::TableCell) => {
                if let Some(table) = &mut self.table {
                    table.cell = Some(Vec::new());
                }
            }
            Event::End(TagEnd::TableCell) => {
                if let Some(table) = &mut self.table
                    && let Some(cell) = table.cell.take()
                    && let Some(row) = table.rows.last_mut()
                {
                    row.push(cell);
                }
            }
            Event::End(TagEnd::Table) => self.end_table(),
            Event::Start(Tag::BlockQuote(_)) => {
                self.flush();
                self.quote += 1;
            }
            Event::End(TagEnd::BlockQuote(_)) => {
                self.flush();
                self.quote = self.quote.saturating_sub(1);
                self.blank();
            }
            Event::Start(Tag::List(start)) => {
                self.flush();
                self.lists.push(start);
            }
            Event::End(TagEnd::List(_)) => {
                self.flush();
                self.lists.pop();
                if self.lists.is_empty() {
                    self.blank();
                }
            }
            Event::Start(Tag::Item) => {
                self.flush();
                let prefix = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let p = format!("{n}. ");
                        *n += 1;
                        p
                    }
                    _ => "• ".to_owned(),
                };
                self.prefix = Some(prefix);
            }
            Event::End(TagEnd::Item) => self.flush(),
            Event::Start(Tag::CodeBlock(kind)) => {
                self.flush();
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split_whitespace().next().unwrap_or("").to_owned()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Event::Text(t) => {
                let style = self.style();
                for (i, part) in t.split('\n').enumerate() {
                    if i > 0 {
                        self.flush();
                    }
                    if !part.is_empty() {
                        self.text(part, style);
                    }
                }
            }
            Event::Code(code) => {
                let style = Style::default().fg(self.theme.code);
                self.text(&format!("`{code}`"), style);
            }
            Event::SoftBreak => {
                let style = self.style();
                self.text(" ", style);
            }
            Event::HardBreak => self.flush(),
            Event::Rule => {
                self.flush();
                self.lines.push(Line::styled(
                    "────────",
                    Style::default().fg(self.theme.muted),
                ));
                self.blank();
            }
            Event::TaskListMarker(done) => {
                let style = self.style();
                self.text(if done { "[x] " } else { "[ ] " }, style);
            }
            Event::Html(html) | Event::InlineHtml(html) => {
                let style = self.style();
                self.text(&html, style);
            }
            _ => {}
        }
    }

    /// Closes a link: its URL follows in muted text unless the link shows
    /// it already (an autolink, or a link whose text is its address).
    fn end_link(&mut self) {
        let Some((url, shown)) = self.link.take() else {
            return;
        };
        let shown = shown.trim();
        let same = shown == url
            || url.strip_prefix("mailto:") == Some(shown)
            || url.trim_end_matches('/') == shown.trim_end_matches('/');
        if url.is_empty() || same {
            return;
        }
        let mut style = Style::default().fg(self.theme.muted);
        style.underline_color = link_mark(&url);
        let text = format!(" ({url})");
        match self.table.as_mut().and_then(|t| t.cell.as_mut()) {
            Some(cell) => cell.push(Span::styled(text, style)),
            None => self.current.push(Span::styled(text, style)),
        }
    }

    /// Lays out the table read so far as aligned columns that fit the
    /// width: the widest columns give up space first and their cells wrap.
    fn end_table(&mut self) {
        let Some(table) = self.table.take() else {
            return;
        };
        let columns = table.rows.iter().map(Vec::len).max().unwrap_or(0);
        if columns == 0 {
            return;
        }
        let cell_width = |cell: &Vec<Span<'static>>| -> usize {
            cell.iter().map(|s| s.content.width()).sum::<usize>()
        };
        let mut widths = vec![1usize; columns];
        for row in &table.rows {
            for (i, cell) in row.iter().enumerate() {
                widths[i] = widths[i].max(cell_width(cell));
            }
        }
        let separators = TABLE_SEPARATOR.width() * (columns - 1);
        let room = self.width.saturating_sub(separators).max(columns);
        while widths.iter().sum::<usize>() > room {
            let Some((widest, _)) = widths.iter().enumerate().max_by_key(|(_, w)| **w) else {
                break;
            };
            if widths[widest] <= 1 {
                break;
            }
            // Down to the next widest at once, so a very long cell costs one step.
            let next = widths.iter().filter(|w| **w < widths[widest]).max();
            let excess = widths.iter().sum::<usize>() - room;
            let cut = (widths[widest] - next.copied().unwrap_or(1)).clamp(1, excess);
            widths[widest] -= cut;
        }
        let muted = Style::default().fg(self.theme.muted);
        for (r, row) in table.rows.iter().enumerate() {
            let head = table.head && r == 0;
            let cells: Vec<Vec<Line<'static>>> = (0..columns)
                .map(|i| {
                    let spans = row.get(i).cloned().unwrap_or_default();
                    let spans = if head {
                        spans
                            .into_iter()
                            .map(|s| {
                                let style = s.style.add_modifier(Modifier::BOLD);
                                s.style(style)
                            })
                            .collect()
                    } else {
                        spans
                    };
                    wrap(&Line::from(spans), widths[i])
                })
                .collect();
            let height = cells.iter().map(Vec::len).max().unwrap_or(1);
            for n in 0..height {
                let mut spans = Vec::new();
                for (i, cell) in cells.iter().enumerate() {
                    if i > 0 {
                        spans.push(Span::styled(TABLE_SEPARATOR, muted));
                    }
                    let line = cell.get(n).cloned().unwrap_or_default();
                    let align = table.aligns.get(i).copied().unwrap_or(Alignment::None);
                    spans.extend(padded(line, widths[i], align));
                }
                // No trailing spaces after the last column.
                if let Some(last) = spans.last_mut() {
                    let trimmed = last.content.trim_end().to_owned();
                    last.content = trimmed.into();
                }
                self.lines.push(Line::from(spans));
            }
            if head {
                let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                self.lines.push(Line::styled(rule.join("─┼─"), muted));
            }
        }
        self.blank();
    }

    fn code_block(&mut self, lang: &str, code: &str) {
        let indent = Span::styled("  ", Style::default().fg(self.theme.muted));
        if !lang.is_empty() {
            self.lines.push(Line::styled(
                format!("  ── {lang}"),
                Style::default()
                    .fg(self.theme.muted)
                    .add_modifier(Modifier::ITALIC),
            ));
        }
        let lines: Vec<&str> = code.trim_end_matches('\n').split('\n').collect();
        let loaded = (!lang.is_empty() && highlighting_ready()).then(highlighting);
        let mut highlighted = loaded
            .and_then(|h| {
                Some(fence::Highlighter {
                    lang,
                    theme_name: self.theme.highlight,
                    syntax: h.syntaxes.find_syntax_by_token(lang)?,
                    theme: h.themes.themes.get(self.theme.highlight)?,
                    syntaxes: &h.syntaxes,
                })
            })
            .map(|h| fence::highlight(&h, &lines))
            .unwrap_or_default()
            .into_iter();
        for line in &lines {
            let mut spans = vec![indent.clone()];
            match highlighted.next().flatten() {
                Some(parts) => spans.extend(parts),
                None => spans.push(Span::styled(
                    (*line).to_owned(),
                    Style::default().fg(self.theme.code),
                )),
            }
            self.lines.push(Line::from(spans));
        }
        self.blank();
    }
}

/// `line`'s spans padded with spaces to `width` columns, placed by `align`.
fn padded(line: Line<'static>, width: usize, align: Alignment) -> Vec<Span<'static>> {
    let used: usize = line.spans.iter().map(|s| s.content.width()).sum();
    let gap = width.saturating_sub(used);
    let (before, after) = match align {
        Alignment::Right => (gap, 0),
        Alignment::Center => (gap / 2, gap - gap / 2),
        Alignment::None | Alignment::Left => (0, gap),
    };
    let mut spans = Vec::with_capacity(line.spans.len() + 2);
    if before > 0 {
        spans.push(Span::raw(" ".repeat(before)));
    }
    spans.extend(line.spans);
    if after > 0 {
        spans.push(Span::raw(" ".repeat(after)));
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn tables_are_aligned_columns_and_wrap_when_narrow() {
        let text =
            "| file | lines |\n|------|------:|\n| main.py | 4 |\n| util.py | 3 |\n\nSee docs.";
        let lines = plain(&render(text, &Theme::default(), 80));
        assert_eq!(
            lines,
            [
                "file    │ lines",
                "────────┼──────",
                "main.py │     4",
                "util.py │     3",
                "",
                "See docs."
            ]
        );
        let text = "| name | what it does |\n|---|---|\n| a | one two three four five six |";
        let lines = plain(&render(text, &Theme::default(), 20));
        assert!(lines.iter().all(|l| l.width() <= 20), "{lines:#?}");
        assert_eq!(lines[2], "a    │ one two three");
        assert_eq!(lines[3], "     │ four five six");
    }

    #[test]
    fn links_show_their_url_and_carry_a_hyperlink_mark() {
        let text = "Read [the docs](https://example.com/docs) or <https://example.com>.";
        let lines = render(text, &Theme::default(), 80);
        assert_eq!(
            plain(&lines),
            ["Read the docs (https://example.com/docs) or https://example.com."]
        );
        let marked: Vec<(String, String)> = lines[0]
            .spans
            .iter()
            .filter_map(|s| {
                let url = link_target(s.style.underline_color?)?;
                Some((s.content.to_string(), url))
            })
            .collect();
        assert_eq!(
            marked,
            [
                ("the docs".into(), "https://example.com/docs".into()),
                (
                    " (https://example.com/docs)".into(),
                    "https://example.com/docs".into()
                ),
                ("https://example.com".into(), "https://example.com".into()),
            ]
        );
    }

    #[test]
    fn control_characters_never_reach_a_link_target() {
        let text = "[x](https://e.com/a%1B]8;;evil)";
        let lines = render(text, &Theme::default(), 80);
        let url = link_target(lines[0].spans[0].style.underline_color.unwrap()).unwrap();
        assert!(!url.chars().any(char::is_control), "{url:?}");
        assert_eq!(
            clean_url("https://e.com/\u{1b}]8;;\u{7}x\u{9b}"),
            "https://e.com/]8;;x"
        );
    }

    #[test]
    fn code_fences_show_their_language() {
        let lines = plain(&render("```rust\nfn main() {}\n```", &Theme::default(), 80));
        assert_eq!(lines, ["  ── rust", "  fn main() {}"]);
    }
}
