//! The `read` tool: a text file's lines (bounded so one call cannot flood
//! the context) or an image file as an image block. Owns the read limits and
//! the truncation footers that tell the model how to continue.

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use base64::Engine as _;
use serde_json::{Value, json};

use super::args::{args_object, optional_positive_int, required_str};
use super::fs::{blocking, io_error, open_regular, special_kind};
use crate::message::Block;
use crate::tool::{BoxFuture, Tool, ToolContext, ToolOutput, ToolSpec};

/// Most bytes of text one call returns, counted from the first requested
/// line; keeps a single read from eating a large share of the context.
pub const MAX_READ_BYTES: usize = 51_200;

/// Most lines one call returns, whatever `limit` asks for.
pub const MAX_READ_LINES: usize = 2000;

/// How much of the file's start is checked for a NUL byte, the cheap and
/// usual sign of a binary file that would only be noise as text.
pub const BINARY_SNIFF_BYTES: usize = 8192;

/// Largest image returned: the cap on images the user attaches.
pub use crate::image::MAX_IMAGE_BYTES;

pub struct ReadTool;

impl Tool for ReadTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read".into(),
            description: format!(
                "Read a file. Text files return their lines: at most {MAX_READ_LINES} lines or \
                 {MAX_READ_BYTES} bytes per call, with a footer saying which offset to use to \
                 read more. png, jpg, jpeg, gif and webp files are returned as images. Relative \
                 paths resolve against the project directory."
            ),
            schema: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File to read."},
                    "offset": {"type": "integer", "minimum": 1, "description": "First line to return (1-based)."},
                    "limit": {"type": "integer", "minimum": 1, "description": "Most lines to return."}
                },
                "required": ["path"]
            }).into(),
            read_only: true,
        }
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let (path, offset, limit) = match parse_args(&args) {
                Ok(parsed) => parsed,
                Err(output) => return output,
            };
            let path = ctx.resolve(&path);
            blocking(move || read(&path, offset, limit)).await
        })
    }

    /// `call` parses the arguments field by field, by the schema's rules.
    fn checks_own_arguments(&self) -> bool {
        true
    }
}

fn parse_args(args: &Value) -> Result<(String, usize, Option<usize>), ToolOutput> {
    let obj = args_object(args)?;
    let path = required_str(obj, "path")?.to_owned();
    let to_usize = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
    let offset = optional_positive_int(obj, "offset")?.map_or(1, to_usize);
    let limit = optional_positive_int(obj, "limit")?.map(to_usize);
    Ok((path, offset, limit))
}

fn read(path: &Path, offset: usize, limit: Option<usize>) -> ToolOutput {
    let metadata = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => return io_error("read", path, &e),
    };
    if metadata.is_dir() {
        return ToolOutput::error(format!(
            "{} is a directory, not a file; use bash (ls) to list it",
            path.display()
        ));
    }
    // A FIFO would block the read until a writer comes, a device may
    // never end: only regular files are read.
    if let Some(kind) = special_kind(&metadata.file_type()) {
        return super::fs::not_regular("read", path, kind);
    }
    match image_mime_type(path) {
        Some(mime_type) => read_image(path, mime_type, metadata.len()),
        None => read_text(path, offset, limit),
    }
}

fn image_mime_type(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    match ext.as_str() {
        "png" => Some("image/png"),
        "jpg" | "jpeg" => Some("image/jpeg"),
        "gif" => Some("image/gif"),
        "webp" => Some("image/webp"),
        _ => None,
    }
}

fn read_image(path: &Path, mime_type: &str, len: u64) -> ToolOutput {
    if len > MAX_IMAGE_BYTES {
        return ToolOutput::error(format!(
            "{} is {len} bytes; images over {MAX_IMAGE_BYTES} bytes are not sent to the model",
            path.display()
        ));
    }
    let file = match open_regular("read", path) {
        Ok(Ok((file, _))) => file,
        Ok(Err(output)) => return output,
        Err(e) => return io_error("read", path, &e),
    };
    let mut bytes = Vec::new();
    match file.take(MAX_IMAGE_BYTES + 1).read_to_end(&mut bytes) {
        // It grew since it was measured.
        Ok(_) if bytes.len() as u64 > MAX_IMAGE_BYTES => {
            read_image(path, mime_type, bytes.len() as u64)
        }
        Ok(_) => ToolOutput {
            content: vec![Block::Image {
                mime_type: mime_type.to_owned(),
                data: base64::engine::general_purpose::STANDARD.encode(bytes),
            }],
            is_error: false,
        },
        Err(e) => io_error("read", path, &e),
    }
}

