//! Putting files back: each one written to a temp file beside it and
//! renamed over it, so a crash mid-restore leaves every file either as it
//! was or as restored, never half written. Only paths inside the project
//! are touched, never through a symlinked folder.

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::error::CheckpointError;
use super::git::{Git, safe_relative};
use crate::private_files::{temp_beside, write_atomically};

/// A file's state in a snapshot, as git records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Stored {
    /// Git's mode: `100644`, `100755` or `120000` (a symlink).
    pub(super) mode: String,
    pub(super) blob: String,
}

/// One step of a restore.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Step {
    Write { path: String, stored: Stored },
    Delete { path: String },
}

impl Step {
    pub(super) fn path(&self) -> &str {
        match self {
            Self::Write { path, .. } | Self::Delete { path } => path,
        }
    }
}

/// Whether `relative` lies inside `root` through real folders only: a
/// folder replaced by a symlink could lead a write outside the project.
fn inside(root: &Path, relative: &str) -> bool {
    if !safe_relative(relative) {
        return false;
    }
    let mut at = root.to_path_buf();
    let parts: Vec<&str> = relative.split('/').collect();
    for part in &parts[..parts.len().saturating_sub(1)] {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => return false,
            _ => {}
        }
    }
    true
}

/// Carries out `steps` under `root`, reading contents from `git`. A step
/// whose path is unsafe is refused before anything is written.
pub(super) fn apply(git: &Git, root: &Path, steps: &[Step]) -> Result<(), CheckpointError> {
    if let Some(bad) = steps.iter().find(|s| !inside(root, s.path())) {
        return Err(CheckpointError::Unsafe(bad.path().to_owned()));
    }
    let fault = fault_after();
    for (done, step) in steps.iter().enumerate() {
        if fault == Some(done) {
            // The test-only crash: the files before this one are restored,
            // the rest untouched.
            std::process::exit(FAULT_EXIT);
        }
        let target = root.join(step.path());
        match step {
            Step::Write { stored, .. } => write_stored(git, &target, stored)?,
            Step::Delete { .. } => {
                match std::fs::remove_file(&target) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(CheckpointError::io(&target, e)),
                }
                remove_empty_parents(root, &target);
            }
        }
    }
    Ok(())
}

fn write_stored(git: &Git, target: &Path, stored: &Stored) -> Result<(), CheckpointError> {
    let bytes = git.output(&["cat-file", "blob", &stored.blob])?;
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent).map_err(|e| CheckpointError::io(parent, e))?;
    }
    if stored.mode == "120000" {
        let link = std::ffi::OsStr::from_bytes(&bytes);
        let tmp = temp_beside(target).map_err(|e| CheckpointError::io(target, e))?;
        std::os::unix::fs::symlink(link, &tmp)
            .and_then(|()| std::fs::rename(&tmp, target))
            .map_err(|e| {
                let _ = std::fs::remove_file(&tmp);
                CheckpointError::io(target, e)
            })?;
        return Ok(());
    }
    let existing = std::fs::symlink_metadata(target)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.permissions().mode() & 0o777);
    let mut mode = existing.unwrap_or(0o644);
    if stored.mode == "100755" {
        mode |= (mode & 0o444) >> 2;
    } else {
        mode &= !0o111;
    }
    write_atomically(target, &bytes, mode).map_err(|e| CheckpointError::io(target, e))
}

use std::os::unix::ffi::OsStrExt;

/// Removes the folders a deletion left empty, up to (not including) `root`.
fn remove_empty_parents(root: &Path, file: &Path) {
    let mut at = file.parent();
    while let Some(dir) = at {
        if dir == root || !dir.starts_with(root) || std::fs::remove_dir(dir).is_err() {
            break;
        }
        at = dir.parent();
    }
}

/// How a restore ends at the test-only fault point.
pub const FAULT_EXIT: i32 = 86;

/// The test-only fault point: debug builds read
/// `ZOT_TEST_RESTORE_FAULT=N` and exit after the first N files of a
/// restore, as a crash would; release builds never read it.
fn fault_after() -> Option<usize> {
    #[cfg(debug_assertions)]
    {
        std::env::var("ZOT_TEST_RESTORE_FAULT")
            .ok()
            .and_then(|v| v.parse().ok())
    }
    #[cfg(not(debug_assertions))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_atomic_write_replaces_the_file_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        std::fs::write(&path, "old").unwrap();
        write_atomically(&path, b"new", 0o600).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn paths_outside_the_project_or_through_symlinks_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        assert!(inside(dir.path(), "src/a.rs"));
        assert!(!inside(dir.path(), "../x"));
        assert!(!inside(dir.path(), "/etc/passwd"));
        assert!(!inside(dir.path(), "link/x"));
        assert!(!inside(dir.path(), ".git/config"));
    }
}
