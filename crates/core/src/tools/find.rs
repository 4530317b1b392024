//! The `find` tool: paths matching a glob, newest first, by ripgrep's
//! walking rules (`ignore` + `globset`), so ignored and hidden files stay
//! out as they do for `grep`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkState;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::args::{args_object, optional_count, optional_str, required_str};
use super::walk;
use crate::tool::{BoxFuture, Tool, ToolContext, ToolOutput, ToolSpec};

/// Paths returned when the call names no `max_results`.
pub const DEFAULT_FIND_RESULTS: usize = 200;

/// Most paths one call returns (pi's `find` returns up to 1000).
pub const MAX_FIND_RESULTS: usize = 1000;

pub struct FindTool;

impl Tool for FindTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "find".into(),
            description: format!(
                "Find files and directories whose path matches a glob, newest first. A pattern \
                 without `/` matches names anywhere (`*.rs`, `Cargo.toml`); with `/` it matches the \
                 path from the search directory (`src/**/*.ts`). Skips what .gitignore and \
                 .ignore name and hidden files, like ripgrep. Directories end in `/`. At most \
                 max_results paths (default {DEFAULT_FIND_RESULTS}, at most {MAX_FIND_RESULTS})."
            ),
            schema: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Glob to match, e.g. `*.rs` or `src/**/test_*.py`."},
                    "path": {"type": "string", "description": "Directory to search (default: the project directory)."},
                    "max_results": {"type": "integer", "minimum": 1, "maximum": MAX_FIND_RESULTS, "description": "Most paths to return."}
                },
                "required": ["pattern"]
            }).into(),
            read_only: true,
        }
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(walk::search::<Query>(args, ctx))
    }

    /// `Query::parse` checks every argument by the schema's rules.
    fn checks_own_arguments(&self) -> bool {
        true
    }
}

struct Query {
    root: PathBuf,
    glob: GlobMatcher,
    /// Match the name only (the pattern has no `/`).
    by_name: bool,
    max_results: usize,
}

/// The newest `max` paths seen so far, and how many matched in all.
struct Newest {
    max: usize,
    heap: BinaryHeap<Reverse<(SystemTime, PathBuf, bool)>>,
    total: usize,
}

impl Newest {
    fn add(&mut self, modified: SystemTime, path: PathBuf, is_dir: bool) {
        self.total += 1;
        self.heap.push(Reverse((modified, path, is_dir)));
        if self.heap.len() > self.max {
            self.heap.pop();
        }
    }
}

impl Query {
    fn matches(&self, path: &Path) -> bool {
        if self.by_name {
            path.file_name()
                .is_some_and(|name| self.glob.is_match(name))
        } else {
            path.strip_prefix(&self.root)
                .is_ok_and(|rel| self.glob.is_match(rel))
        }
    }
}

impl walk::Search for Query {
    fn parse(args: &Value, ctx: &ToolContext) -> Result<Self, ToolOutput> {
        let obj = args_object(args)?;
        let pattern = required_str(obj, "pattern")?;
        let max_results = optional_count(obj, "max_results", 1, MAX_FIND_RESULTS)?
            .unwrap_or(DEFAULT_FIND_RESULTS);
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| ToolOutput::error(format!("invalid glob {pattern:?}: {e}")))?
            .compile_matcher();
        let root = walk::root(ctx, optional_str(obj, "path")?)?;
        if !root.is_dir() {
            return Err(ToolOutput::error(format!(
                "{} is not a directory; find searches directories",
                root.display()
            )));
        }
        Ok(Self {
            root,
            glob,
            by_name: !pattern.contains('/'),
            max_results,
        })
    }

    fn run(self, cwd: &Path, cancel: &CancellationToken) -> ToolOutput {
        let newest = Arc::new(Mutex::new(Newest {
            max: self.max_results,
            heap: BinaryHeap::new(),
            total: 0,
        }));
        ignore::WalkBuilder::new(&self.root)
            .build_parallel()
            .run(|| {
                let newest = Arc::clone(&newest);
                let cancel = cancel.clone();
                let query = &self;
                Box::new(move |entry| {
                    if cancel.is_cancelled() {
                        return WalkState::Quit;
                    }
                    let Ok(entry) = entry else {
                        return WalkState::Continue;
                    };
                    if entry.depth() == 0 || !query.matches(entry.path()) {
                        return WalkState::Continue;
                    }
                    let metadata = entry.metadata().ok();
                    let modified = metadata
                        .as_ref()
                        .and_then(|m| m.modified().ok())
                        .unwrap_or(SystemTime::UNIX_EPOCH);
                    let is_dir = metadata.is_some_and(|m| m.is_dir());
                    newest.lock().unwrap_or_else(PoisonError::into_inner).add(
                        modified,
                        entry.into_path(),
                        is_dir,
                    );
                    WalkState::Continue
                })
            });
        if cancel.is_cancelled() {
            return ToolOutput::error("aborted");
        }
        let newest = std::mem::replace(
            &mut *newest.lock().unwrap_or_else(PoisonError::into_inner),
            Newest {
                max: 0,
                heap: BinaryHeap::new(),
                total: 0,
            },
        );
        if newest.total == 0 {
            return ToolOutput::text(format!(
                "no paths match in {}",
                walk::display(cwd, &self.root)
            ));
        }
        let total = newest.total;
        // Newest first; equal times by path.
        let mut found: Vec<_> = newest.heap.into_iter().map(|Reverse(item)| item).collect();
        found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let mut out: Vec<String> = found
            .iter()
            .map(|(_, path, is_dir)| {
                let shown = walk::display(cwd, path);
                if *is_dir { format!("{shown}/") } else { shown }
            })
            .collect();
        if total > found.len() {
            out.push(format!(
                "[{} more paths; narrow the pattern or path, or raise max_results]",
                total - found.len()
            ));
        }
        ToolOutput::text(out.join("\n"))
    }
}
