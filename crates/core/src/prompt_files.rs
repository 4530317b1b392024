//! `@path` references in a prompt the user sends, in every mode (TUI, print,
//! JSON, RPC): each file named is attached after the prompt (its text, an
//! image, or a short note saying why not), each directory as a listing, so
//! the model sees what the user pointed at without a tool call. The prompt's
//! own text stays as typed; a word naming nothing stays plain text.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::file_refs::{self, MAX_REFERENCED_BYTES};
use crate::message::{Block, text_of};

/// Most text bytes all of one prompt's attachments add: four files at the
/// per-file cap ([`MAX_REFERENCED_BYTES`]), about 256k tokens, already more
/// than most models' context windows hold beside a conversation.
pub const MAX_ATTACHED_TEXT_BYTES: u64 = 4 * MAX_REFERENCED_BYTES;

/// Most images one prompt attaches: Anthropic refuses requests over 32 MB,
/// and four images at the 5 MiB cap, base64-encoded, stay under it.
pub const MAX_ATTACHED_IMAGES: usize = 4;

/// Entries a directory's listing shows at most (the `ls` tool's default).
pub const MAX_LISTED_ENTRIES: usize = crate::tools::DEFAULT_LS_ENTRIES;

/// Adds the attachments of the prompt's text (the last text block of
/// `content`: earlier ones are context a front end put before it) right
/// after it. Files are read off the async threads.
pub async fn attach(content: &mut Vec<Block>, cwd: &Path) {
    let Some(at) = content
        .iter()
        .rposition(|b| matches!(b, Block::Text { .. }))
    else {
        return;
    };
    let text = text_of(&content[at..=at]);
    if file_refs::references(&text).is_empty() {
        return;
    }
    let cwd = cwd.to_owned();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let found = tokio::task::spawn_blocking(move || attachments(&text, &cwd, home.as_deref()))
        .await
        .unwrap_or_default();
    content.splice(at + 1..at + 1, found);
}

/// The attachments of `text`'s `@path` references, in order, each path
/// once: paths resolve against `cwd` (`~/` against `home`), anywhere the
/// read tool may read. Nothing from the first file a Markdown command
/// included on (`<file path=…>`) counts: those words are the file's, which
/// may come from a project not trusted to read outside itself, not the
/// user's.
pub fn attachments(text: &str, cwd: &Path, home: Option<&Path>) -> Vec<Block> {
    let included = text.find(INCLUDED_FILE).unwrap_or(text.len());
    let mut budget = Budget {
        text: MAX_ATTACHED_TEXT_BYTES,
        images: MAX_ATTACHED_IMAGES,
    };
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for reference in file_refs::references(text) {
        if reference.range.start >= included {
            break;
        }
        let Some(path) = file_refs::resolve(&reference.path, cwd, home) else {
            continue;
        };
        let metadata = match std::fs::metadata(&path) {
            Ok(metadata) => metadata,
            // A mention of something that is not there is just a word.
            Err(e) if is_missing(&e) => continue,
            Err(e) => {
                out.push(note(&reference.path, &format!("cannot read: {e}")));
                continue;
            }
        };
        if !seen.insert(path.canonicalize().unwrap_or_else(|_| path.clone())) {
            continue;
        }
        let block = if metadata.is_dir() {
            listing(&reference.path, &path, &mut budget)
        } else if !metadata.is_file() {
            note(&reference.path, "not a regular file")
        } else if crate::image::has_image_extension(&path) {
            image(&reference.path, &path, &mut budget)
        } else {
            file(&reference.path, &path, metadata.len(), &mut budget)
        };
        out.push(block);
    }
    out
}

/// How a Markdown command's included file starts (`markdown_commands`),
/// and how an attached file does.
const INCLUDED_FILE: &str = "<file path=\"";

/// Whether a text block is one [`attach`] added (a file, a listing or a
/// note), for showing a prompt as it was typed.
pub fn is_attachment(text: &str) -> bool {
    (text.starts_with(INCLUDED_FILE) && text.ends_with("\n</file>"))
        || (text.starts_with("<directory path=\"") && text.ends_with("\n</directory>"))
        || (text.starts_with("[@") && text.contains(": not attached: ") && text.ends_with(']'))
}

