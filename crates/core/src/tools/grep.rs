//! The `grep` tool: a regex search of files with ripgrep's own crates
//! (`ignore` walks in parallel by `rg`'s rules, `grep-searcher` reads, skips
//! binary files and gives context lines, `grep-regex` matches). Results come
//! in path order, capped, with how much more there was.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::WalkState;
use ignore::overrides::OverrideBuilder;
use ignore::types::TypesBuilder;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::args::{args_object, optional_bool, optional_count, optional_str, required_str};
use super::walk;
use crate::tool::{BoxFuture, Tool, ToolContext, ToolOutput, ToolSpec};

/// Matching lines returned when the call names no `max_results` (opencode,
/// pi and codex all return 100).
pub const DEFAULT_GREP_RESULTS: usize = 100;

/// Most matching lines one call returns, whatever `max_results` asks (codex's
/// `grep_files` limit).
pub const MAX_GREP_RESULTS: usize = 2000;

/// Most context lines around a match.
pub const MAX_GREP_CONTEXT: usize = 20;

/// A line longer than this many characters is cut (minified files would
/// otherwise fill the result with one line).
pub const MAX_LINE_CHARS: usize = 500;

pub struct GrepTool;

impl Tool for GrepTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "grep".into(),
            description: format!(
                "Search file contents with a regular expression (Rust regex syntax), like ripgrep: \
                 files and directories named in .gitignore and .ignore are skipped, and so are \
                 hidden and binary files. Results are `path:line: text` lines in path order \
                 (context lines `path-line- text`); at most max_results matches \
                 (default {DEFAULT_GREP_RESULTS}, at most {MAX_GREP_RESULTS}), then how many more \
                 there were. Use this instead of running grep or rg through bash."
            ),
            schema: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Regular expression to search for."},
                    "path": {"type": "string", "description": "File or directory to search (default: the project directory)."},
                    "glob": {"type": "string", "description": "Only files whose path matches this glob, e.g. `*.rs` or `src/**/*.ts`; `!*.min.js` excludes."},
                    "type": {"type": "string", "description": "Only files of this ripgrep type, e.g. `rust`, `py`, `js`, `md`."},
                    "case_insensitive": {"type": "boolean", "description": "Match regardless of case."},
                    "context": {"type": "integer", "minimum": 0, "maximum": MAX_GREP_CONTEXT, "description": "Lines of context before and after each match."},
                    "max_results": {"type": "integer", "minimum": 1, "maximum": MAX_GREP_RESULTS, "description": "Most matching lines to return."}
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

/// A parsed, ready search.
struct Query {
    root: PathBuf,
    matcher: RegexMatcher,
    glob: Option<String>,
    file_type: Option<String>,
    context: usize,
    max_results: usize,
}

impl walk::Search for Query {
    fn parse(args: &Value, ctx: &ToolContext) -> Result<Self, ToolOutput> {
        let obj = args_object(args)?;
        let pattern = required_str(obj, "pattern")?;
        let case_insensitive = optional_bool(obj, "case_insensitive")?.unwrap_or(false);
        let context = optional_count(obj, "context", 0, MAX_GREP_CONTEXT)?.unwrap_or(0);
        let max_results = optional_count(obj, "max_results", 1, MAX_GREP_RESULTS)?
            .unwrap_or(DEFAULT_GREP_RESULTS);
        let glob = optional_str(obj, "glob")?.map(str::to_owned);
        let file_type = optional_str(obj, "type")?.map(str::to_owned);
        let matcher = RegexMatcherBuilder::new()
            .case_insensitive(case_insensitive)
            .line_terminator(Some(b'\n'))
            .build(pattern)
            .map_err(|e| ToolOutput::error(format!("invalid regular expression: {e}")))?;
        let root = walk::root(ctx, optional_str(obj, "path")?)?;
        Ok(Self {
            root,
            matcher,
            glob,
            file_type,
            context,
            max_results,
        })
    }

    fn run(self, cwd: &Path, cancel: &CancellationToken) -> ToolOutput {
        let overrides = match &self.glob {
            Some(glob) => {
                let mut builder = OverrideBuilder::new(&self.root);
                match builder.add(glob).and_then(|b| b.build()) {
                    Ok(overrides) => Some(overrides),
                    Err(e) => return ToolOutput::error(format!("invalid glob {glob:?}: {e}")),
                }
            }
            None => None,
        };
        let mut walker = ignore::WalkBuilder::new(&self.root);
        if let Some(overrides) = overrides {
            walker.overrides(overrides);
        }
        if let Some(name) = &self.file_type {
            let mut types = TypesBuilder::new();
            types.add_defaults();
            types.select(name);
            match types.build() {
                Ok(types) => {
                    walker.types(types);
                }
                Err(e) => {
                    return ToolOutput::error(format!(
                        "{e}; use a ripgrep type name such as rust, py, js, ts, go, c, cpp, java, md"
                    ));
                }
            }
        }
        let hits = Arc::new(Mutex::new(Hits::new(self.max_results)));
        walker.build_parallel().run(|| {
            let hits = Arc::clone(&hits);
            let matcher = self.matcher.clone();
            let mut searcher = SearcherBuilder::new()
                .binary_detection(BinaryDetection::quit(b'\0'))
                .line_number(true)
                .before_context(self.context)
                .after_context(self.context)
                .build();
            let cancel = cancel.clone();
            Box::new(move |entry| {
                if cancel.is_cancelled() {
                    return WalkState::Quit;
                }
                let Ok(entry) = entry else {
                    return WalkState::Continue;
                };
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    return WalkState::Continue;
                }
                let mut sink = FileSink::default();
                match searcher.search_path(&matcher, entry.path(), &mut sink) {
                    Ok(()) if sink.binary || sink.matches == 0 => {}
                    Ok(()) => hits
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .add(entry.into_path(), sink),
                    Err(_) => {
                        hits.lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .unreadable += 1;
                    }
                }
                WalkState::Continue
            })
        });
        if cancel.is_cancelled() {
            return ToolOutput::error("aborted");
        }
        let hits = std::mem::replace(
            &mut *hits.lock().unwrap_or_else(PoisonError::into_inner),
            Hits::new(0),
        );
        hits.render(cwd, &self.root)
    }
}

