//! The per-extension log, `$ZOT_HOME/logs/ext-<name>.log`: the extension's
//! stderr (a pipe the host copies from, see `transport::stdio`) and the
//! host's own diagnostics about that extension as `[zot] …` lines.
//!
//! The log is rotated at a size limit: when it is opened, and before any
//! write that would take it past the limit, it becomes `ext-<name>.log.1`
//! (replacing an older one) and a new log is started. So the two files
//! together stay within twice the limit while the extension runs, however
//! much it writes (40 MB of stderr had left a 41.9 MB log when the child
//! wrote to the file itself).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

#[cfg(doc)]
use crate::limits::MAX_LOG_BYTES;

#[derive(Debug)]
pub struct ExtLog {
    path: PathBuf,
    max_bytes: u64,
    file: Mutex<File>,
}

/// `ext-<name>.log.1`: the one older log kept.
pub fn rotated_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".1");
    path.with_file_name(name)
}

impl ExtLog {
    /// Opens (appending) the log, first rotating it when it has reached
    /// `max_bytes` (`Limits::max_log_bytes`, [`MAX_LOG_BYTES`] by default),
    /// and writes the start marker line.
    pub fn open(
        path: &Path,
        name: &str,
        version: Option<&str>,
        max_bytes: u64,
    ) -> io::Result<Self> {
        if let Some(dir) = path.parent() {
            // Logs can hold what extensions print about the user's code: only the user reads them.
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
        }
        if std::fs::metadata(path).is_ok_and(|m| m.len() >= max_bytes) {
            std::fs::rename(path, rotated_path(path))?;
        }
        let mut file = append(path)?;
        let now = humantime::format_rfc3339_seconds(SystemTime::now());
        writeln!(
            file,
            "\n[zot] starting {name}/{} at {now}",
            version.unwrap_or("")
        )?;
        Ok(Self {
            path: path.to_path_buf(),
            max_bytes,
            file: Mutex::new(file),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends what the extension wrote to its stderr, first rotating a
    /// log these bytes would take past the limit. Logging never fails the
    /// caller.
    pub fn stderr(&self, bytes: &[u8]) {
        if let Ok(mut file) = self.file.lock() {
            self.make_room(&mut file, bytes.len());
            let _ = file.write_all(bytes);
        }
    }

    /// Appends one host diagnostic line, first rotating a log it would take
    /// past the limit. Logging never fails the caller.
    pub fn line(&self, message: impl std::fmt::Display) {
        if let Ok(mut file) = self.file.lock() {
            let line = format!("[zot] {message}\n");
            self.make_room(&mut file, line.len());
            let _ = file.write_all(line.as_bytes());
        }
    }

    /// Rotates the log when `incoming` more bytes would take it past the
    /// limit.
    fn make_room(&self, file: &mut File, incoming: usize) {
        let len = file.metadata().map_or(0, |m| m.len());
        if len + incoming as u64 > self.max_bytes
            && len > 0
            && std::fs::rename(&self.path, rotated_path(&self.path)).is_ok()
            && let Ok(fresh) = append(&self.path)
        {
            *file = fresh;
            let older = rotated_path(&self.path);
            let _ = writeln!(
                file,
                "[zot] log rotated; the older part is in {}",
                older.display()
            );
        }
    }
}

fn append(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_log_is_rotated_when_opened_and_when_the_host_writes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("logs").join("ext-big.log");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "x".repeat(400)).unwrap();

        // At open: the old log becomes .1, the new one starts small.
        let log = ExtLog::open(&path, "big", Some("1"), 300).unwrap();
        assert_eq!(
            std::fs::read_to_string(rotated_path(&path)).unwrap(),
            "x".repeat(400)
        );
        let fresh = std::fs::read_to_string(&path).unwrap();
        assert!(fresh.contains("[zot] starting big/1"), "{fresh}");
        assert!(fresh.len() < 50);

        // The child's stderr fills it; the host's next line would take it
        // past the limit, so it is rotated first; only one old file is kept.
        log.stderr(&[b'y'; 250]);
        log.line("after the flood");
        let old = std::fs::read_to_string(rotated_path(&path)).unwrap();
        assert!(
            old.contains("starting big/1") && old.contains(&"y".repeat(250)),
            "{old}"
        );
        let now = std::fs::read_to_string(&path).unwrap();
        assert!(
            now.contains("log rotated") && now.ends_with("[zot] after the flood\n"),
            "{now}"
        );
        assert!(!dir.path().join("logs").join("ext-big.log.2").exists());
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "a new log is the user's alone");

        // Under the limit nothing moves.
        log.line("small");
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .ends_with("[zot] small\n")
        );
    }
}
