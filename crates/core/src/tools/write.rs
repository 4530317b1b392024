//! The `write` tool: creates or replaces a whole file, creating missing
//! parent directories. Replacement is atomic and keeps an existing file's
//! permissions and hard links (see [`super::fs::atomic_write`]); only regular
//! files are replaced.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use super::args::{args_object, required_str};
use super::edit::{DIFF_CONTEXT_LINES, MAX_DIFF_LINES};
use super::fs::{atomic_write, blocking, io_error, special_kind};
use crate::tool::{BoxFuture, Tool, ToolContext, ToolOutput, ToolSpec};

/// Largest content written at once: a file this big is not written by
/// hand, and the model's whole output would go into it.
pub const MAX_WRITE_BYTES: usize = 16 * 1024 * 1024;

/// Longest the diff a write is approved by takes to compute; past it the
/// diff is coarser (fewer, larger hunks), never slower: the user is waiting.
pub const PREVIEW_DIFF_TIMEOUT: Duration = Duration::from_millis(300);

pub struct WriteTool;

impl Tool for WriteTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write".into(),
            description: "Write a file, replacing it if it exists and creating missing parent \
                          directories. Prefer edit for changing part of an existing file. \
                          At most 16 MiB; only regular files are replaced. Relative paths \
                          resolve against the project directory."
                .into(),
            schema: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File to write."},
                    "content": {"type": "string", "description": "The file's full new content."}
                },
                "required": ["path", "content"]
            })
            .into(),
            read_only: false,
        }
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let (path, content) = match args_object(&args).and_then(|obj| {
                Ok((
                    required_str(obj, "path")?.to_owned(),
                    required_str(obj, "content")?.to_owned(),
                ))
            }) {
                Ok(parsed) => parsed,
                Err(output) => return output,
            };
            let path = ctx.resolve(&path);
            blocking(move || write(&path, &content)).await
        })
    }

    /// `call` parses the arguments field by field, by the schema's rules.
    fn checks_own_arguments(&self) -> bool {
        true
    }

    /// The diff from the file as it is, or a new file's lines.
    fn approval_preview(&self, args: &Value, cwd: &Path) -> Option<String> {
        let path = args.get("path")?.as_str()?;
        let content = args.get("content")?.as_str()?;
        let path = crate::tool::ToolContext::new(cwd).resolve(path);
        Some(preview(&path, content))
    }
}

/// What writing `content` to `path` changes, as a unified diff of at most
/// [`MAX_DIFF_LINES`] lines.
fn preview(path: &Path, content: &str) -> String {
    let name = path.display().to_string();
    let old = match std::fs::metadata(path) {
        Err(_) => None,
        Ok(m) if !m.is_file() => {
            return format!("(this write would fail: {name} is not a regular file)");
        }
        Ok(m) if m.len() > MAX_WRITE_BYTES as u64 => {
            return format!(
                "replaces {name} ({} bytes) with {} lines",
                m.len(),
                content.lines().count()
            );
        }
        Ok(_) => match std::fs::read(path) {
            Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
            Err(e) => return format!("(cannot read {name}: {e})"),
        },
    };
    let mut lines: Vec<String> = match old {
        None => std::iter::once(format!("new file {name}"))
            .chain(content.lines().map(|l| format!("+{l}")))
            .collect(),
        Some(old) if old == content => return format!("{name} is unchanged"),
        Some(old) => similar::TextDiff::configure()
            .timeout(PREVIEW_DIFF_TIMEOUT)
            .diff_lines(old.as_str(), content)
            .unified_diff()
            .context_radius(DIFF_CONTEXT_LINES)
            .header(&name, &name)
            .to_string()
            .lines()
            .map(str::to_owned)
            .collect(),
    };
    if lines.len() > MAX_DIFF_LINES {
        let hidden = lines.len() - MAX_DIFF_LINES;
        lines.truncate(MAX_DIFF_LINES);
        lines.push(format!("... [diff truncated; {hidden} more lines]"));
    }
    lines.join("\n")
}

fn write(path: &Path, content: &str) -> ToolOutput {
    if content.len() > MAX_WRITE_BYTES {
        return ToolOutput::error(format!(
            "content is {} bytes; write takes at most {MAX_WRITE_BYTES} bytes (16 MiB); {} is \
             unchanged",
            content.len(),
            path.display()
        ));
    }
    if let Ok(metadata) = std::fs::metadata(path) {
        if metadata.is_dir() {
            return ToolOutput::error(format!("{} is a directory, not a file", path.display()));
        }
        // Replacing a FIFO or device node with a plain file would break
        // whatever uses it (as root, /dev/null).
        if let Some(kind) = special_kind(&metadata.file_type()) {
            return super::fs::not_regular("write", path, kind);
        }
    }
    if let Some(parent) = path.parent()
        && let Err(e) = std::fs::create_dir_all(parent)
    {
        return ToolOutput::error(format!("cannot create directory {}: {e}", parent.display()));
    }
    if let Err(e) = atomic_write(path, content.as_bytes()) {
        return io_error("write", path, &e);
    }
    ToolOutput::text(format!(
        "wrote {} bytes ({} lines) to {}",
        content.len(),
        content.lines().count(),
        path.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_approval_preview_is_the_diff_or_the_new_files_lines() {
        let dir = tempfile::tempdir().unwrap();
        let tool = WriteTool;
        let args = |content: &str| json!({"path": "a.txt", "content": content});
        assert_eq!(
            tool.approval_preview(&args("one\ntwo\n"), dir.path())
                .unwrap(),
            format!(
                "new file {}\n+one\n+two",
                dir.path().join("a.txt").display()
            )
        );
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
        let diff = tool
            .approval_preview(&args("one\n2\nthree\n"), dir.path())
            .unwrap();
        let lines: Vec<&str> = diff.lines().collect();
        assert!(
            lines[0].starts_with("--- ") && lines[1].starts_with("+++ "),
            "{diff}"
        );
        assert_eq!(
            lines[2..],
            ["@@ -1,3 +1,3 @@", " one", "-two", "+2", " three"]
        );
        assert!(
            tool.approval_preview(&args("one\ntwo\nthree\n"), dir.path())
                .unwrap()
                .ends_with("is unchanged")
        );
        // Nothing was written by looking.
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
            "one\ntwo\nthree\n"
        );
    }
}