/// The text blocks of a prompt joined with "\n", without its attachments.
pub fn typed_text(blocks: &[Block]) -> String {
    let typed: Vec<&str> = blocks
        .iter()
        .filter_map(|b| match b {
            Block::Text { text } if !is_attachment(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    typed.join("\n")
}

/// What is left for the prompt's further attachments.
struct Budget {
    text: u64,
    images: usize,
}

impl Budget {
    /// Takes `len` bytes of text, if they fit.
    fn take_text(&mut self, len: u64) -> bool {
        let fits = len <= self.text;
        if fits {
            self.text -= len;
        }
        fits
    }
}

fn is_missing(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
    )
}

/// Why a referenced path is not attached, in place of its content.
fn note(shown: &str, why: &str) -> Block {
    Block::Text {
        text: format!("[@{shown}: not attached: {why}]"),
    }
}

fn over_budget(shown: &str) -> Block {
    note(
        shown,
        &format!(
            "this prompt's attachments already reach {MAX_ATTACHED_TEXT_BYTES} bytes; the read tool can read it"
        ),
    )
}

fn file(shown: &str, path: &Path, len: u64, budget: &mut Budget) -> Block {
    if len > MAX_REFERENCED_BYTES {
        return note(
            shown,
            &format!(
                "{len} bytes is over the {MAX_REFERENCED_BYTES}-byte cap; the read tool can read it in parts"
            ),
        );
    }
    let text = match file_refs::read_capped(path) {
        Ok(text) => text,
        Err(e) => return note(shown, &format!("cannot read: {e}")),
    };
    let start = &text.as_bytes()[..text.len().min(crate::tools::BINARY_SNIFF_BYTES)];
    if start.contains(&0) {
        return note(shown, "a binary file");
    }
    if !budget.take_text(text.len() as u64) {
        return over_budget(shown);
    }
    Block::Text {
        text: format!("<file path=\"{shown}\">\n{}\n</file>", text.trim_end()),
    }
}

fn listing(shown: &str, path: &Path, budget: &mut Budget) -> Block {
    let output = crate::tools::list_dir(path, MAX_LISTED_ENTRIES);
    let text = text_of(&output.content);
    if output.is_error {
        return note(shown, &text);
    }
    if !budget.take_text(text.len() as u64) {
        return over_budget(shown);
    }
    Block::Text {
        text: format!("<directory path=\"{shown}\">\n{text}\n</directory>"),
    }
}

fn image(shown: &str, path: &Path, budget: &mut Budget) -> Block {
    if budget.images == 0 {
        return note(
            shown,
            &format!("a prompt attaches at most {MAX_ATTACHED_IMAGES} images"),
        );
    }
    match crate::image::load(path) {
        Ok(block) => {
            budget.images -= 1;
            block
        }
        Err(e) => note(shown, &e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(blocks: &[Block]) -> Vec<String> {
        blocks
            .iter()
            .map(|b| match b {
                Block::Text { text } => text.clone(),
                Block::Image { mime_type, .. } => format!("image {mime_type}"),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn files_directories_and_notes_follow_the_references_once_each() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
        std::fs::write(root.join("my notes.md"), "spaced\n").unwrap();
        std::fs::write(root.join("blob.bin"), b"ab\0cd").unwrap();
        let big = MAX_REFERENCED_BYTES as usize + 1;
        std::fs::write(root.join("big.log"), "x".repeat(big)).unwrap();
        std::fs::write(root.join("fake.png"), "not an image").unwrap();

        let text = "explain @src/main.rs and @src (again @./src/main.rs), \
                    mail me@example.com, @nobody, @\"my notes.md\" @blob.bin @big.log @fake.png";
        let got = texts(&attachments(text, root, None));
        assert_eq!(got[0], "<file path=\"src/main.rs\">\nfn main() {}\n</file>");
        assert!(
            got[1].starts_with("<directory path=\"src\">\n") && got[1].contains(" main.rs\n"),
            "{}",
            got[1]
        );
        assert_eq!(got[2], "<file path=\"my notes.md\">\nspaced\n</file>");
        assert_eq!(got[3], "[@blob.bin: not attached: a binary file]");
        assert!(
            got[4].starts_with(&format!("[@big.log: not attached: {big} bytes is over")),
            "{}",
            got[4]
        );
        assert!(
            got[5].starts_with("[@fake.png: not attached: image ") && got[5].contains("not a png"),
            "{}",
            got[5]
        );
        assert_eq!(got.len(), 6, "{got:?}");
        let blocks = attachments(text, root, None);
        assert!(texts(&blocks).iter().all(|t| is_attachment(t)));
        assert!(!is_attachment(text));
        assert!(attachments("nothing here", root, None).is_empty());

        // An included file's words are not the user's.
        let expanded = "review @src/main.rs\n<file path=\"x.md\">\n@my-secret\n</file> @blob.bin";
        std::fs::write(root.join("my-secret"), "s").unwrap();
        assert_eq!(attachments(expanded, root, None).len(), 1);
    }

    #[test]
    fn the_prompts_attachments_are_capped_together() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let full = "y".repeat(MAX_REFERENCED_BYTES as usize);
        let mut text = String::new();
        for n in 0..5 {
            std::fs::write(root.join(format!("f{n}.txt")), &full).unwrap();
            text.push_str(&format!("@f{n}.txt "));
        }
        let got = texts(&attachments(&text, root, None));
        assert!(got[..4].iter().all(|t| t.starts_with("<file ")));
        assert!(got[4].contains("already reach"), "{}", got[4]);
    }

    #[tokio::test]
    async fn attachments_go_right_after_the_prompts_text() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "A").unwrap();
        let text = |t: &str| Block::Text { text: t.into() };
        let image = Block::Image {
            mime_type: "image/png".into(),
            data: String::new(),
        };
        let mut content = vec![text("shell @a.txt"), text("see @a.txt"), image.clone()];
        attach(&mut content, dir.path()).await;
        assert_eq!(
            content,
            [
                text("shell @a.txt"),
                text("see @a.txt"),
                text("<file path=\"a.txt\">\nA\n</file>"),
                image
            ]
        );
    }
}
