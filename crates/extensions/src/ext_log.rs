//! The per-extension log, `$ZOT_HOME/logs/ext-<name>.log`: the extension's
//! stderr goes straight into it (the child writes to the file itself, so
//! nothing is lost and the host copies nothing), and the host appends its
//! own diagnostics about that extension as `[zot] …` lines.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

#[derive(Debug)]
pub(crate) struct ExtLog {
    path: PathBuf,
    file: Mutex<File>,
}

impl ExtLog {
    /// Opens (appending) the log and writes the start marker line.
    pub(crate) fn open(path: &Path, name: &str, version: Option<&str>) -> io::Result<Self> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut file = OpenOptions::new().create(true).append(true).open(path)?;
        let now = humantime::format_rfc3339_seconds(SystemTime::now());
        writeln!(
            file,
            "\n[zot] starting {name}/{} at {now}",
            version.unwrap_or("")
        )?;
        Ok(Self {
            path: path.to_path_buf(),
            file: Mutex::new(file),
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// A second handle on the file, to become the child's stderr.
    pub(crate) fn stderr_handle(&self) -> io::Result<File> {
        self.file
            .lock()
            .map_err(|_| io::Error::other("log lock poisoned"))?
            .try_clone()
    }

    /// Appends one host diagnostic line. Logging never fails the caller.
    pub(crate) fn line(&self, message: impl std::fmt::Display) {
        if let Ok(mut file) = self.file.lock() {
            let _ = writeln!(file, "[zot] {message}");
        }
    }
}
