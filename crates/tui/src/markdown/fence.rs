//! Code lines highlighted with syntect, resuming from the last call: the
//! streamed tail's open code fence is rendered every frame, and without this
//! each frame highlighted the whole fence again for one new line.

use std::cell::{Cell, RefCell};

use ratatui::style::{Color, Style};
use ratatui::text::Span;
use syntect::easy::HighlightLines;
use syntect::highlighting::{HighlightState, Theme};
use syntect::parsing::{ParseState, SyntaxReference, SyntaxSet};

/// What the last call highlighted: every line but its last (which may still
/// grow), the highlighter's state after them, and what they were given in.
struct Settled {
    lang: String,
    theme: String,
    /// The settled lines' text, each ending in '\n'.
    code: String,
    lines: Vec<Option<Vec<Span<'static>>>>,
    state: (HighlightState, ParseState),
}

thread_local! {
    /// One block's lines: rendering happens on the UI thread, one block at
    /// a time, and only the growing block at the bottom gains from it.
    static SETTLED: RefCell<Option<Settled>> = const { RefCell::new(None) };
    /// Lines that may still be highlighted (not taken from [`SETTLED`])
    /// until the limit is lifted; `None`: no limit.
    static BUDGET: Cell<Option<usize>> = const { Cell::new(None) };
    /// Set when a line was left uncoloured for want of budget.
    static SHORT: Cell<bool> = const { Cell::new(false) };
}

/// Limits the lines highlighted from now on to `lines` (`None`: no limit).
/// The lines a limited call could not highlight come back `None` (shown in
/// the plain code colour); the kept lines and state stop where it stopped,
/// so the next call goes on from there.
pub(super) fn limit(lines: Option<usize>) {
    BUDGET.with(|b| b.set(lines));
}

/// Whether every line asked for since the last call was highlighted.
pub(super) fn took_whole() -> bool {
    !SHORT.with(|s| s.replace(false))
}

/// Takes a line from the budget; false (and noted) when there is none.
fn spend() -> bool {
    BUDGET.with(|b| match b.get() {
        None => true,
        Some(0) => {
            SHORT.with(|s| s.set(true));
            false
        }
        Some(n) => {
            b.set(Some(n - 1));
            true
        }
    })
}

/// What a code block is highlighted with: the language token as written
/// after the fence (with the theme's name, the key of the kept lines).
pub(super) struct Highlighter<'h> {
    pub lang: &'h str,
    pub theme_name: &'h str,
    pub syntax: &'h SyntaxReference,
    pub theme: &'h Theme,
    pub syntaxes: &'h SyntaxSet,
}