/// One line a file search reported.
struct Line {
    number: u64,
    text: String,
    is_match: bool,
    /// A gap (non-adjacent context) comes before this line.
    after_break: bool,
}

/// What one file's search found.
#[derive(Default)]
struct FileSink {
    lines: Vec<Line>,
    matches: usize,
    binary: bool,
    pending_break: bool,
}

impl FileSink {
    fn push(&mut self, number: Option<u64>, bytes: &[u8], is_match: bool) {
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim_end_matches(['\n', '\r']);
        let text = match text.char_indices().nth(MAX_LINE_CHARS) {
            Some((cut, _)) => format!("{}… [line cut at {MAX_LINE_CHARS} chars]", &text[..cut]),
            None => text.to_owned(),
        };
        self.lines.push(Line {
            number: number.unwrap_or(0),
            text,
            is_match,
            after_break: std::mem::take(&mut self.pending_break),
        });
    }
}

impl Sink for &mut FileSink {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.matches += 1;
        self.push(mat.line_number(), mat.bytes(), true);
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, Self::Error> {
        self.push(ctx.line_number(), ctx.bytes(), false);
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, Self::Error> {
        self.pending_break = true;
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _offset: u64) -> Result<bool, Self::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// The files with matches, in path order, holding only what the first
/// `max_results` matches need: a file after enough matches in earlier
/// paths is dropped (its counts kept), so memory stays bounded however
/// many files match.
struct Hits {
    max_results: usize,
    files: BTreeMap<PathBuf, FileSink>,
    /// Matches in `files`.
    kept: usize,
    /// Matches and files seen in total, dropped ones included.
    matches: usize,
    matched_files: usize,
    unreadable: usize,
}

impl Hits {
    fn new(max_results: usize) -> Self {
        Self {
            max_results,
            files: BTreeMap::new(),
            kept: 0,
            matches: 0,
            matched_files: 0,
            unreadable: 0,
        }
    }

    fn add(&mut self, path: PathBuf, sink: FileSink) {
        self.matches += sink.matches;
        self.matched_files += 1;
        self.kept += sink.matches;
        self.files.insert(path, sink);
        while let Some(entry) = self.files.last_entry() {
            let last = entry.get().matches;
            if self.kept - last < self.max_results {
                break;
            }
            self.kept -= last;
            entry.remove();
        }
    }

    fn render(self, cwd: &Path, root: &Path) -> ToolOutput {
        if self.matches == 0 {
            let mut text = format!("no matches in {}", walk::display(cwd, root));
            if self.unreadable > 0 {
                text.push_str(&format!(" ({} files could not be read)", self.unreadable));
            }
            return ToolOutput::text(text);
        }
        let mut out = String::new();
        let mut shown = 0;
        // Files whose matches were all shown.
        let mut done_files = 0;
        for (index, (path, file)) in self.files.iter().enumerate() {
            if shown == self.max_results {
                break;
            }
            let name = walk::display(cwd, path);
            if index > 0 && file.lines.iter().any(|l| !l.is_match) {
                out.push_str("--\n");
            }
            let mut shown_here = 0;
            for line in &file.lines {
                if line.is_match && shown == self.max_results {
                    break;
                }
                if line.after_break {
                    out.push_str("--\n");
                }
                let sep = if line.is_match { ':' } else { '-' };
                out.push_str(&format!("{name}{sep}{}{sep} {}\n", line.number, line.text));
                shown_here += usize::from(line.is_match);
                shown += usize::from(line.is_match);
            }
            done_files += usize::from(shown_here == file.matches);
        }
        let more = self.matches - shown;
        if more > 0 {
            let files = self.matched_files - done_files;
            out.push_str(&format!(
                "[{more} more matches in {files} files; narrow the search (path, glob, type) or \
                 raise max_results]\n"
            ));
        }
        if self.unreadable > 0 {
            out.push_str(&format!("[{} files could not be read]\n", self.unreadable));
        }
        ToolOutput::text(out.trim_end().to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sink(matches: usize) -> FileSink {
        let mut sink = FileSink::default();
        for i in 0..matches {
            sink.push(Some(i as u64 + 1), b"hit\n", true);
            sink.matches += 1;
        }
        sink
    }

    #[test]
    fn keeps_only_what_the_first_results_need_in_path_order() {
        let mut hits = Hits::new(3);
        for (name, n) in [("d", 5), ("b", 1), ("e", 1), ("a", 1), ("c", 4)] {
            hits.add(PathBuf::from(format!("/r/{name}")), sink(n));
        }
        // a (1) + b (1) + c (4) cover three results: d and e are dropped.
        let kept: Vec<_> = hits.files.keys().map(|p| p.display().to_string()).collect();
        assert_eq!(kept, ["/r/a", "/r/b", "/r/c"]);
        let text = hits.render(Path::new("/r"), Path::new("/r"));
        let ToolOutput { content, .. } = text;
        let crate::message::Block::Text { text } = &content[0] else {
            panic!("{content:?}")
        };
        assert_eq!(
            text,
            "a:1: hit\nb:1: hit\nc:1: hit\n[9 more matches in 3 files; narrow the search (path, \
             glob, type) or raise max_results]"
        );
    }
}
