//! Front matter: the `---`-fenced block of `key: value` lines at the top of
//! a `SKILL.md` or a Markdown command. A file format shared by the agent
//! (skills) and the host (Markdown commands), so it lives beside the other
//! formats both sides read. Only the YAML these files use is understood:
//! plain, quoted and block (`|`, `>`) scalars, and a value continued on
//! indented lines; anything else is kept as text, never an error.

/// The fields of a file's front matter, in order, and the body after it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FrontMatter<'a> {
    pub fields: Vec<(String, String)>,
    /// The text after the closing fence (the whole text without front matter).
    pub body: &'a str,
}

impl FrontMatter<'_> {
    /// The value of `key` (the first one when it repeats).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Splits `text` into its front matter and body. Text without an opening
/// `---` line, or whose fence is never closed, has no front matter.
pub fn parse(text: &str) -> FrontMatter<'_> {
    let unmarked = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = strip_fence(unmarked) else {
        return FrontMatter {
            fields: Vec::new(),
            body: text,
        };
    };
    // The closing fence: a line that is `---` (or YAML's `...`).
    let mut offset = 0;
    let mut close = None;
    for line in rest.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare.trim_end() == "---" || bare.trim_end() == "..." {
            close = Some((offset, offset + line.len()));
            break;
        }
        offset += line.len();
    }
    let Some((end, body_start)) = close else {
        return FrontMatter {
            fields: Vec::new(),
            body: text,
        };
    };
    FrontMatter {
        fields: fields(&rest[..end]),
        body: &rest[body_start..],
    }
}

/// The text after an opening `---` line.
fn strip_fence(text: &str) -> Option<&str> {
    let (first, rest) = match text.split_once('\n') {
        Some((first, rest)) => (first, rest),
        None => (text, ""),
    };
    (first.trim_end() == "---").then_some(rest)
}

fn fields(block: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = block.lines().map(|l| l.trim_end_matches('\r')).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        if line.trim().is_empty() || line.trim_start().starts_with('#') || indented(line) {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let key = key.trim().trim_matches(['"', '\'']).to_owned();
        if key.is_empty() {
            continue;
        }
        // Lines indented under the key belong to its value.
        let start = i;
        while i < lines.len() && (indented(lines[i]) || lines[i].trim().is_empty()) {
            i += 1;
        }
        let more = &lines[start..i];
        out.push((key, scalar(value.trim(), more)));
    }
    out
}

fn indented(line: &str) -> bool {
    line.starts_with([' ', '\t'])
}

/// A value: quoted, a block scalar, or plain (continued on `more`).
fn scalar(first: &str, more: &[&str]) -> String {
    let header = first.split(" #").next().unwrap_or(first).trim();
    if let Some(style) = header.chars().next().filter(|c| matches!(c, '|' | '>'))
        && header[1..]
            .chars()
            .all(|c| matches!(c, '-' | '+' | '0'..='9'))
    {
        return block(style, header.contains('-'), more);
    }
    let continued = || {
        more.iter()
            .map(|l| l.trim())
            .filter(|l| !l.is_empty())
            .fold(first.to_owned(), |acc, l| {
                if acc.is_empty() {
                    l.to_owned()
                } else {
                    format!("{acc} {l}")
                }
            })
    };
    let text = continued();
    if let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        return unescape_double(inner);
    }
    if let Some(inner) = text.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')) {
        return inner.replace("''", "'");
    }
    match text.find(" #") {
        Some(comment) => text[..comment].trim_end().to_owned(),
        None => text,
    }
}

/// `|` keeps line breaks, `>` folds them into spaces; `-` drops the final one.
fn block(style: char, strip: bool, more: &[&str]) -> String {
    let indent = more
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let lines: Vec<&str> = more
        .iter()
        .map(|l| l.get(indent..).unwrap_or("").trim_end())
        .collect();
    let mut text = match style {
        '|' => lines.join("\n"),
        _ => {
            let mut folded = String::new();
            for line in &lines {
                if line.is_empty() {
                    folded.push('\n');
                } else {
                    if !folded.is_empty() && !folded.ends_with('\n') {
                        folded.push(' ');
                    }
                    folded.push_str(line);
                }
            }
            folded
        }
    };
    let trimmed = text.trim_end_matches('\n').len();
    text.truncate(trimmed);
    if !strip && !text.is_empty() {
        text.push('\n');
    }
    text
}

fn unescape_double(inner: &str) -> String {
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_body_are_split() {
        let text = "---\nname: review\ndescription: \"Review a PR: carefully\"\nargument-hint: [pr-number] [priority]\n---\nBody $ARGUMENTS\n";
        let fm = parse(text);
        assert_eq!(fm.get("name"), Some("review"));
        assert_eq!(fm.get("description"), Some("Review a PR: carefully"));
        assert_eq!(fm.get("argument-hint"), Some("[pr-number] [priority]"));
        assert_eq!(fm.body, "Body $ARGUMENTS\n");
    }

    #[test]
    fn text_without_a_closed_fence_is_all_body() {
        for text in ["no front matter", "---\nname: x\nnever closed", "", "---"] {
            let fm = parse(text);
            assert!(fm.fields.is_empty(), "{text:?}");
            assert_eq!(fm.body, text);
        }
        let fm = parse("\u{feff}---\r\ndescription: crlf\r\n---\r\nbody");
        assert_eq!(fm.get("description"), Some("crlf"));
        assert_eq!(fm.body, "body");
    }

    #[test]
    fn yaml_scalars_these_files_use() {
        let text = "---\n# a comment\nsingle: 'it''s'\nplain: one\n  two # note\nfolded: >-\n  first\n  second\n\n  third\nliteral: |\n  a\n    b\nempty:\nallowed-tools:\n  - Bash\n---\n";
        let fm = parse(text);
        assert_eq!(fm.get("single"), Some("it's"));
        assert_eq!(fm.get("plain"), Some("one two"));
        assert_eq!(fm.get("folded"), Some("first second\nthird"));
        assert_eq!(fm.get("literal"), Some("a\n  b\n"));
        assert_eq!(fm.get("empty"), Some(""));
        assert_eq!(fm.get("allowed-tools"), Some("- Bash"));
        assert_eq!(fm.get("missing"), None);
    }

    proptest::proptest! {
        #[test]
        fn any_text_parses_without_panicking(body in ".{0,200}", lines in proptest::collection::vec("[ \t#:|>'\"a-z\\\\-]{0,12}", 0..8)) {
            let text = format!("---\n{}\n---\n{body}", lines.join("\n"));
            let fm = parse(&text);
            proptest::prop_assert!(text.ends_with(fm.body));
            let _ = parse(&body);
        }

        #[test]
        fn arbitrary_bytes_never_panic(text in "\\PC{0,300}") {
            let fm = parse(&text);
            proptest::prop_assert!(text.ends_with(fm.body));
        }
    }
}
