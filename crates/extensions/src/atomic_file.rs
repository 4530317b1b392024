//! Writing a file whole or not at all: a temp file beside it, then a
//! rename. A leaf that the trust store, ecosystems' config, management and the
//! binary's config commands all build on.

use std::io::Write;
use std::path::Path;

/// Writes `path` via a temp file beside it and a rename, so a reader never
/// sees a half-written file. A file that exists keeps its permissions; a
/// new one is readable by the user alone (0600).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).map_or(0o600, |m| m.permissions().mode() & 0o7777);
    write_with_mode(path, bytes, mode)
}

/// [`write_atomically`] for secrets: the file is readable by the user alone
/// (0600) whatever its mode was.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_with_mode(path, bytes, 0o600)
}

/// [`write_atomically`] with the file's permissions set to `mode`.
pub(crate) fn write_with_mode(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let _ = std::fs::remove_file(&tmp);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
