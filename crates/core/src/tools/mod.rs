//! Built-in tools: read, write, edit, bash, grep, find, ls, web_fetch, todo_write.
//! Also owns what they share: argument checking that turns bad arguments
//! into tool errors, opening only regular files, atomic file replacement
//! (in place for hard-linked files), and random file-name suffixes.

pub(crate) mod bash;
mod edit;
mod find;
mod grep;
mod ls;
pub mod output;
mod read;
pub mod todo;
mod walk;
pub mod web_fetch;
mod write;

use std::fs::{File, FileType, Metadata};
use std::io::{self, Write as _};
use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::tool::{Tool, ToolOutput};

pub use bash::{
    BashTool, DEFAULT_TIMEOUT as BASH_DEFAULT_TIMEOUT, MAX_TIMEOUT_SECS as BASH_MAX_TIMEOUT_SECS,
};
pub use edit::{EditTool, MAX_EDIT_FILE_BYTES};
pub use find::FindTool;
pub use grep::GrepTool;
/// What `@dir` and `@file` in a prompt reuse (`prompt_files`).
pub(crate) use ls::list as list_dir;
pub use ls::{DEFAULT_LS_ENTRIES, LsTool};
pub(crate) use read::BINARY_SNIFF_BYTES;
pub use read::ReadTool;
pub use todo::TodoWriteTool;
pub use web_fetch::WebFetchTool;
pub use write::{MAX_WRITE_BYTES, WriteTool};
pub use zot_sandbox::{BashSandbox, SandboxMode};

/// The names of zot's own tools (the list lives in `zot-protocol`, which the
/// extension host shares; core's tests hold it equal to what `builtin` gives).
pub use zot_protocol::ui::BUILTIN_TOOLS as BUILTIN_TOOL_NAMES;

/// The built-in tools, in the order the model sees them; `todo_write`
/// keeps its plan in `plan`; `web_fetch` reaches private addresses only
/// with `allow_private`.
pub fn builtin(plan: todo::Plan, allow_private: bool) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(ReadTool),
        Arc::new(WriteTool),
        Arc::new(EditTool),
        Arc::new(BashTool),
        Arc::new(GrepTool),
        Arc::new(FindTool),
        Arc::new(LsTool),
        Arc::new(WebFetchTool::new(allow_private)),
        Arc::new(TodoWriteTool::new(plan)),
    ]
}

/// The arguments as an object, or the tool error the model should see.
fn args_object(args: &Value) -> Result<&Map<String, Value>, ToolOutput> {
    args.as_object().ok_or_else(|| {
        ToolOutput::error(format!(
            "arguments must be a JSON object, got {}",
            type_name(args)
        ))
    })
}

fn required_str<'a>(obj: &'a Map<String, Value>, key: &str) -> Result<&'a str, ToolOutput> {
    match obj.get(key) {
        None | Some(Value::Null) => Err(ToolOutput::error(format!(
            "missing required argument `{key}`"
        ))),
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(ToolOutput::error(format!(
            "argument `{key}` must be a string, got {}",
            type_name(other)
        ))),
    }
}

/// An optional integer that must be at least 1; `null` counts as absent
/// because some models send explicit nulls for optional fields.
fn optional_positive_int(obj: &Map<String, Value>, key: &str) -> Result<Option<u64>, ToolOutput> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(v) if v >= 1 => Ok(Some(v)),
            _ => Err(ToolOutput::error(format!(
                "argument `{key}` must be a positive integer, got {n}"
            ))),
        },
        Some(other) => Err(ToolOutput::error(format!(
            "argument `{key}` must be a positive integer, got {}",
            type_name(other)
        ))),
    }
}

/// An optional string; `null` counts as absent.
fn optional_str<'a>(obj: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, ToolOutput> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(ToolOutput::error(format!(
            "argument `{key}` must be a string, got {}",
            type_name(other)
        ))),
    }
}

/// An optional boolean; `null` counts as absent.
fn optional_bool(obj: &Map<String, Value>, key: &str) -> Result<Option<bool>, ToolOutput> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(ToolOutput::error(format!(
            "argument `{key}` must be a boolean, got {}",
            type_name(other)
        ))),
    }
}

/// An optional integer in `min..=max`; `null` counts as absent.
fn optional_count(
    obj: &Map<String, Value>,
    key: &str,
    min: usize,
    max: usize,
) -> Result<Option<usize>, ToolOutput> {
    let out_of_range = |got: &dyn std::fmt::Display| {
        ToolOutput::error(format!(
            "argument `{key}` must be an integer from {min} to {max}, got {got}"
        ))
    };
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_u64().and_then(|v| usize::try_from(v).ok()) {
            Some(v) if (min..=max).contains(&v) => Ok(Some(v)),
            _ => Err(out_of_range(n)),
        },
        Some(other) => Err(out_of_range(&type_name(other))),
    }
}

/// `a boolean`, `an object`…, for messages about a wrong JSON type.
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// 16 hex digits that differ between calls and processes. Not
/// cryptographic: it only has to make name collisions unlikely, and every
/// file created with it uses `create_new`, so a collision fails safely.
fn random_hex() -> String {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{SystemTime, UNIX_EPOCH};

    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u32(std::process::id());
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    hasher.write_u128(nanos);
    format!("{:016x}", hasher.finish())
}

