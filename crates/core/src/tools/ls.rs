//! The `ls` tool: one directory's entries with their type and size, sorted
//! by name, capped. Hidden entries are listed too (it shows what is there,
//! where `find` and `grep` follow ripgrep's rules).

use std::fs::FileType;
use std::path::Path;

use serde_json::{Value, json};

use super::args::{args_object, optional_count, optional_str};
use super::fs::{blocking, io_error};
use super::walk;
use crate::tool::{BoxFuture, Tool, ToolContext, ToolOutput, ToolSpec};

/// Entries listed when the call names no `max_results` (pi's `ls` lists 500).
pub const DEFAULT_LS_ENTRIES: usize = 500;

/// Most entries one call lists.
pub const MAX_LS_ENTRIES: usize = 5000;

pub struct LsTool;

impl Tool for LsTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "ls".into(),
            description: format!(
                "List a directory: one entry per line as `type size name`, sorted by name; type \
                 is `d` (directory, name ends in `/`), `f` (file, size in bytes), `l` (symlink, \
                 `name -> target`) or `o` (other). Hidden entries included. At most max_results \
                 entries (default {DEFAULT_LS_ENTRIES})."
            ),
            schema: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Directory to list (default: the project directory)."},
                    "max_results": {"type": "integer", "minimum": 1, "maximum": MAX_LS_ENTRIES, "description": "Most entries to list."}
                }
            }).into(),
            read_only: true,
        }
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let parsed = args_object(&args).and_then(|obj| {
                let max = optional_count(obj, "max_results", 1, MAX_LS_ENTRIES)?
                    .unwrap_or(DEFAULT_LS_ENTRIES);
                Ok((walk::root(ctx, optional_str(obj, "path")?)?, max))
            });
            let (dir, max) = match parsed {
                Ok(parsed) => parsed,
                Err(output) => return output,
            };
            blocking(move || list(&dir, max)).await
        })
    }

    /// `call` checks every argument by the schema's rules.
    fn checks_own_arguments(&self) -> bool {
        true
    }
}

pub(crate) fn list(dir: &Path, max: usize) -> ToolOutput {
    if !dir.is_dir() {
        return ToolOutput::error(format!(
            "{} is not a directory; use read for a file",
            dir.display()
        ));
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => return io_error("list", dir, &e),
    };
    let mut names = Vec::new();
    let mut total = 0usize;
    for entry in entries.flatten() {
        total += 1;
        // Keeps only the first `max` names in order, so a huge directory
        // costs no more memory than the listing shown.
        names.push(entry.file_name());
        if names.len() > 2 * max.max(1024) {
            names.sort();
            names.truncate(max);
        }
    }
    names.sort();
    names.truncate(max);
    if total == 0 {
        return ToolOutput::text(format!("{} is empty", dir.display()));
    }
    let mut out: Vec<String> = names
        .iter()
        .map(|name| {
            let path = dir.join(name);
            let name = name.to_string_lossy();
            match std::fs::symlink_metadata(&path) {
                Ok(m) => line(&m.file_type(), m.len(), &name, &path),
                Err(_) => format!("? {:>10} {name}", "-"),
            }
        })
        .collect();
    if total > names.len() {
        out.push(format!(
            "[{} more entries; raise max_results or use find]",
            total - names.len()
        ));
    }
    ToolOutput::text(out.join("\n"))
}

fn line(file_type: &FileType, len: u64, name: &str, path: &Path) -> String {
    if file_type.is_dir() {
        format!("d {:>10} {name}/", "-")
    } else if file_type.is_file() {
        format!("f {len:>10} {name}")
    } else if file_type.is_symlink() {
        let target = std::fs::read_link(path)
            .map(|t| t.display().to_string())
            .unwrap_or_else(|_| "?".to_owned());
        format!("l {:>10} {name} -> {target}", "-")
    } else {
        format!("o {:>10} {name}", "-")
    }
}
