//! Project trust: a repository can ship `./.zot/extensions/`, so its
//! extensions run only once the user trusts the project. Trust lives in
//! `$ZOT_HOME/trust.json`, keyed by the canonical project path and pinned to
//! a fingerprint of the project's extension manifests and the files they run;
//! any change to that content makes the project untrusted again.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::manifest::{Dialect, MANIFEST_FILE, Manifest};

/// The trust file inside `$ZOT_HOME`.
pub const TRUST_FILE: &str = "trust.json";

#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("{path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{path}: invalid trust file: {error}")]
    Invalid {
        path: PathBuf,
        error: serde_json::Error,
    },
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> TrustError + '_ {
    move |error| TrustError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// One trusted project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustEntry {
    /// `sha256:<hex>` of the project's extension content when it was trusted.
    pub fingerprint: String,
    /// RFC 3339.
    pub trusted_at: String,
}

/// Whether a project's extensions may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustStatus {
    /// Trusted, and the content is unchanged since.
    Trusted,
    /// Never trusted (or revoked).
    Untrusted,
    /// Trusted once, but its extension content changed since.
    Changed,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TrustFile {
    #[serde(default)]
    projects: BTreeMap<String, TrustEntry>,
}

/// `$ZOT_HOME/trust.json`, loaded.
#[derive(Debug)]
pub struct TrustStore {
    path: PathBuf,
    file: TrustFile,
}

impl TrustStore {
    /// Loads the store; a missing file is an empty store.
    pub fn load(zot_home: &Path) -> Result<Self, TrustError> {
        let path = zot_home.join(TRUST_FILE);
        let file = match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).map_err(|error| TrustError::Invalid {
                path: path.clone(),
                error,
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => TrustFile::default(),
            Err(e) => return Err(io_error(&path)(e)),
        };
        Ok(Self { path, file })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every trusted project, by canonical path.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &TrustEntry)> {
        self.file.projects.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The trust status of `project` (a project directory) as its content is now.
    pub fn status(&self, project: &Path) -> Result<TrustStatus, TrustError> {
        let Some(entry) = self.file.projects.get(&key(project)) else {
            return Ok(TrustStatus::Untrusted);
        };
        Ok(if entry.fingerprint == fingerprint(project)? {
            TrustStatus::Trusted
        } else {
            TrustStatus::Changed
        })
    }

    /// Trusts `project` as its content is now and saves the store.
    pub fn trust(&mut self, project: &Path) -> Result<TrustEntry, TrustError> {
        let entry = TrustEntry {
            fingerprint: fingerprint(project)?,
            trusted_at: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        };
        self.file.projects.insert(key(project), entry.clone());
        self.save()?;
        Ok(entry)
    }

    /// Forgets `project` and saves the store; returns whether it was trusted.
    pub fn revoke(&mut self, project: &Path) -> Result<bool, TrustError> {
        let removed = self.file.projects.remove(&key(project)).is_some();
        if removed {
            self.save()?;
        }
        Ok(removed)
    }

    /// Writes the store atomically (temp file in the same dir, then rename).
    fn save(&self) -> Result<(), TrustError> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(io_error(dir))?;
        let mut text =
            serde_json::to_vec_pretty(&self.file).map_err(|error| TrustError::Invalid {
                path: self.path.clone(),
                error,
            })?;
        text.push(b'\n');
        write_atomically(&self.path, &text).map_err(io_error(&self.path))
    }
}

/// Writes `path` via a temp file beside it and a rename, so a reader never
/// sees a half-written file.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn key(project: &Path) -> String {
    project
        .canonicalize()
        .unwrap_or_else(|_| project.to_path_buf())
        .display()
        .to_string()
}

/// `sha256:<hex>` over the project's extensions (`.zot/extensions` and the
/// nimlet root `.agents/extensions`): every manifest (by path and bytes) and
/// every file it runs (its `exec` or `command[0]` when that is a path, and
/// each argument naming a file in the extension directory or the project).
pub fn fingerprint(project: &Path) -> Result<String, TrustError> {
    let mut hasher = Sha256::new();
    for (root, dialect) in [
        (project.join(".zot").join("extensions"), Dialect::Zot),
        (project.join(".agents").join("extensions"), Dialect::Nimlet),
    ] {
        hasher.update(root.display().to_string().as_bytes());
        let mut dirs: Vec<PathBuf> = match std::fs::read_dir(&root) {
            Ok(entries) => entries.filter_map(Result::ok).map(|e| e.path()).collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io_error(&root)(e)),
        };
        dirs.sort();
        for dir in dirs.iter().filter(|d| d.join(MANIFEST_FILE).is_file()) {
            hash_file(&mut hasher, &root, &dir.join(MANIFEST_FILE))?;
            let Ok(manifest) = Manifest::load_in(dir, dialect) else {
                continue;
            };
            let Some((program, args)) = manifest.program(dir) else {
                continue;
            };
            if program.components().count() > 1 {
                hash_file(&mut hasher, &root, &program)?;
            }
            for arg in args {
                for file in [dir.join(arg), project.join(arg)] {
                    if file.is_file() {
                        hash_file(&mut hasher, &root, &file)?;
                    }
                }
            }
        }
    }
    let digest = hasher.finalize();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("sha256:{hex}"))
}

/// Hashes a file's path (relative to `root` where possible) and contents; a
/// missing file hashes as missing, so creating it later changes the fingerprint.
fn hash_file(hasher: &mut Sha256, root: &Path, path: &Path) -> Result<(), TrustError> {
    let shown = path.strip_prefix(root).unwrap_or(path);
    hasher.update(shown.display().to_string().as_bytes());
    hasher.update([0]);
    match std::fs::read(path) {
        Ok(bytes) => {
            hasher.update((bytes.len() as u64).to_le_bytes());
            hasher.update(&bytes);
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => hasher.update(b"<missing>"),
        Err(e) => return Err(io_error(path)(e)),
    }
    Ok(())
}
