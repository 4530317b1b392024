//! What the search tools (grep, find) share: one directory walk with
//! ripgrep's rules (`.gitignore` inside a git repository, `.ignore`,
//! `.rgignore`, global git excludes, hidden files skipped), and how a found
//! path is shown to the model.

use std::path::{Path, PathBuf};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::tool::{ToolContext, ToolOutput};

/// A search tool's call: arguments parsed (and checked) first, then the
/// walk, off the async threads.
pub(crate) trait Search: Sized + Send + 'static {
    /// The tool error for arguments it cannot take.
    fn parse(args: &Value, ctx: &ToolContext) -> Result<Self, ToolOutput>;
    /// Searches, stopping early once `cancel` is cancelled.
    fn run(self, cwd: &Path, cancel: &CancellationToken) -> ToolOutput;
}

/// Runs one call of the search `S`.
pub(crate) async fn search<S: Search>(args: Value, ctx: &ToolContext) -> ToolOutput {
    let query = match S::parse(&args, ctx) {
        Ok(query) => query,
        Err(output) => return output,
    };
    let cwd = ctx.cwd.clone();
    let cancel = ctx.cancel.clone();
    super::fs::blocking(move || query.run(&cwd, &cancel)).await
}

/// The search root named by the optional `path` argument (the project
/// directory without one), checked to exist.
pub(crate) fn root(ctx: &ToolContext, path: Option<&str>) -> Result<PathBuf, ToolOutput> {
    let root = path.map_or_else(|| ctx.cwd.clone(), |p| ctx.resolve(p));
    match std::fs::metadata(&root) {
        Ok(_) => Ok(root),
        Err(e) => Err(super::fs::io_error("search", &root, &e)),
    }
}

/// How `path` is shown: relative to the project directory when inside it
/// (shorter, and what the model passes back to `read`), else as it is.
pub(crate) fn display(cwd: &Path, path: &Path) -> String {
    match path.strip_prefix(cwd) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => path.display().to_string(),
    }
}
