//! zot's own log: `tracing` events from the agent, the extension host and
//! the binary go to `$ZOT_HOME/logs/zot.log` (mode 0600, rotated at
//! [`MAX_LOG_BYTES`] with one old file kept), never to the terminal, which
//! belongs to the TUI and the JSON/RPC streams. `ZOT_LOG` sets the level
//! (`info` by default; `debug` shows every model request, tool call and
//! extension frame, truncated), in `tracing`'s filter syntax. A release
//! build compiles `trace` events out (the workspace's `tracing` features),
//! so a `trace` asked for is read as `debug`.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use tracing::level_filters::{LevelFilter, STATIC_MAX_LEVEL};
use tracing_subscriber::EnvFilter;

/// The environment variable holding the log filter.
pub const LOG_ENV: &str = "ZOT_LOG";

/// The filter without `ZOT_LOG` (the logging part of the issue: default `info`).
pub const DEFAULT_LEVEL: &str = "info";

/// Size at which `zot.log` is rotated to `zot.log.1` (the previous `.1` is
/// dropped), so a long debug session cannot fill the disk.
pub const MAX_LOG_BYTES: u64 = 10 * 1024 * 1024;

/// `$ZOT_HOME/logs/zot.log`.
pub fn log_path(zot_home: &Path) -> PathBuf {
    zot_home.join("logs").join("zot.log")
}

/// Starts logging to `$ZOT_HOME/logs/zot.log`. A log that cannot be opened
/// (read-only home, bad filter) leaves zot running without one: logging is
/// never a reason to fail.
pub fn init(zot_home: &Path) {
    let filter = std::env::var(LOG_ENV).unwrap_or_else(|_| DEFAULT_LEVEL.to_owned());
    // Above the level compiled in, tracing-subscriber would print a warning
    // to the terminal, which is the TUI's or the JSON streams'.
    let filter = capped(&filter, STATIC_MAX_LEVEL);
    let Ok(filter) = EnvFilter::try_new(&filter) else {
        return;
    };
    let Ok(file) = RotatingFile::open(log_path(zot_home), MAX_LOG_BYTES) else {
        return;
    };
    let file = Arc::new(Mutex::new(file));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(move || Writer(Arc::clone(&file)))
        .try_init();
}

/// `filter` with every directive's level above `max` lowered to `max`:
/// `trace` and `zot_core=trace` become `debug` and `zot_core=debug` when
/// `max` is `debug`. Directives without a level, or whose level does not
/// parse, are left for `EnvFilter` to judge.
fn capped(filter: &str, max: LevelFilter) -> String {
    let directives: Vec<String> = filter
        .split(',')
        .map(|directive| {
            // The level follows the last `=` outside a span's `[...]`.
            let (target, level) = match directive.rsplit_once('=') {
                Some((target, level)) if !level.contains([']', '}']) => (Some(target), level),
                _ => (None, directive),
            };
            match level.trim().parse::<LevelFilter>() {
                Ok(level) if level > max => match target {
                    Some(target) => format!("{target}={max}"),
                    None => max.to_string(),
                },
                _ => directive.to_owned(),
            }
        })
        .collect();
    directives.join(",")
}

/// A log file that moves itself aside once it reaches its size limit.
struct RotatingFile {
    path: PathBuf,
    file: File,
    written: u64,
    limit: u64,
}

impl RotatingFile {
    fn open(path: PathBuf, limit: u64) -> io::Result<Self> {
        if let Some(dir) = path.parent() {
            zot_core::session::private_dir(dir)?;
        }
        let file = open_private(&path)?;
        let written = file.metadata()?.len();
        let mut log = Self {
            path,
            file,
            written,
            limit,
        };
        if log.written >= log.limit {
            log.rotate()?;
        }
        Ok(log)
    }

    fn rotate(&mut self) -> io::Result<()> {
        let mut old = self.path.clone().into_os_string();
        old.push(".1");
        std::fs::rename(&self.path, old)?;
        self.file = open_private(&self.path)?;
        self.written = 0;
        Ok(())
    }
}

impl Write for RotatingFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.written >= self.limit {
            self.rotate()?;
        }
        let n = self.file.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// One event's writer: the shared file, locked for the write.
struct Writer(Arc<Mutex<RotatingFile>>);

impl Write for Writer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .flush()
    }
}

fn open_private(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_above_the_compiled_in_maximum_are_lowered_to_it() {
        let debug = LevelFilter::DEBUG;
        assert_eq!(capped("trace", debug), "debug");
        assert_eq!(capped("TRACE", debug), "debug");
        assert_eq!(capped("info,zot_core=trace", debug), "info,zot_core=debug");
        assert_eq!(
            capped("hyper_util[conn{peer=x}]=trace", debug),
            "hyper_util[conn{peer=x}]=debug"
        );
        // At or below the maximum, without a level, or unreadable: unchanged.
        assert_eq!(
            capped("warn,zot_extensions=debug", debug),
            "warn,zot_extensions=debug"
        );
        assert_eq!(capped("zot_core", debug), "zot_core");
        assert_eq!(capped("zot_core=loud", debug), "zot_core=loud");
        assert_eq!(capped("trace", LevelFilter::TRACE), "trace");
        // What comes out parses, so the log still starts.
        assert!(EnvFilter::try_new(capped("info,zot_core=trace", debug)).is_ok());
    }

    #[test]
    fn the_log_rotates_at_its_limit_and_keeps_one_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("logs").join("zot.log");
        let mut log = RotatingFile::open(path.clone(), 10).unwrap();
        log.write_all(b"0123456789").unwrap();
        log.write_all(b"abc").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "abc");
        let old = dir.path().join("logs").join("zot.log.1");
        assert_eq!(std::fs::read_to_string(old).unwrap(), "0123456789");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
