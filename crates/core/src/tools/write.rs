//! The `write` tool: creates or replaces a whole file, creating missing
//! parent directories. Replacement is atomic and keeps an existing file's
//! permissions and hard links (see [`super::atomic_write`]); only regular
//! files are replaced.

use std::path::Path;

use serde_json::{Value, json};

use super::{args_object, atomic_write, blocking, io_error, required_str, special_kind};
use crate::tool::{BoxFuture, Tool, ToolContext, ToolOutput, ToolSpec};

/// Largest content written at once: a file this big is not written by
/// hand, and the model's whole output would go into it.
pub const MAX_WRITE_BYTES: usize = 16 * 1024 * 1024;

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
            }),
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
            return super::not_regular("write", path, kind);
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
