//! What `web_fetch` makes of a page: HTML as Markdown (htmd, a turndown
//! port) or as its visible text, and what counts as text at all.

use std::rc::Rc;

use markup5ever_rcdom::{Node, NodeData};

/// Elements whose content is never part of what a reader sees.
const HIDDEN: &[&str] = &["script", "style", "noscript", "template", "head", "svg"];

/// Elements that start a new line in the text form.
const BLOCKS: &[&str] = &[
    "p",
    "div",
    "br",
    "li",
    "tr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "pre",
    "blockquote",
    "section",
    "article",
    "header",
    "footer",
    "nav",
    "table",
    "ul",
    "ol",
    "dl",
    "dt",
    "dd",
    "hr",
    "main",
    "aside",
    "figure",
    "figcaption",
    "form",
];

/// `html` as Markdown, without scripts and styles.
pub fn markdown(html: &str) -> String {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(HIDDEN.to_vec())
        .build();
    converter.convert(html).unwrap_or_else(|_| text(html))
}

/// The text a reader of `html` sees, one block per line.
pub fn text(html: &str) -> String {
    let converter = htmd::HtmlToMarkdown::new();
    let Ok(tree) = converter.html_to_tree(html) else {
        return String::new();
    };
    let mut out = String::new();
    collect(&tree, &mut out);
    let lines: Vec<&str> = out
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines.join("\n")
}

fn collect(node: &Rc<Node>, out: &mut String) {
    match &node.data {
        NodeData::Text { contents } => {
            let text = contents.borrow();
            let mut words = text.split_whitespace().peekable();
            if text.starts_with(char::is_whitespace) && words.peek().is_some() {
                out.push(' ');
            }
            while let Some(word) = words.next() {
                out.push_str(word);
                if words.peek().is_some() || text.ends_with(char::is_whitespace) {
                    out.push(' ');
                }
            }
        }
        NodeData::Element { name, .. } => {
            let tag = name.local.as_ref();
            if HIDDEN.contains(&tag) {
                return;
            }
            let block = BLOCKS.contains(&tag);
            if block {
                out.push('\n');
            }
            for child in node.children.borrow().iter() {
                collect(child, out);
            }
            if block {
                out.push('\n');
            }
        }
        _ => {
            for child in node.children.borrow().iter() {
                collect(child, out);
            }
        }
    }
}

/// The media type of a `Content-Type` value, lowercased, without parameters.
pub fn media_type(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// How much of an HTML page is searched for a `<meta>` charset (the HTML
/// standard's prescan looks at the first 1024 bytes).
const META_PRESCAN_BYTES: usize = 1024;

/// `body` as text, decoded by its charset: a byte order mark first, then
/// the `charset` of `content_type`, then (for HTML) a `<meta charset>` or
/// `<meta http-equiv="Content-Type">` near the start, else UTF-8. Bytes that
/// do not decode become U+FFFD.
pub fn decode(body: &[u8], content_type: &str, html: bool) -> String {
    let label = |label: String| encoding_rs::Encoding::for_label(label.as_bytes());
    let declared = match charset_param(content_type).and_then(label) {
        Some(encoding) => encoding,
        // A page may say UTF-16 in a <meta> of ASCII bytes: that cannot be
        // so, and the standard reads it as UTF-8 (`output_encoding`).
        None => html
            .then(|| meta_charset(body))
            .flatten()
            .and_then(label)
            .map_or(encoding_rs::UTF_8, |e| e.output_encoding()),
    };
    // A byte order mark wins over both (`decode` sniffs it).
    let (text, _, _) = declared.decode(body);
    text.into_owned()
}

/// The `charset` parameter of a `Content-Type` value.
fn charset_param(content_type: &str) -> Option<String> {
    content_type.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| value.trim().trim_matches(['"', '\'']).to_owned())
    })
}

