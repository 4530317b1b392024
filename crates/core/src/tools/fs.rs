//! File access the file tools share: opening only regular files, writing
//! atomically, running blocking work off the async threads and turning I/O
//! errors into tool errors that name the path.

use std::fs::{File, FileType, Metadata};
use std::io::{self, Write as _};
use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use crate::tool::ToolOutput;

/// 16 hex digits that differ between calls and processes. Not
/// cryptographic: it only has to make name collisions unlikely, and every
/// file created with it uses `create_new`, so a collision fails safely.
pub(super) fn random_hex() -> String {
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
pub(super) fn special_kind(file_type: &FileType) -> Option<&'static str> {
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
pub(super) fn not_regular(tool: &str, path: &Path, kind: &str) -> ToolOutput {
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
pub(super) fn open_regular(
    tool: &str,
    path: &Path,
) -> io::Result<Result<(File, Metadata), ToolOutput>> {
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
pub(super) fn atomic_write(path: &Path, bytes: &[u8]) -> io::Result<()> {
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
pub(super) fn write_in_place(path: &Path, bytes: &[u8]) -> io::Result<()> {
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
pub(super) fn resolve_symlink(path: &Path) -> PathBuf {
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
pub(super) async fn blocking<F>(f: F) -> ToolOutput
where
    F: FnOnce() -> ToolOutput + Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(output) => output,
        Err(e) => ToolOutput::error(format!("internal error: {e}")),
    }
}

/// The error text for an I/O failure on `path`, naming the path.
pub(super) fn io_error(action: &str, path: &Path, err: &io::Error) -> ToolOutput {
    match err.kind() {
        io::ErrorKind::NotFound => ToolOutput::error(format!("file not found: {}", path.display())),
        io::ErrorKind::PermissionDenied => ToolOutput::error(format!(
            "permission denied: cannot {action} {}",
            path.display()
        )),
        _ => ToolOutput::error(format!("cannot {action} {}: {err}", path.display())),
    }
}
