//! `@path` references in Markdown that zot reads on the user's behalf:
//! `CLAUDE.md` imports and Markdown command templates. Owns how a reference
//! is spotted (a word starting with `@`, outside code), how its path is
//! resolved, and reading the file with a size bound.

use std::io::Read as _;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// The most bytes of one referenced or context file that are read. A
/// context file or an included file larger than this is a mistake (a log, a
/// build artefact) that would crowd out the conversation; 256 KiB is about
/// 64k tokens, a third of the smallest window zot's default models offer.
pub const MAX_REFERENCED_BYTES: u64 = 256 * 1024;

/// One `@path` in a text: the byte range of the whole `@…` word and the path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub range: Range<usize>,
    pub path: String,
}

/// Every `@path` word of `text` outside fenced code blocks and inline code
/// spans. The `@` starts a word (the start of a line or after whitespace or
/// an opening bracket or quote), so `a@b.com` is no reference; trailing
/// punctuation that ends a sentence is not part of the path. A path with
/// spaces is quoted: `@"my notes.md"`.
pub fn references(text: &str) -> Vec<Reference> {
    let mut out = Vec::new();
    let mut offset = 0;
    let mut fence: Option<&str> = None;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let trimmed = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
        match (fence, marker) {
            (None, Some(m)) => {
                fence = Some(m);
                continue;
            }
            (Some(open), Some(m)) if open == m => {
                fence = None;
                continue;
            }
            (Some(_), _) => continue,
            (None, None) => {}
        }
        scan_line(line, start, &mut out);
    }
    out
}

fn scan_line(line: &str, base: usize, out: &mut Vec<Reference>) {
    let bytes = line.as_bytes();
    let mut in_code = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'`' => in_code = !in_code,
            b'@' if !in_code && starts_word(bytes, i) => {
                let rest = &line[i + 1..];
                // `@"a path with spaces"`: the path is what the quotes hold.
                if let Some(quoted) = rest.strip_prefix('"') {
                    let Some(len) = quoted.find(['"', '\n']).filter(|&n| n > 0) else {
                        i += 1;
                        continue;
                    };
                    if quoted[len..].starts_with('"') {
                        out.push(Reference {
                            range: base + i..base + i + len + 3,
                            path: quoted[..len].to_owned(),
                        });
                        i += len + 3;
                        continue;
                    }
                }
                let end = rest
                    .find(|c: char| c.is_whitespace() || matches!(c, '`' | '"' | '<' | '>'))
                    .unwrap_or(rest.len());
                let path = rest[..end].trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']']);
                if !path.is_empty() {
                    out.push(Reference {
                        range: base + i..base + i + 1 + path.len(),
                        path: path.to_owned(),
                    });
                }
                i += 1 + end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
}

fn starts_word(bytes: &[u8], at: usize) -> bool {
    at == 0
        || matches!(
            bytes[at - 1],
            b' ' | b'\t' | b'\n' | b'(' | b'[' | b'"' | b'\''
        )
}

/// The file `path` names: `~/…` under `home`, an absolute path as is,
/// anything else relative to `base`.
pub fn resolve(path: &str, base: &Path, home: Option<&Path>) -> Option<PathBuf> {
    if let Some(rest) = path.strip_prefix("~/") {
        return home.map(|h| h.join(rest));
    }
    Some(base.join(path))
}

/// A file's text, at most [`MAX_REFERENCED_BYTES`] of it, with a note when
/// it was cut. Only regular files are read (a FIFO could block forever).
pub fn read_capped(path: &Path) -> std::io::Result<String> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_REFERENCED_BYTES)
        .read_to_end(&mut bytes)?;
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if meta.len() > MAX_REFERENCED_BYTES {
        text.push_str(&format!(
            "\n[… cut: {} more bytes of {}]",
            meta.len() - MAX_REFERENCED_BYTES,
            path.display()
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(text: &str) -> Vec<String> {
        references(text).into_iter().map(|r| r.path).collect()
    }

    #[test]
    fn references_are_words_outside_code() {
        assert_eq!(
            paths(
                "See @README.md, and (@docs/a.md). Mail me@x.org `@not` @~/notes.md\n```\n@fenced\n```\n@last"
            ),
            ["README.md", "docs/a.md", "~/notes.md", "last"]
        );
        assert_eq!(
            paths(r#"@"my notes.md", @"" @"open and @b.md"#),
            ["my notes.md", "b.md"]
        );
        let text = r#"x @"a b.md" y"#;
        assert_eq!(&text[references(text)[0].range.clone()], r#"@"a b.md""#);
        let text = "x @a.md y";
        let r = &references(text)[0];
        assert_eq!(&text[r.range.clone()], "@a.md");
        assert!(paths("@ alone, trailing @").is_empty());
    }

    #[test]
    fn big_files_are_cut_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("big.txt");
        std::fs::write(&file, "x".repeat(MAX_REFERENCED_BYTES as usize + 10)).unwrap();
        let text = read_capped(&file).unwrap();
        assert!(text.ends_with(&format!("10 more bytes of {}]", file.display())));
        assert!(read_capped(dir.path()).is_err());
    }

    proptest::proptest! {
        #[test]
        fn any_text_yields_ranges_inside_it(text in "\\PC{0,200}") {
            for r in references(&text) {
                proptest::prop_assert!(text.get(r.range.clone()).is_some());
            }
        }
    }
}
