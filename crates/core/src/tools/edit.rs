//! The `edit` tool: exact-text replacements in an existing file, all
//! checked against the original before any is applied, written atomically.
//! Owns line-ending and BOM preservation and the diff shown as the result.

use std::io::Read as _;
use std::ops::Range;
use std::path::Path;

use serde_json::{Map, Value, json};

use super::args::{args_object, required_str};
use super::fs::{atomic_write, blocking, io_error, open_regular};
use crate::tool::{BoxFuture, Tool, ToolContext, ToolOutput, ToolSpec};

/// Largest file edit reads, and largest it writes: edit holds the file a
/// few times over in memory (original, line-normalised copy, result), so a
/// multi-GB file would take several GB. Bigger files are for bash (sed).
pub const MAX_EDIT_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// Unchanged lines shown before and after each change in the result diff.
pub const DIFF_CONTEXT_LINES: usize = 3;

/// Most diff lines in the result; the model wrote the new text itself, so a
/// long diff mostly repeats it back.
pub const MAX_DIFF_LINES: usize = 200;

const BOM: &str = "\u{FEFF}";

pub struct EditTool;

impl Tool for EditTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "edit".into(),
            description: "Edit a file by exact text replacement. Each oldText must occur exactly \
                          once in the current file (include enough surrounding lines to make it \
                          unique); edits must not overlap and are applied together or not at \
                          all. Line endings and a byte-order mark are preserved. Regular files \
                          of at most 16 MiB. Returns a diff."
                .into(),
            schema: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File to edit."},
                    "edits": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "properties": {
                                "oldText": {"type": "string", "description": "Exact text to replace; must be unique in the file."},
                                "newText": {"type": "string", "description": "Replacement text."}
                            },
                            "required": ["oldText", "newText"]
                        }
                    }
                },
                "required": ["path", "edits"]
            }).into(),
            read_only: false,
        }
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let (path, edits) = match parse_args(&args) {
                Ok(parsed) => parsed,
                Err(output) => return output,
            };
            let path = ctx.resolve(&path);
            blocking(move || edit(&path, &edits)).await
        })
    }

    /// `call` parses the arguments field by field, by the schema's rules.
    fn checks_own_arguments(&self) -> bool {
        true
    }

    /// The diff the edits would make, or why they would fail.
    fn approval_preview(&self, args: &Value, cwd: &Path) -> Option<String> {
        let (path, edits) = parse_args(args).ok()?;
        let path = crate::tool::ToolContext::new(cwd).resolve(&path);
        Some(match planned(&path, &edits) {
            Ok(plan) => format!("--- {0}\n+++ {0}\n{1}", path.display(), plan.diff),
            Err(failure) => format!(
                "(this edit would fail)\n{}",
                crate::message::text_of(&failure.content)
            ),
        })
    }
}

struct Edit {
    old: String,
    new: String,
}

fn parse_args(args: &Value) -> Result<(String, Vec<Edit>), ToolOutput> {
    let obj = args_object(args)?;
    let path = required_str(obj, "path")?.to_owned();
    let items = match obj.get("edits") {
        None | Some(Value::Null) => {
            return Err(ToolOutput::error("missing required argument `edits`"));
        }
        Some(Value::Array(items)) if !items.is_empty() => items,
        Some(Value::Array(_)) => {
            return Err(ToolOutput::error("argument `edits` must not be empty"));
        }
        Some(_) => {
            return Err(ToolOutput::error(
                "argument `edits` must be an array of {oldText, newText} objects",
            ));
        }
    };
    let mut edits = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let n = i + 1;
        let Some(item) = item.as_object() else {
            return Err(ToolOutput::error(format!(
                "edit {n}: must be an object with oldText and newText"
            )));
        };
        edits.push(Edit {
            old: edit_field(item, n, "oldText")?,
            new: edit_field(item, n, "newText")?,
        });
    }
    Ok((path, edits))
}

