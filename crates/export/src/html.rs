//! The web page: one file with its styles inline, no script, images as data
//! URLs, and a Content-Security-Policy that lets it load nothing. Every
//! piece of the transcript goes through [`escape`] or through the Markdown
//! renderer with raw HTML turned into text, so nothing in a session (a
//! model's answer, a tool's output, a file's content) becomes markup.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::OnceLock;

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};
use syntect::easy::HighlightLines;
use syntect::highlighting::ThemeSet;
use syntect::parsing::SyntaxSet;
use syntect::util::LinesWithEndings;
use zot_core::message::{Block, Message, Role};
use zot_core::session::index::{Branch, BranchItem};

use crate::mask::mask_secrets;

/// The policy the page declares: no network, no script, no frames or
/// forms; inline styles and data-URL images only.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'";

/// The most of one tool result a page shows (a page of several megabytes
/// of build log helps no reader; the session file keeps it whole).
const RESULT_BYTES: usize = 64 * 1024;

/// Image types shown inline (others are named, not embedded).
const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

const STYLE: &str = r#"
:root { color-scheme: light dark; --fg: #1f2328; --bg: #ffffff; --muted: #59636e; --line: #d1d9e0; --user: #ddf4ff; --code: #f6f8fa; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --bg: #0d1117; --muted: #9198a1; --line: #3d444d; --user: #0c2d4b; --code: #151b23; } }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 52rem; padding: 1rem; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); overflow-wrap: anywhere; }
h1 { font-size: 1.5rem; margin: 0 0 .25rem; }
.meta, .note, footer { color: var(--muted); font-size: .875rem; }
section.msg { margin: 1rem 0; padding: .5rem .75rem; border: 1px solid var(--line); border-radius: .5rem; }
section.user { background: var(--user); }
.role { font-weight: 600; font-size: .8rem; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
pre { background: var(--code); padding: .5rem; border-radius: .375rem; overflow-x: auto; white-space: pre-wrap; font-size: .85rem; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
details { margin: .5rem 0; border-left: 3px solid var(--line); padding-left: .5rem; }
summary { cursor: pointer; color: var(--muted); }
details.error > summary { color: #cf222e; }
img { max-width: 100%; height: auto; }
table { border-collapse: collapse; } td, th { border: 1px solid var(--line); padding: .25rem .5rem; }
"#;

/// The page for `branch`.
pub fn html(branch: &Branch) -> String {
    let mut out = String::new();
    let title = escape(&mask_secrets(&branch.title));
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{CONTENT_SECURITY_POLICY}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n\
         <title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{title}</h1>\n"
    );
    let meta = &branch.meta;
    let _ = writeln!(
        out,
        "<p class=\"meta\">session {} · started {} · {} · {}/{}</p>",
        escape(&meta.id),
        escape(&meta.started),
        escape(&mask_secrets(&meta.cwd)),
        escape(&meta.provider),
        escape(&meta.model)
    );
    let results = results_by_call(&branch.items);
    for item in &branch.items {
        match item {
            BranchItem::Message(message) => message_html(&mut out, message, &results),
            BranchItem::Compaction(summary) => {
                let _ = writeln!(
                    out,
                    "<details class=\"note\"><summary>Earlier messages were summarised</summary>{}</details>",
                    markdown_html(summary)
                );
            }
            BranchItem::ModelChange(model) => {
                let _ = writeln!(
                    out,
                    "<p class=\"note\">continued with {}</p>",
                    escape(model)
                );
            }
        }
    }
    if !branch.others.is_empty() {
        out.push_str("<h2>Other branches</h2>\n<ul>\n");
        for row in &branch.others {
            let _ = writeln!(out, "<li>{}</li>", escape(&mask_secrets(&row.text)));
        }
        out.push_str("</ul>\n");
    }
    let u = &branch.usage;
    let _ = writeln!(
        out,
        "<footer><p>input {} tokens · output {} · cache read {} · cache write {} · ${:.4}</p>\
         <p>exported by zot {}</p></footer>\n</body>\n</html>",
        u.input,
        u.output,
        u.cache_read,
        u.cache_write,
        u.cost_usd,
        env!("CARGO_PKG_VERSION")
    );
    out
}

/// Each tool call's result blocks and whether it failed, by call id.
fn results_by_call(items: &[BranchItem]) -> HashMap<&str, (&[Block], bool)> {
    items
        .iter()
        .filter_map(|item| match item {
            BranchItem::Message(m) if m.role == Role::Tool => Some(&m.content),
            _ => None,
        })
        .flatten()
        .filter_map(|block| match block {
            Block::ToolResult {
                call_id,
                is_error,
                content,
            } => Some((call_id.as_str(), (content.as_slice(), *is_error))),
            _ => None,
        })
        .collect()
}

fn message_html(out: &mut String, message: &Message, results: &HashMap<&str, (&[Block], bool)>) {
    let (class, role) = match message.role {
        Role::User => ("user", "You"),
        Role::Assistant => ("assistant", "Assistant"),
        // Results are shown with their calls.
        Role::Tool => return,
    };
    let _ = writeln!(
        out,
        "<section class=\"msg {class}\">\n<div class=\"role\">{role}</div>"
    );
    for block in &message.content {
        match block {
            Block::Text { text } => out.push_str(&markdown_html(text)),
            Block::Image { mime_type, data } => out.push_str(&image_html(mime_type, data)),
            Block::Thinking { thinking, .. } => {
                let _ = writeln!(
                    out,
                    "<details class=\"thinking\"><summary>Thinking</summary>{}</details>",
                    markdown_html(thinking)
                );
            }
            Block::Reasoning { summary, .. } if !summary.trim().is_empty() => {
                let _ = writeln!(
                    out,
                    "<details class=\"thinking\"><summary>Thinking</summary>{}</details>",
                    markdown_html(summary)
                );
            }
            Block::RedactedThinking { .. } | Block::Reasoning { .. } => {
                out.push_str("<p class=\"note\">(thinking the provider keeps encrypted)</p>\n");
            }
            Block::ToolCall { id, name, args } => {
                tool_html(out, name, args, results.get(id.as_str()).copied());
            }
            Block::ToolResult { .. } => {}
        }
    }
    out.push_str("</section>\n");
}

/// A tool call, collapsed: its name and a preview, then its arguments and
/// its result when opened.
fn tool_html(
    out: &mut String,
    name: &str,
    args: &serde_json::Value,
    result: Option<(&[Block], bool)>,
) {
    let failed = result.is_some_and(|(_, error)| error);
    let preview = mask_secrets(&zot_core::agent::preview(args));
    let args = serde_json::to_string_pretty(args).unwrap_or_default();
    let _ = write!(
        out,
        "<details class=\"tool{}\"><summary>{} <code>{}</code>{}</summary>\n<pre><code>{}</code></pre>\n",
        if failed { " error" } else { "" },
        escape(name),
        escape(&preview),
        if failed { " (failed)" } else { "" },
        escape(&mask_secrets(&args))
    );
    match result {
        None => out.push_str("<p class=\"note\">no result recorded</p>\n"),
        Some((blocks, _)) => {
            for block in blocks {
                match block {
                    Block::Text { text } => {
                        let _ = writeln!(
                            out,
                            "<pre>{}</pre>",
                            escape(&mask_secrets(&cut(text, RESULT_BYTES)))
                        );
                    }
                    Block::Image { mime_type, data } => out.push_str(&image_html(mime_type, data)),
                    _ => {}
                }
            }
        }
    }
    out.push_str("</details>\n");
}

/// An image as a data URL, when its type is an image type and its data is
/// base64; otherwise a note.
fn image_html(mime_type: &str, data: &str) -> String {
    let base64 = data
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='));
    if IMAGE_TYPES.contains(&mime_type) && base64 {
        format!("<p><img alt=\"image\" src=\"data:{mime_type};base64,{data}\"></p>\n")
    } else {
        format!(
            "<p class=\"note\">(an attachment of type {} not shown)</p>\n",
            escape(mime_type)
        )
    }
}

/// `text` cut to `max` bytes on a character boundary, saying how much was left out.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n… [{} more bytes in the session file]",
        &text[..end],
        text.len() - end
    )
}

/// Text for HTML: element content and attribute values alike.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// Whether a link may stay a link: http, https and mailto only.
fn safe_link(url: &str) -> bool {
    let lower = url.trim_start().to_ascii_lowercase();
    ["http://", "https://", "mailto:"]
        .iter()
        .any(|scheme| lower.starts_with(scheme))
}

/// Markdown as HTML: raw HTML becomes text, unsafe links and images their
/// text, code blocks highlighted.
fn markdown_html(text: &str) -> String {
    let text = mask_secrets(text);
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    let mut events: Vec<Event<'_>> = Vec::new();
    // Per open link: whether it was kept.
    let mut links: Vec<bool> = Vec::new();
    let mut code: Option<(String, String)> = None;
    for event in Parser::new_ext(&text, options) {
        if let Some((_, body)) = &mut code {
            match event {
                Event::Text(t) => body.push_str(&t),
                Event::End(TagEnd::CodeBlock) => {
                    if let Some((lang, body)) = code.take() {
                        events.push(Event::Html(highlight(&lang, &body).into()));
                    }
                }
                _ => {}
            }
            continue;
        }
        match event {
            Event::Html(raw) | Event::InlineHtml(raw) => events.push(Event::Text(raw)),
            Event::Start(Tag::CodeBlock(kind)) => {
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split_whitespace().next().unwrap_or("").to_owned()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                code = Some((lang, String::new()));
            }
            Event::Start(Tag::Link { ref dest_url, .. }) => {
                let keep = safe_link(dest_url);
                links.push(keep);
                if keep {
                    events.push(event);
                }
            }
            Event::End(TagEnd::Link) => {
                if links.pop().unwrap_or(false) {
                    events.push(event);
                }
            }
            // An image would be a request (refused by the policy anyway):
            // its alt text stays.
            Event::Start(Tag::Image { .. }) | Event::End(TagEnd::Image) => {}
            other => events.push(other),
        }
    }
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, events.into_iter());
    html
}

fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

fn themes() -> &'static ThemeSet {
    static SET: OnceLock<ThemeSet> = OnceLock::new();
    SET.get_or_init(ThemeSet::load_defaults)
}

/// A code block, its tokens coloured with syntect (escaped, as every text).
fn highlight(lang: &str, code: &str) -> String {
    let syntax = syntaxes()
        .find_syntax_by_token(lang)
        .unwrap_or_else(|| syntaxes().find_syntax_plain_text());
    let Some(theme) = themes().themes.get("InspiredGitHub") else {
        return format!("<pre><code>{}</code></pre>\n", escape(code));
    };
    let mut lines = HighlightLines::new(syntax, theme);
    let mut out = String::from("<pre><code>");
    for line in LinesWithEndings::from(code) {
        match lines.highlight_line(line, syntaxes()) {
            Ok(ranges) => {
                for (style, piece) in ranges {
                    let c = style.foreground;
                    let _ = write!(
                        out,
                        "<span style=\"color:#{:02x}{:02x}{:02x}\">{}</span>",
                        c.r,
                        c.g,
                        c.b,
                        escape(piece)
                    );
                }
            }
            Err(_) => out.push_str(&escape(line)),
        }
    }
    out.push_str("</code></pre>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_html_is_text_and_only_safe_links_stay_links() {
        let html = markdown_html(
            "hi </script><img src=x onerror=alert(1)> [a](javascript:alert(1)) [b](https://example.com) <javascript:alert(2)> ![pic](https://example.com/x.png)",
        );
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("</script>"), "{html}");
        assert!(
            html.contains("&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"),
            "{html}"
        );
        assert!(!html.contains("javascript:alert(1)\""), "{html}");
        assert!(!html.contains("href=\"javascript"), "{html}");
        assert!(
            html.contains("<a href=\"https://example.com\">b</a>"),
            "{html}"
        );
        assert!(html.contains("pic"), "{html}");
    }

    #[test]
    fn code_is_highlighted_and_escaped() {
        let html = markdown_html("```rust\nfn main() { let x = \"<b>\"; }\n```");
        assert!(html.contains("<span style=\"color:#"), "{html}");
        assert!(html.contains("&lt;b&gt;"), "{html}");
        assert!(!html.contains("<b>"), "{html}");
    }

    #[test]
    fn only_base64_images_of_image_types_are_embedded() {
        assert!(image_html("image/png", "iVBORw0KGgo=").contains("src=\"data:image/png;base64,"));
        assert!(!image_html("text/html", "PHNjcmlwdD4=").contains("<img"));
        assert!(!image_html("image/png", "\"><script>").contains("<img"));
    }
}