fn read_text(path: &Path, offset: usize, limit: Option<usize>) -> ToolOutput {
    let window = match read_window(path, offset) {
        Ok(Ok(window)) => window,
        Ok(Err(output)) => return output,
        Err(e) => return io_error("read", path, &e),
    };
    if window.bytes.is_empty() {
        return ToolOutput::text("(empty file)");
    }

    // A window cut by the byte cap ends mid-line; only whole lines are
    // shown so the suggested offset continues exactly where this stops.
    // A single line longer than the cap is shown cut, as there is no line
    // boundary to stop at.
    let (shown, partial_line) = if window.more_bytes {
        match window.bytes.iter().rposition(|&b| b == b'\n') {
            Some(i) => (&window.bytes[..=i], false),
            None => (&window.bytes[..utf8_prefix_len(&window.bytes)], true),
        }
    } else {
        (&window.bytes[..], false)
    };
    let text = String::from_utf8_lossy(shown);
    let body = text.strip_suffix('\n').unwrap_or(&text);
    let lines: Vec<&str> = body.split('\n').collect();

    let max_lines = limit.map_or(MAX_READ_LINES, |l| l.min(MAX_READ_LINES));
    let taken = lines.len().min(max_lines);
    let mut out = lines[..taken].join("\n");
    let next = offset.saturating_add(taken);
    let footer = if partial_line {
        Some(format!(
            "... [truncated at {MAX_READ_BYTES} bytes in the middle of line {offset}, which is \
             longer than that]"
        ))
    } else if taken == lines.len() && !window.more_bytes {
        None
    } else if limit.is_some_and(|l| taken == l) {
        Some(format!(
            "... [stopped at limit of {taken} lines; use offset={next} to read more]"
        ))
    } else if taken == MAX_READ_LINES {
        Some(format!(
            "... [truncated at {MAX_READ_LINES} lines; use offset={next} to read more]"
        ))
    } else {
        Some(format!(
            "... [truncated at {MAX_READ_BYTES} bytes; use offset={next} to read more]"
        ))
    };
    if let Some(footer) = footer {
        out.push('\n');
        out.push_str(&footer);
    }
    ToolOutput::text(out)
}

/// Up to [`MAX_READ_BYTES`] of the file starting at line `offset`.
struct Window {
    bytes: Vec<u8>,
    /// The file goes on past `bytes`.
    more_bytes: bool,
}

/// The inner `Err` is a tool error for the model (binary file, offset past
/// the end); the outer one an I/O failure.
fn read_window(path: &Path, offset: usize) -> std::io::Result<Result<Window, ToolOutput>> {
    let mut file = match open_regular("read", path)? {
        Ok((file, _)) => file,
        Err(output) => return Ok(Err(output)),
    };
    let mut sniff = Vec::with_capacity(BINARY_SNIFF_BYTES);
    (&mut file)
        .take(BINARY_SNIFF_BYTES as u64)
        .read_to_end(&mut sniff)?;
    if sniff.contains(&0) {
        return Ok(Err(ToolOutput::error(format!(
            "{} looks binary (NUL byte in the first {BINARY_SNIFF_BYTES} bytes); read returns \
             text files and png/jpg/gif/webp images only",
            path.display()
        ))));
    }
    file.seek(SeekFrom::Start(0))?;
    let mut reader = BufReader::new(file);

    // Skipping streams through the buffer without keeping lines, so an
    // offset deep into a huge file costs no memory.
    let mut skipped = 0usize;
    let mut tail_after_newline = false;
    while skipped < offset - 1 {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let mut consumed = buf.len();
        for (i, &b) in buf.iter().enumerate() {
            if b == b'\n' {
                skipped += 1;
                if skipped == offset - 1 {
                    consumed = i + 1;
                    break;
                }
            }
        }
        tail_after_newline = buf[..consumed].last().is_some_and(|&b| b != b'\n');
        reader.consume(consumed);
    }

    let mut bytes = Vec::new();
    reader
        .by_ref()
        .take(MAX_READ_BYTES as u64 + 1)
        .read_to_end(&mut bytes)?;
    if bytes.is_empty() && offset > 1 {
        let total = skipped + usize::from(tail_after_newline);
        return Ok(Err(ToolOutput::error(format!(
            "offset {offset} is past the end of {} ({total} lines)",
            path.display()
        ))));
    }
    let more_bytes = bytes.len() > MAX_READ_BYTES;
    bytes.truncate(MAX_READ_BYTES);
    Ok(Ok(Window { bytes, more_bytes }))
}

/// The length of `bytes` without a UTF-8 sequence cut off at its end, so a
/// cut never shows up as a replacement character.
fn utf8_prefix_len(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        Err(_) => {
            // Invalid bytes somewhere (not UTF-8 text): only trim a possibly
            // cut sequence at the very end.
            let start = bytes.len().saturating_sub(3);
            (start..bytes.len())
                .rev()
                .find(|&i| bytes[i] >= 0xC0)
                .filter(|&i| std::str::from_utf8(&bytes[i..]).is_err())
                .unwrap_or(bytes.len())
        }
    }
}