fn edit_field(item: &Map<String, Value>, n: usize, key: &str) -> Result<String, ToolOutput> {
    match item.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        None | Some(Value::Null) => Err(ToolOutput::error(format!("edit {n}: missing {key}"))),
        Some(_) => Err(ToolOutput::error(format!(
            "edit {n}: {key} must be a string"
        ))),
    }
}

fn edit(path: &Path, edits: &[Edit]) -> ToolOutput {
    let plan = match planned(path, edits) {
        Ok(plan) => plan,
        Err(failure) => return failure,
    };
    if let Err(e) = atomic_write(path, plan.bytes.as_bytes()) {
        return io_error("write", path, &e);
    }
    let plural = if plan.count == 1 { "" } else { "s" };
    ToolOutput::text(format!(
        "applied {} edit{plural} to {}\n--- {1}\n+++ {1}\n{}",
        plan.count,
        path.display(),
        plan.diff
    ))
}

/// What a set of edits makes of a file: its new bytes, the diff, how many.
struct Plan {
    bytes: String,
    diff: String,
    count: usize,
}

/// Reads `path` and applies `edits` in memory; the error is the result the
/// model gets when they cannot all apply.
fn planned(path: &Path, edits: &[Edit]) -> Result<Plan, ToolOutput> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => {
            return Err(ToolOutput::error(format!(
                "{} is a directory, not a file",
                path.display()
            )));
        }
        Ok(_) => {}
        Err(e) => return Err(io_error("edit", path, &e)),
    }
    let (file, metadata) = match open_regular("edit", path) {
        Ok(Ok(opened)) => opened,
        Ok(Err(output)) => return Err(output),
        Err(e) => return Err(io_error("read", path, &e)),
    };
    if metadata.len() > MAX_EDIT_FILE_BYTES {
        return Err(too_big(path, metadata.len()));
    }
    let mut raw = Vec::with_capacity(metadata.len() as usize);
    // One byte over the limit tells a file that grew since it was measured.
    if let Err(e) = file.take(MAX_EDIT_FILE_BYTES + 1).read_to_end(&mut raw) {
        return Err(io_error("read", path, &e));
    }
    if raw.len() as u64 > MAX_EDIT_FILE_BYTES {
        return Err(too_big(path, raw.len() as u64));
    }
    let Ok(text) = String::from_utf8(raw) else {
        return Err(ToolOutput::error(format!(
            "{} is not UTF-8 text; edit only changes text files",
            path.display()
        )));
    };
    let (bom, body) = match text.strip_prefix(BOM) {
        Some(rest) => (BOM, rest),
        None => ("", text.as_str()),
    };
    let file = Normalised::new(body);

    let mut spans: Vec<(usize, Range<usize>, String)> = Vec::with_capacity(edits.len());
    let mut errors = Vec::new();
    for (i, e) in edits.iter().enumerate() {
        let n = i + 1;
        // The model sees LF text (read output, its own writes), so its
        // texts are matched and inserted in that form.
        let old = e.old.replace("\r\n", "\n");
        let new = e.new.replace("\r\n", "\n");
        if old.is_empty() {
            errors.push(format!("edit {n}: oldText is empty"));
        } else if old == new {
            errors.push(format!("edit {n}: oldText equals newText"));
        } else {
            match find_all(&file.text, &old) {
                (0, _) => errors.push(format!("edit {n}: oldText not found")),
                (1, Some(start)) => spans.push((n, start..start + old.len(), new)),
                (k, _) => errors.push(format!(
                    "edit {n}: oldText matches {k} times; include more surrounding text to make \
                     it unique"
                )),
            }
        }
    }
    if errors.is_empty() {
        spans.sort_by_key(|(_, span, _)| span.start);
        for pair in spans.windows(2) {
            let ((a, first, _), (b, second, _)) = (&pair[0], &pair[1]);
            if second.start < first.end {
                let (a, b) = (a.min(b), a.max(b));
                errors.push(format!(
                    "edits {a} and {b} overlap; combine them into one edit"
                ));
            }
        }
    }
    if !errors.is_empty() {
        errors.push(format!(
            "no edits were applied; {} is unchanged",
            path.display()
        ));
        return Err(ToolOutput::error(errors.join("\n")));
    }

    let eol = file.dominant_eol();
    let mut new_body = String::with_capacity(body.len());
    let mut new_norm = String::with_capacity(file.text.len());
    let mut changes = Vec::with_capacity(spans.len());
    let (mut body_at, mut norm_at) = (0, 0);
    for (_, span, new) in &spans {
        let (start, end) = (
            file.original_offset(span.start),
            file.original_offset(span.end),
        );
        new_body.push_str(&body[body_at..start]);
        new_body.push_str(&if eol == "\n" {
            new.clone()
        } else {
            new.replace('\n', eol)
        });
        body_at = end;

        new_norm.push_str(&file.text[norm_at..span.start]);
        let new_start = new_norm.len();
        new_norm.push_str(new);
        changes.push((span.clone(), new_start..new_norm.len()));
        norm_at = span.end;
    }
    new_body.push_str(&body[body_at..]);
    new_norm.push_str(&file.text[norm_at..]);

    let mut bytes = String::with_capacity(bom.len() + new_body.len());
    bytes.push_str(bom);
    bytes.push_str(&new_body);
    if bytes.len() as u64 > MAX_EDIT_FILE_BYTES {
        return Err(ToolOutput::error(format!(
            "the edits would make {} {} bytes; edit writes files of at most \
             {MAX_EDIT_FILE_BYTES} bytes (16 MiB); no edits were applied",
            path.display(),
            bytes.len()
        )));
    }
    Ok(Plan {
        bytes,
        diff: unified_diff(&file.text, &new_norm, &changes),
        count: spans.len(),
    })
}

