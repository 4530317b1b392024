//! The `write` tool: creates or replaces a whole file, creating missing
//! parent directories. Replacement is atomic and keeps an existing file's
//! permissions (see [`super::atomic_write`]).

use std::path::Path;

use serde_json::{Value, json};

use super::{args_object, atomic_write, blocking, io_error, required_str};
use crate::tool::{BoxFuture, Tool, ToolContext, ToolOutput, ToolSpec};

pub struct WriteTool;

impl Tool for WriteTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write".into(),
            description: "Write a file, replacing it if it exists and creating missing parent \
                          directories. Prefer edit for changing part of an existing file. \
                          Relative paths resolve against the project directory."
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
}

fn write(path: &Path, content: &str) -> ToolOutput {
    if path.is_dir() {
        return ToolOutput::error(format!("{} is a directory, not a file", path.display()));
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