/// `lines` (without their newlines) highlighted, each as its coloured spans.
/// The lines a previous call settled are reused when `lines` starts with
/// them, so a growing block costs its new lines; a line is `None` where
/// syntect failed on it.
pub(super) fn highlight(h: &Highlighter<'_>, lines: &[&str]) -> Vec<Option<Vec<Span<'static>>>> {
    let Some((last, settled)) = lines.split_last() else {
        return Vec::new();
    };
    if BUDGET.with(Cell::get) == Some(0) {
        // Spent: the kept lines stay for the call that has budget again.
        SHORT.with(|s| s.set(true));
        return vec![None; lines.len()];
    }
    let kept = SETTLED.with(|s| s.borrow_mut().take()).filter(|s| {
        s.lang == h.lang && s.theme == h.theme_name && starts_with_lines(settled, &s.code)
    });
    let (mut highlighter, mut out, mut code) = match kept {
        Some(s) => (
            HighlightLines::from_state(h.theme, s.state.0, s.state.1),
            s.lines,
            s.code,
        ),
        None => (
            HighlightLines::new(h.syntax, h.theme),
            Vec::new(),
            String::new(),
        ),
    };
    for line in &settled[out.len()..] {
        if !spend() {
            break;
        }
        out.push(spans(&mut highlighter, line, h.syntaxes));
        code.push_str(line);
        code.push('\n');
    }
    let state = highlighter.state();
    let tail = if out.len() == settled.len() && spend() {
        let mut highlighter = HighlightLines::from_state(h.theme, state.0.clone(), state.1.clone());
        spans(&mut highlighter, last, h.syntaxes)
    } else {
        None
    };
    let keep = Settled {
        lang: h.lang.to_owned(),
        theme: h.theme_name.to_owned(),
        code,
        lines: out.clone(),
        state,
    };
    SETTLED.with(|s| *s.borrow_mut() = Some(keep));
    out.resize(settled.len(), None);
    out.push(tail);
    out
}

/// Whether `lines` begin with the lines of `code` (each ending in '\n').
fn starts_with_lines(lines: &[&str], code: &str) -> bool {
    let mut rest = code;
    for line in lines {
        if rest.is_empty() {
            return true;
        }
        match rest.strip_prefix(line).and_then(|r| r.strip_prefix('\n')) {
            Some(r) => rest = r,
            None => return false,
        }
    }
    rest.is_empty()
}

/// One line's coloured parts, the newline syntect needs left out.
fn spans(
    highlighter: &mut HighlightLines<'_>,
    line: &str,
    syntaxes: &SyntaxSet,
) -> Option<Vec<Span<'static>>> {
    let with_newline = format!("{line}\n");
    let parts = highlighter.highlight_line(&with_newline, syntaxes).ok()?;
    Some(
        parts
            .into_iter()
            .filter_map(|(style, text)| {
                let text = text.trim_end_matches('\n');
                let c = style.foreground;
                (!text.is_empty()).then(|| {
                    Span::styled(
                        text.to_owned(),
                        Style::default().fg(Color::Rgb(c.r, c.g, c.b)),
                    )
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use syntect::highlighting::ThemeSet;

    fn kept_code() -> Option<String> {
        SETTLED.with(|s| s.borrow().as_ref().map(|s| s.code.clone()))
    }

    fn rust<'h>(syntaxes: &'h SyntaxSet, themes: &'h ThemeSet) -> Highlighter<'h> {
        Highlighter {
            lang: "rust",
            theme_name: "base16-ocean.dark",
            syntax: syntaxes.find_syntax_by_token("rust").unwrap(),
            theme: &themes.themes["base16-ocean.dark"],
            syntaxes,
        }
    }

    #[test]
    fn a_growing_block_resumes_where_its_settled_lines_end() {
        let (syntaxes, themes) = (
            SyntaxSet::load_defaults_newlines(),
            ThemeSet::load_defaults(),
        );
        let h = rust(&syntaxes, &themes);
        let code = [
            "/* a comment",
            "   still the comment */ fn main() {",
            "    let s = \"text\";",
            "}",
        ];
        let fresh = |lines: &[&str]| {
            SETTLED.with(|s| *s.borrow_mut() = None);
            highlight(&h, lines)
        };
        let whole = fresh(&code);
        assert_eq!(whole.len(), 4);
        assert!(whole.iter().all(Option::is_some));

        // Streamed a line (and a partial line) at a time, every call gives
        // what highlighting the block from its start gives.
        SETTLED.with(|s| *s.borrow_mut() = None);
        for n in 1..=code.len() {
            let partial = &code[n - 1][..code[n - 1].len() / 2];
            let mut growing = code[..n - 1].to_vec();
            growing.push(partial);
            let resumed = highlight(&h, &growing);
            assert_eq!(resumed, fresh(&growing), "{growing:?}");
            SETTLED.with(|s| *s.borrow_mut() = None);
            highlight(&h, &code[..n - 1]);
            let resumed = highlight(&h, &code[..n]);
            assert_eq!(resumed, whole[..n].to_vec(), "line {n}");
            assert_eq!(
                kept_code(),
                Some(code[..n - 1].iter().map(|l| format!("{l}\n")).collect()),
                "all but the last line are kept"
            );
        }

        // Other text, another language or theme starts over.
        let other = highlight(&h, &["x", "y"]);
        assert_eq!(other, fresh(&["x", "y"]));
        assert_eq!(kept_code().as_deref(), Some("x\n"));
        let python = Highlighter {
            lang: "python",
            syntax: syntaxes.find_syntax_by_token("python").unwrap(),
            ..h
        };
        highlight(&python, &["x", "y", "z"]);
        assert_eq!(highlight(&h, &["x", "y", "z"]), fresh(&["x", "y", "z"]));
        assert!(highlight(&h, &[]).is_empty());
    }

    #[test]
    fn a_limited_call_highlights_part_and_the_next_goes_on() {
        let (syntaxes, themes) = (
            SyntaxSet::load_defaults_newlines(),
            ThemeSet::load_defaults(),
        );
        let h = rust(&syntaxes, &themes);
        let code: Vec<String> = (0..10).map(|i| format!("let x{i} = {i};")).collect();
        let code: Vec<&str> = code.iter().map(String::as_str).collect();
        SETTLED.with(|s| *s.borrow_mut() = None);
        let whole = highlight(&h, &code);
        assert!(took_whole());

        SETTLED.with(|s| *s.borrow_mut() = None);
        limit(Some(4));
        let first = highlight(&h, &code);
        assert!(!took_whole(), "six lines left uncoloured");
        assert_eq!(first[..4], whole[..4]);
        assert!(first[4..].iter().all(Option::is_none));
        assert_eq!(first.len(), 10);
        // Spent: another block waits, and what was kept stays.
        assert!(
            highlight(&h, &["fn other() {}", "x"])
                .iter()
                .all(Option::is_none)
        );
        assert!(!took_whole());
        limit(Some(4));
        assert!(highlight(&h, &code)[8..].iter().all(Option::is_none));
        assert!(!took_whole());
        limit(Some(4));
        let third = highlight(&h, &code);
        limit(None);
        assert!(took_whole(), "the last two lines");
        assert_eq!(third, whole);
    }

    #[test]
    fn settled_lines_match_whole_lines_only() {
        assert!(starts_with_lines(&["ab", "c"], "ab\n"));
        assert!(starts_with_lines(&["ab", "c"], "ab\nc\n"));
        assert!(starts_with_lines(&["ab"], ""));
        assert!(!starts_with_lines(&["abc", "d"], "ab\n"));
        assert!(!starts_with_lines(&["ab"], "ab\nc\n"));
    }
}