fn too_big(path: &Path, len: u64) -> ToolOutput {
    ToolOutput::error(format!(
        "{} is {len} bytes; edit works on files of at most {MAX_EDIT_FILE_BYTES} bytes \
         (16 MiB); use bash (sed, patch) for bigger files",
        path.display()
    ))
}

/// The file's text with CRLF turned into LF, plus where the dropped CRs
/// were, so positions found in the LF text map back to the original bytes.
/// Mapping back (rather than converting the whole file) leaves every line
/// outside the edited spans byte-for-byte as it was, even in mixed files.
struct Normalised {
    text: String,
    /// Positions in `text` of the LFs that had a CR before them, ascending.
    crlf_at: Vec<usize>,
}

impl Normalised {
    fn new(original: &str) -> Self {
        let mut text = String::with_capacity(original.len());
        let mut crlf_at = Vec::new();
        let mut rest = original;
        while let Some(i) = rest.find("\r\n") {
            text.push_str(&rest[..i]);
            crlf_at.push(text.len());
            text.push('\n');
            rest = &rest[i + 2..];
        }
        text.push_str(rest);
        Self { text, crlf_at }
    }

    fn original_offset(&self, at: usize) -> usize {
        at + self.crlf_at.partition_point(|&lf| lf < at)
    }

    /// The line ending new text gets: CRLF when most lines use it.
    fn dominant_eol(&self) -> &'static str {
        let lf_total = self.text.bytes().filter(|&b| b == b'\n').count();
        if self.crlf_at.len() * 2 > lf_total {
            "\r\n"
        } else {
            "\n"
        }
    }
}

/// How often `needle` occurs in `haystack`, overlapping matches included
/// (an edit "aa" in "aaa" is ambiguous), and where it first does.
fn find_all(haystack: &str, needle: &str) -> (usize, Option<usize>) {
    let step = needle.chars().next().map_or(1, char::len_utf8);
    let (mut count, mut first, mut from) = (0, None, 0);
    while let Some(i) = haystack.get(from..).and_then(|rest| rest.find(needle)) {
        let at = from + i;
        first.get_or_insert(at);
        count += 1;
        from = at + step;
    }
    (count, first)
}