/// What a file that is not a regular file is, for error messages; `None`
/// for a regular file.
fn special_kind(file_type: &FileType) -> Option<&'static str> {
    if file_type.is_file() {
        None
    } else if file_type.is_dir() {
        Some("a directory")
    } else if file_type.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if file_type.is_socket() {
        Some("a socket")
    } else if file_type.is_char_device() {
        Some("a character device")
    } else if file_type.is_block_device() {
        Some("a block device")
    } else {
        Some("not a regular file")
    }
}

/// The tool error for `path` being `kind` (from [`special_kind`]).
fn not_regular(tool: &str, path: &Path, kind: &str) -> ToolOutput {
    ToolOutput::error(format!(
        "{} is {kind}, not a regular file; {tool} only works on regular files",
        path.display()
    ))
}

/// Opens `path` for reading if it is a regular file (symlinks followed).
/// A FIFO, socket or device is refused before it is opened, and the
/// opened file is checked again: opening does not block (`O_NONBLOCK`, a
/// no-op for regular files), so a FIFO swapped in between cannot hang the
/// tool. The inner `Err` is the tool error for a file that is not regular.
fn open_regular(tool: &str, path: &Path) -> io::Result<Result<(File, Metadata), ToolOutput>> {
    let metadata = std::fs::metadata(path)?;
    if let Some(kind) = special_kind(&metadata.file_type()) {
        return Ok(Err(not_regular(tool, path, kind)));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)?;
    let metadata = file.metadata()?;
    if let Some(kind) = special_kind(&metadata.file_type()) {
        return Ok(Err(not_regular(tool, path, kind)));
    }
    Ok(Ok((file, metadata)))
}

/// Replaces `path` with `bytes` so that readers (and a crash) see either the
/// old content or the new one, never a mix: the bytes go to a temp file in
/// the same directory (a rename across file systems is not atomic), are
/// synced, and the temp file is renamed over the target. An existing file
/// keeps its permission bits; a symlink is followed so the link survives.
/// A file with more than one hard link is written in place instead (a
/// rename would split it from its other names), without that atomicity.
/// A target that exists but is not a regular file (FIFO, device, socket,
/// directory) is refused with `InvalidInput`.
fn atomic_write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let target = resolve_symlink(path);
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = target
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    let existing = std::fs::metadata(&target).ok();
    if let Some(kind) = existing.as_ref().and_then(|m| special_kind(&m.file_type())) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("it is {kind}, not a regular file"),
        ));
    }
    if existing.as_ref().is_some_and(|m| m.nlink() > 1) {
        return write_in_place(&target, bytes);
    }
    let existing_permissions = existing.map(|m| m.permissions());

    let (tmp_path, mut file) = {
        let mut attempt = 0;
        loop {
            let tmp_name = format!(".{}.zot-{}.tmp", name.to_string_lossy(), random_hex());
            let tmp_path = dir.join(tmp_name);
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp_path)
            {
                Ok(file) => break (tmp_path, file),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 8 => attempt += 1,
                Err(e) => return Err(e),
            }
        }
    };

    let result = (|| {
        file.write_all(bytes)?;
        if let Some(permissions) = existing_permissions {
            file.set_permissions(permissions)?;
        }
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp_path, &target)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp_path);
        return result;
    }
    // Makes the rename itself durable; failure here loses nothing already
    // visible, so it is not worth failing the write over.
    if let Ok(dir) = std::fs::File::open(&dir) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// Overwrites the file at `path` (which exists) through its inode, so every
/// hard link to it sees the new content: new bytes from the start, then the
/// length cut to theirs, then a sync.
fn write_in_place(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)?;
    if let Some(kind) = special_kind(&file.metadata()?.file_type()) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("it is {kind}, not a regular file"),
        ));
    }
    file.write_all(bytes)?;
    file.set_len(bytes.len() as u64)?;
    file.sync_all()
}

/// Where a write to `path` should land: the final target when `path` is a
/// symlink (renaming over the link would replace it with a plain file),
/// otherwise `path` itself (also for dangling links, which cannot be followed).
fn resolve_symlink(path: &Path) -> PathBuf {
    let is_link = std::fs::symlink_metadata(path).map(|m| m.file_type().is_symlink());
    if matches!(is_link, Ok(true))
        && let Ok(target) = std::fs::canonicalize(path)
    {
        return target;
    }
    path.to_path_buf()
}

/// Runs blocking file work off the async threads; a panic in it (which
/// would be a bug) still becomes a tool error rather than tearing down the turn.
async fn blocking<F>(f: F) -> ToolOutput
where
    F: FnOnce() -> ToolOutput + Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(output) => output,
        Err(e) => ToolOutput::error(format!("internal error: {e}")),
    }
}

/// The error text for an I/O failure on `path`, naming the path.
fn io_error(action: &str, path: &Path, err: &io::Error) -> ToolOutput {
    match err.kind() {
        io::ErrorKind::NotFound => ToolOutput::error(format!("file not found: {}", path.display())),
        io::ErrorKind::PermissionDenied => ToolOutput::error(format!(
            "permission denied: cannot {action} {}",
            path.display()
        )),
        _ => ToolOutput::error(format!("cannot {action} {}: {err}", path.display())),
    }
}
