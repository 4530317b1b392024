//! Markdown to styled lines: headings, emphasis, lists, block quotes,
//! inline code, and fenced code blocks highlighted with syntect.

use std::sync::OnceLock;

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use syntect::easy::HighlightLines;
use syntect::highlighting::ThemeSet;
use syntect::parsing::SyntaxSet;

use crate::theme::Theme;

fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

fn highlight_theme() -> Option<&'static syntect::highlighting::Theme> {
    static SET: OnceLock<ThemeSet> = OnceLock::new();
    SET.get_or_init(ThemeSet::load_defaults)
        .themes
        .get("base16-ocean.dark")
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
}

/// Renders `text` (markdown) to lines; never fails (invalid markdown is text).
pub fn render(text: &str, theme: &Theme) -> Vec<Line<'static>> {
    let mut r = Renderer {
        theme,
        lines: Vec::new(),
        current: Vec::new(),
        styles: vec![Style::default().fg(theme.assistant)],
        lists: Vec::new(),
        quote: 0,
        code: None,
        prefix: None,
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

    fn text(&mut self, text: &str, style: Style) {
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
            Event::Start(Tag::Link { .. }) => {
                let accent = self.theme.accent;
                self.push_style(|s| s.fg(accent).add_modifier(Modifier::UNDERLINED));
            }
            Event::End(
                TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough | TagEnd::Link,
            ) => {
                self.styles.pop();
            }
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

    fn code_block(&mut self, lang: &str, code: &str) {
        let indent = Span::styled("  ", Style::default().fg(self.theme.muted));
        let set = syntaxes();
        let syntax = (!lang.is_empty())
            .then(|| set.find_syntax_by_token(lang))
            .flatten();
        let mut highlighter = match (syntax, highlight_theme()) {
            (Some(syntax), Some(theme)) => Some(HighlightLines::new(syntax, theme)),
            _ => None,
        };
        for line in code.trim_end_matches('\n').split('\n') {
            let mut spans = vec![indent.clone()];
            let with_newline = format!("{line}\n");
            let highlighted = highlighter
                .as_mut()
                .and_then(|h| h.highlight_line(&with_newline, set).ok());
            match highlighted {
                Some(parts) => {
                    for (style, text) in parts {
                        let text = text.trim_end_matches('\n');
                        if text.is_empty() {
                            continue;
                        }
                        let c = style.foreground;
                        spans.push(Span::styled(
                            text.to_owned(),
                            Style::default().fg(Color::Rgb(c.r, c.g, c.b)),
                        ));
                    }
                }
                None => spans.push(Span::styled(
                    line.to_owned(),
                    Style::default().fg(self.theme.code),
                )),
            }
            self.lines.push(Line::from(spans));
        }
        self.blank();
    }
}