/// Changed lines: a range of old lines replaced by a range of new lines.
struct Change {
    old: Range<usize>,
    new: Range<usize>,
}

/// A unified-style diff of `old` -> `new`, given the byte spans that were
/// replaced (old span, new span), ascending. The spans already say what
/// changed, so no general diff algorithm is needed.
fn unified_diff(old: &str, new: &str, spans: &[(Range<usize>, Range<usize>)]) -> String {
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let line_of = |text: &str, at: usize| {
        text.as_bytes()[..at]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
    };

    let mut changes: Vec<Change> = Vec::new();
    for (o, n) in spans {
        let o0 = line_of(old, o.start);
        let o1 = (line_of(old, o.end) + 1).min(old_lines.len()).max(o0);
        let n0 = line_of(new, n.start);
        let n1 = (line_of(new, n.end) + 1).min(new_lines.len()).max(n0);
        // Two edits on one line form one change.
        match changes.last_mut() {
            Some(last) if o0 < last.old.end => {
                last.old.end = last.old.end.max(o1);
                last.new.end = last.new.end.max(n1);
            }
            _ => changes.push(Change {
                old: o0..o1,
                new: n0..n1,
            }),
        }
    }
    for c in &mut changes {
        while c.old.start < c.old.end
            && c.new.start < c.new.end
            && old_lines[c.old.start] == new_lines[c.new.start]
        {
            c.old.start += 1;
            c.new.start += 1;
        }
        while c.old.start < c.old.end
            && c.new.start < c.new.end
            && old_lines[c.old.end - 1] == new_lines[c.new.end - 1]
        {
            c.old.end -= 1;
            c.new.end -= 1;
        }
    }
    changes.retain(|c| !c.old.is_empty() || !c.new.is_empty());

    let mut out: Vec<String> = Vec::new();
    let ctx = DIFF_CONTEXT_LINES;
    let mut i = 0;
    while i < changes.len() {
        let mut j = i;
        while j + 1 < changes.len() && changes[j + 1].old.start <= changes[j].old.end + 2 * ctx {
            j += 1;
        }
        let (first, last) = (&changes[i], &changes[j]);
        let old_start = first.old.start.saturating_sub(ctx);
        let new_start = first.new.start.saturating_sub(first.old.start - old_start);
        let old_end = (last.old.end + ctx).min(old_lines.len());
        let new_end = last.new.end + (old_end - last.old.end);
        out.push(format!(
            "@@ -{},{} +{},{} @@",
            old_start + 1,
            old_end - old_start,
            new_start + 1,
            new_end - new_start
        ));
        let mut at = old_start;
        for c in &changes[i..=j] {
            out.extend(
                old_lines[at..c.old.start]
                    .iter()
                    .map(|l| format!(" {}", trim_eol(l))),
            );
            out.extend(
                old_lines[c.old.clone()]
                    .iter()
                    .map(|l| format!("-{}", trim_eol(l))),
            );
            out.extend(
                new_lines[c.new.clone()]
                    .iter()
                    .map(|l| format!("+{}", trim_eol(l))),
            );
            at = c.old.end;
        }
        out.extend(
            old_lines[at..old_end]
                .iter()
                .map(|l| format!(" {}", trim_eol(l))),
        );
        i = j + 1;
    }
    if out.len() > MAX_DIFF_LINES {
        let hidden = out.len() - MAX_DIFF_LINES;
        out.truncate(MAX_DIFF_LINES);
        out.push(format!("... [diff truncated; {hidden} more lines]"));
    }
    out.join("\n")
}

fn trim_eol(line: &str) -> &str {
    line.strip_suffix('\n').unwrap_or(line)
}