/// The charset a `<meta>` tag in the first [`META_PRESCAN_BYTES`] declares.
fn meta_charset(body: &[u8]) -> Option<String> {
    let head = &body[..body.len().min(META_PRESCAN_BYTES)];
    let head = String::from_utf8_lossy(head).to_ascii_lowercase();
    head.match_indices("<meta").find_map(|(at, _)| {
        let tag = &head[at..];
        let tag = &tag[..tag.find('>').unwrap_or(tag.len())];
        let value = &tag[tag.find("charset")? + "charset".len()..];
        let value = value.trim_start().strip_prefix('=')?.trim_start();
        let value = value.trim_start_matches(['"', '\'']);
        let end = value
            .find(|c: char| !(c.is_ascii_alphanumeric() || "-_.:".contains(c)))
            .unwrap_or(value.len());
        (end > 0).then(|| value[..end].to_owned())
    })
}

pub fn is_html(media: &str) -> bool {
    matches!(media, "text/html" | "application/xhtml+xml")
}

/// Whether a body of type `media` (and these first bytes) reads as text.
pub fn is_text(media: &str, body: &[u8]) -> bool {
    let textual = media.starts_with("text/")
        || media.is_empty()
        || media.ends_with("+json")
        || media.ends_with("+xml")
        || matches!(
            media,
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/x-javascript"
                | "application/ecmascript"
                | "application/x-sh"
                | "application/toml"
                | "application/yaml"
                | "application/x-yaml"
        );
    textual && !body.iter().take(8192).any(|&b| b == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_decoded_by_their_charset() {
        // "café" in ISO-8859-1 and in windows-1251 ("щ" is 0xF9 there).
        let latin1 = b"caf\xe9";
        assert_eq!(
            decode(latin1, "text/plain; charset=ISO-8859-1", false),
            "café"
        );
        assert_eq!(decode(latin1, "text/plain", false), "caf\u{fffd}");
        let meta = b"<html><head><meta charset=\"windows-1251\"></head>\xf9</html>";
        assert!(decode(meta, "text/html", true).contains('щ'));
        let http_equiv =
            b"<meta http-equiv='Content-Type' content='text/html; charset=koi8-r'>\xc1";
        assert!(decode(http_equiv, "text/html", true).ends_with('а'));
        // The header wins over the page; a BOM wins over both.
        assert!(decode(meta, "text/html; charset=utf-8", true).ends_with("\u{fffd}</html>"));
        assert_eq!(
            decode(b"\xef\xbb\xbfok", "text/plain; charset=latin1", false),
            "ok"
        );
        // A <meta> claiming UTF-16 in ASCII bytes reads as UTF-8.
        assert_eq!(
            decode(b"<meta charset=utf-16>\xc3\xa9", "text/html", true),
            "<meta charset=utf-16>é"
        );
    }

    const PAGE: &str = "<html><head><title>T</title><style>p{}</style></head><body>\
        <h1>Hello</h1><p>Some <b>bold</b> text and <a href=\"https://x.test/a\">a link</a>.</p>\
        <script>alert(1)</script><ul><li>one</li><li>two</li></ul></body></html>";

    #[test]
    fn html_becomes_markdown_or_text_without_scripts() {
        let md = markdown(PAGE);
        assert!(md.starts_with("# Hello"), "{md}");
        assert!(md.contains("**bold**"), "{md}");
        assert!(md.contains("[a link](https://x.test/a)"), "{md}");
        assert!(!md.contains("alert") && !md.contains("p{}"), "{md}");
        assert_eq!(text(PAGE), "Hello\nSome bold text and a link.\none\ntwo");
    }

    #[test]
    fn text_types() {
        assert!(is_text("application/json", b"{}"));
        assert!(is_text("text/plain", b"hi"));
        assert!(!is_text("image/png", b"\x89PNG"));
        assert!(!is_text("text/plain", b"a\0b"));
        assert_eq!(media_type("Text/HTML; charset=utf-8"), "text/html");
    }
}
