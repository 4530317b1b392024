//! Files zot keeps for itself: folders made private (0700) and files written
//! whole or not at all. A leaf under the session store and the checkpoint
//! store, which both keep such files.

use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Creates `dir` and its missing parents, each 0700 on Unix (an existing
/// directory keeps its mode: it may be one the user chose, like `$HOME`).
pub fn private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Writes `bytes` to `path` by a temp file in the same folder and a
/// rename, with `mode` for a new file.
pub fn write_atomically(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let tmp = temp_beside(path)?;
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        file.write_all(bytes)?;
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        file.sync_all()
    })();
    let renamed = written.and_then(|()| std::fs::rename(&tmp, path));
    if renamed.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    renamed
}

/// A temp file's name beside `path`, unique to this process and path, for a
/// write (or a symlink) renamed over `path` once whole.
pub fn temp_beside(path: &Path) -> io::Result<PathBuf> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let random = std::collections::hash_map::RandomState::new();
    let tag = std::hash::BuildHasher::hash_one(&random, path);
    Ok(path.with_file_name(format!(
        ".{}.zot-{}-{tag:016x}.tmp",
        name.to_string_lossy(),
        std::process::id()
    )))
}
