//! Project trust: a repository can ship `./.zot/extensions/` (and nimlet's
//! `./.agents/extensions/`), so its extensions run only once the user trusts
//! the project. Trust lives in `$ZOT_HOME/trust.json`, keyed by the
//! canonical project path and pinned to a hash of every file of those roots
//! (see [`snapshot`]); any change to one of them makes the project untrusted
//! again, and the store says which files were added, removed or changed.
//!
//! Hashing is kept cheap by a stat cache beside the store
//! (`$ZOT_HOME/trust-cache.json`): a file whose device, inode, size, mtime
//! and ctime are unchanged keeps its hash without being read again.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::atomic_file::write_with_mode;
use crate::manifest::{Dialect, MANIFEST_FILE, Manifest};

/// The trust file inside `$ZOT_HOME`.
pub const TRUST_FILE: &str = "trust.json";

/// The stat cache beside the trust file.
pub const TRUST_CACHE_FILE: &str = "trust-cache.json";

/// The project inputs that can run code and are therefore gated by trust,
/// relative to the project, each with the protocol its manifests default to.
/// `docs/trust.md` keeps the table of them.
pub const GATED_ROOTS: &[(&str, Dialect)] = &[
    (".zot/extensions", Dialect::Zot),
    (".agents/extensions", Dialect::Nimlet),
];

/// Single project files that can run code or redirect credentials, pinned
/// whole (with the project files they name to run): the installed
/// ecosystems' config files. `docs/trust.md` keeps the table of them.
pub fn gated_files() -> Vec<&'static str> {
    crate::ecosystem::gated_files()
        .into_iter()
        .map(|(_, file)| file)
        .collect()
}

/// Project folders that are gated by trust without being extensions:
/// Markdown commands (their `` !`cmd` `` runs a shell) and every skill folder
/// of `zot_protocol::layout::PROJECT_SKILL_ROOTS` (loaded only in a trusted
/// project: skills ship scripts for the model to run). Every file below
/// them is pinned. `docs/trust.md` keeps the table of them.
pub const GATED_FILE_ROOTS: &[&str] = &[
    zot_protocol::layout::COMMANDS_DIR,
    zot_protocol::layout::ZOT_SKILLS,
    zot_protocol::layout::AGENTS_SKILLS,
    zot_protocol::layout::CLAUDE_SKILLS,
];

/// A file whose mtime or ctime is this close to the moment it was hashed
/// may still change within the file system's timestamp granularity without
/// its stat changing, so its hash is not cached ("racily clean", as git says).
const RACY: Duration = Duration::from_secs(2);

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
    /// `sha256:<hex>` over every pinned file (path and hash), for display.
    pub fingerprint: String,
    /// RFC 3339.
    pub trusted_at: String,
    /// Each pinned file (relative to the project, `/`-separated) and its
    /// hash. `None` in an entry written before files were pinned one by
    /// one: such an entry no longer counts as trust.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<BTreeMap<String, String>>,
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
    /// Trusted by an older zot that kept one hash for the whole project;
    /// the format was upgraded to per-file hashes and one re-trust is needed.
    Outdated,
}

/// How a pinned file differs from when the project was trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ChangeKind {
    Added,
    Removed,
    Changed,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "added",
            Self::Removed => "removed",
            Self::Changed => "changed",
        }
    }
}

/// One file that differs since the project was trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub kind: ChangeKind,
    /// Relative to the project, `/`-separated.
    pub path: String,
}

impl std::fmt::Display for FileChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.kind.as_str(), self.path)
    }
}

/// A project's trust status with the files behind it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustCheck {
    pub status: TrustStatus,
    /// For [`TrustStatus::Changed`]: every file added, removed or changed
    /// since the project was trusted, by path.
    pub changes: Vec<FileChange>,
}

impl TrustCheck {
    /// Why project extensions do not run, in one line (empty when trusted).
    pub fn reason(&self) -> String {
        match self.status {
            TrustStatus::Trusted => String::new(),
            TrustStatus::Untrusted => "this project is not trusted".to_owned(),
            TrustStatus::Outdated => "the trust file format was upgraded (zot now pins every \
                 file of the project's extensions); trust this project once more"
                .to_owned(),
            TrustStatus::Changed => {
                let shown: Vec<String> =
                    self.changes.iter().take(3).map(|c| c.to_string()).collect();
                let more = match self.changes.len().saturating_sub(shown.len()) {
                    0 => String::new(),
                    n => format!(", and {n} more (see `zot trust --list`)"),
                };
                format!(
                    "their content changed since this project was trusted: {}{more}",
                    shown.join(", ")
                )
            }
        }
    }
}

/// What [`TrustStore::repin`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repin {
    /// The project is not trusted (or not in the current format): nothing to update.
    NotTrusted,
    /// The fingerprint now covers the new content.
    Repinned,
    /// Files outside the ones zot wrote changed too; trust was left as it
    /// was, so the project now counts as changed. These are those files.
    Foreign(Vec<FileChange>),
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
    cache_path: PathBuf,
    file: TrustFile,
    /// See [`RACY`]; shorter in tests.
    racy: Duration,
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
        Ok(Self {
            path,
            cache_path: zot_home.join(TRUST_CACHE_FILE),
            file,
            racy: RACY,
        })
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
        Ok(self.check(project)?.status)
    }

    /// The trust status of `project` and, when its content changed, which
    /// files did. Hashes nothing for a project that is not trusted.
    pub fn check(&self, project: &Path) -> Result<TrustCheck, TrustError> {
        let status = |status| TrustCheck {
            status,
            changes: Vec::new(),
        };
        let Some(entry) = self.file.projects.get(&key(project)) else {
            return Ok(status(TrustStatus::Untrusted));
        };
        let Some(pinned) = &entry.files else {
            return Ok(status(TrustStatus::Outdated));
        };
        let changes = diff(pinned, &self.current(project));
        Ok(TrustCheck {
            status: if changes.is_empty() {
                TrustStatus::Trusted
            } else {
                TrustStatus::Changed
            },
            changes,
        })
    }

    /// Trusts `project` as its content is now and saves the store.
    pub fn trust(&mut self, project: &Path) -> Result<TrustEntry, TrustError> {
        let files = self.current(project);
        let entry = TrustEntry {
            fingerprint: combined(&files),
            trusted_at: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
            files: Some(files),
        };
        self.file.projects.insert(key(project), entry.clone());
        self.save()?;
        Ok(entry)
    }

    /// After zot itself wrote `written` (files or directories in the
    /// project: a manifest it enabled, an extension it installed or
    /// removed), pins the new content of a trusted project, so zot's own
    /// writes do not revoke trust. Changes to any other file since the last
    /// trust leave the entry alone ([`Repin::Foreign`]).
    pub fn repin(&mut self, project: &Path, written: &[PathBuf]) -> Result<Repin, TrustError> {
        let key = key(project);
        let Some(pinned) = self
            .file
            .projects
            .get(&key)
            .and_then(|entry| entry.files.as_ref())
        else {
            return Ok(Repin::NotTrusted);
        };
        let files = self.current(project);
        let allowed: Vec<String> = written.iter().flat_map(|w| relative(project, w)).collect();
        let foreign: Vec<FileChange> = diff(pinned, &files)
            .into_iter()
            .filter(|c| !allowed.iter().any(|a| under(&c.path, a)))
            .collect();
        if !foreign.is_empty() {
            return Ok(Repin::Foreign(foreign));
        }
        if let Some(entry) = self.file.projects.get_mut(&key) {
            entry.fingerprint = combined(&files);
            entry.files = Some(files);
        }
        self.save()?;
        Ok(Repin::Repinned)
    }

    /// Forgets `project` and saves the store; returns whether it was trusted.
    pub fn revoke(&mut self, project: &Path) -> Result<bool, TrustError> {
        let removed = self.file.projects.remove(&key(project)).is_some();
        if removed {
            self.save()?;
        }
        Ok(removed)
    }

    /// The project's pinned files as they are now, through the stat cache
    /// (which is updated; a cache that cannot be read or written only costs time).
    fn current(&self, project: &Path) -> BTreeMap<String, String> {
        self.current_watched(project).0
    }

    /// The project's pinned files as they are now, and what a quick
    /// re-check of them stats ([`Watched`]).
    pub fn current_watched(&self, project: &Path) -> (BTreeMap<String, String>, Watched) {
        let mut cache = StatCache::load(&self.cache_path);
        let project_key = key(project);
        let old = cache.projects.remove(&project_key).unwrap_or_default();
        let mut hasher = Hasher {
            old: &old,
            new: BTreeMap::new(),
            now: SystemTime::now(),
            racy: self.racy,
            seen: Vec::new(),
        };
        let files = snapshot_with(project, &mut hasher);
        let watched = Watched::of(project, hasher.seen);
        let fresh = hasher.new;
        if fresh != old {
            if !fresh.is_empty() {
                cache.projects.insert(project_key, fresh);
            }
            // Projects that are gone keep no entries.
            cache.projects.retain(|path, _| Path::new(path).is_dir());
            cache.save(&self.cache_path);
        }
        (files, watched)
    }

    /// The files `project` was trusted with (`None`: not trusted, or
    /// trusted in the old single-hash format).
    pub fn pinned(&self, project: &Path) -> Option<&BTreeMap<String, String>> {
        self.file.projects.get(&key(project))?.files.as_ref()
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
        // It says which code may run: the user's alone.
        write_with_mode(&self.path, &text, 0o600).map_err(io_error(&self.path))
    }
}

fn key(project: &Path) -> String {
    project
        .canonicalize()
        .unwrap_or_else(|_| project.to_path_buf())
        .display()
        .to_string()
}

/// `path` (absolute, or relative to the project) as a pinned-file key, if
/// it lies in the project.
/// Pinned files are keyed both as walked and, for files a manifest runs,
/// by their real path, so both forms count. A path that is gone (removed)
/// has only the first.
fn relative(project: &Path, path: &Path) -> Vec<String> {
    let path = project.join(path);
    let mut out = Vec::new();
    let home = project.canonicalize().ok();
    if let Ok(rel) = path.strip_prefix(project) {
        out.push(slashed(rel));
    } else if let Some(rel) = home.as_deref().and_then(|h| path.strip_prefix(h).ok()) {
        out.push(slashed(rel));
    }
    if let (Some(home), Ok(real)) = (&home, path.canonicalize())
        && let Ok(rel) = real.strip_prefix(home)
    {
        out.push(slashed(rel));
    }
    out
}

fn slashed(path: &Path) -> String {
    path.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// Whether pinned file `path` is `dir` or lies under it.
fn under(path: &str, dir: &str) -> bool {
    dir.is_empty()
        || path == dir
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Files added, removed and changed from `then` to `now`, by path.
pub fn diff(then: &BTreeMap<String, String>, now: &BTreeMap<String, String>) -> Vec<FileChange> {
    let mut changes: Vec<FileChange> = Vec::new();
    for (path, hash) in now {
        match then.get(path) {
            None => changes.push(FileChange {
                kind: ChangeKind::Added,
                path: path.clone(),
            }),
            Some(old) if old != hash => changes.push(FileChange {
                kind: ChangeKind::Changed,
                path: path.clone(),
            }),
            Some(_) => {}
        }
    }
    for path in then.keys().filter(|p| !now.contains_key(*p)) {
        changes.push(FileChange {
            kind: ChangeKind::Removed,
            path: path.clone(),
        });
    }
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    changes
}

/// `sha256:<hex>` over every pinned path and hash.
fn combined(files: &BTreeMap<String, String>) -> String {
    let mut hasher = Sha256::new();
    for (path, hash) in files {
        hasher.update(path.as_bytes());
        hasher.update([0]);
        hasher.update(hash.as_bytes());
        hasher.update([b'\n']);
    }
    format!("sha256:{}", hex(&hasher.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `sha256:<hex>` over the project's pinned files as they are now (no cache).
pub fn fingerprint(project: &Path) -> Result<String, TrustError> {
    Ok(combined(&snapshot(project)))
}

/// Every pinned file of `project`, relative to it, with its hash (no cache):
///
/// - every file under `.zot/extensions` and `.agents/extensions`, following
///   the roots and the extension directories in them when they are symlinks
///   (as discovery does) but no symlink further down: such a link is pinned
///   by its target text;
/// - inside a git work tree, except untracked files that git ignores (made
///   locally: caches, `node_modules`, build output) in extension
///   directories git tracks; every `extension.json` is pinned whatever git says;
/// - the files a manifest runs that lie elsewhere in the project (its
///   `exec` or `command[0]`, and arguments naming files), read through links;
/// - every file under [`GATED_FILE_ROOTS`] (`.claude/commands` and the
///   project's skill folders), by the same git rule as an extension directory.
///
/// A file that cannot be read, or is not a regular file, is pinned as such.
pub fn snapshot(project: &Path) -> BTreeMap<String, String> {
    let empty = BTreeMap::new();
    let mut hasher = Hasher {
        old: &empty,
        new: BTreeMap::new(),
        now: SystemTime::now(),
        racy: RACY,
        seen: Vec::new(),
    };
    snapshot_with(project, &mut hasher)
}

fn snapshot_with(project: &Path, hasher: &mut Hasher<'_>) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    let mut referenced: Vec<PathBuf> = Vec::new();
    for (root_rel, dialect) in GATED_ROOTS {
        let root = project.join(root_rel);
        let entries = match sorted_entries(&root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                files.insert(format!("{root_rel}/"), unreadable(&e));
                continue;
            }
        };
        // Paths relative to the root that git ignores and does not track.
        let ignored = Ignored::in_root(&root);
        for name in entries {
            let path = root.join(&name);
            let rel = format!("{root_rel}/{}", name.to_string_lossy());
            let local = name.to_string_lossy().into_owned();
            let Ok(meta) = path.symlink_metadata() else {
                continue;
            };
            if meta.file_type().is_symlink() {
                hasher.pin(&mut files, &path, &rel, &meta);
            }
            if !path.is_dir() {
                if !meta.file_type().is_symlink() && !ignored.covers(&local) {
                    hasher.pin(&mut files, &path, &rel, &meta);
                }
                continue;
            }
            // An extension directory (followed when it is a link: git does
            // not look through links, so ask it about the target).
            let (ignored_here, prefix) = if meta.file_type().is_symlink() {
                (Ignored::in_extension(&path), String::new())
            } else {
                (ignored.clone(), format!("{local}/"))
            };
            hasher.walk(&mut files, &path, &rel, &ignored_here, &prefix);
            // The manifest decides what runs: pinned whatever git says, and
            // through a link by what it points at.
            let manifest = path.join(MANIFEST_FILE);
            if let Ok(meta) = manifest.symlink_metadata() {
                hasher.pin(
                    &mut files,
                    &manifest,
                    &format!("{rel}/{MANIFEST_FILE}"),
                    &meta,
                );
                referenced.push(manifest);
            }
            referenced.extend(runs(&path, project, *dialect));
        }
    }
    for (ecosystem, rel) in crate::ecosystem::gated_files() {
        // Followed when a symlink: what is read is what is pinned.
        let path = project.join(rel);
        if let Ok(meta) = path.metadata() {
            hasher.pin(&mut files, &path, rel, &meta);
            referenced.extend(ecosystem.files_run(&path, project));
        }
    }
    for root_rel in GATED_FILE_ROOTS {
        let root = project.join(root_rel);
        match root.symlink_metadata() {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                files.insert(format!("{root_rel}/"), unreadable(&e));
                continue;
            }
            Ok(meta) if meta.file_type().is_symlink() => {
                hasher.pin(&mut files, &root, root_rel, &meta);
            }
            Ok(_) => {}
        }
        let ignored = Ignored::in_extension(&root);
        hasher.walk(&mut files, &root, root_rel, &ignored, "");
    }
    referenced.extend(markdown_command_scripts(project, &files));
    // Files gated in part (hook settings): their gated parts, and what they run.
    for ecosystem in crate::ecosystem::installed() {
        let (parts, scripts) = ecosystem.partial_pins(project);
        files.extend(parts);
        referenced.extend(scripts);
    }
    pin_referenced(project, referenced, &mut files, hasher);
    files
}

/// The most of a Markdown command file read for the scripts it names (as
/// much as the agent reads of it: `file_refs::MAX_REFERENCED_BYTES`).
const COMMAND_TEXT_BYTES: u64 = 256 * 1024;

/// The scripts and modules the project's Markdown commands name in their
/// `` !`cmd` `` lines (`files` holds the pinned command files; only regular
/// ones are read: a FIFO could block).
fn markdown_command_scripts(project: &Path, files: &BTreeMap<String, String>) -> Vec<PathBuf> {
    use std::io::Read;
    let dir = zot_protocol::layout::COMMANDS_DIR;
    let mut out = Vec::new();
    for (rel, hash) in files {
        if !under(rel, dir) || !rel.ends_with(".md") || !hash.starts_with("sha256:") {
            continue;
        }
        let mut text = String::new();
        let Ok(file) = std::fs::File::open(project.join(rel)) else {
            continue;
        };
        if file
            .take(COMMAND_TEXT_BYTES)
            .read_to_string(&mut text)
            .is_err()
        {
            continue;
        }
        for cmd in zot_protocol::markdown_command::shell_commands(&text) {
            out.extend(crate::pins::named_by_shell(cmd, project));
        }
    }
    out
}

/// Pins what manifests, gated files, hooks and commands run from elsewhere
/// in the project: each named file (by its real path), and the directory
/// it lies in, unless that is the project's top (all of the project) or
/// already pinned; a Python package a `-m` names, all of it. Directories
/// follow the git rule of extension directories.
fn pin_referenced(
    project: &Path,
    referenced: Vec<PathBuf>,
    files: &mut BTreeMap<String, String>,
    hasher: &mut Hasher<'_>,
) {
    let Ok(home) = project.canonicalize() else {
        return;
    };
    let mut named: Vec<(PathBuf, String)> = Vec::new();
    for path in referenced {
        let Some(real) = path.canonicalize().ok() else {
            // Not there (yet): a file made there later would run.
            hasher.seen.push(path);
            continue;
        };
        if let Ok(rel) = real.strip_prefix(&home) {
            let rel = slashed(rel);
            named.push((real, rel));
        }
    }
    named.sort();
    named.dedup();
    let mut dirs: Vec<(PathBuf, String)> = Vec::new();
    for (real, rel) in named {
        let Ok(meta) = real.metadata() else {
            continue;
        };
        if meta.is_dir() {
            dirs.push((real, rel));
            continue;
        }
        if !files.contains_key(&rel) {
            hasher.pin(files, &real, &rel, &meta);
        }
        if let (Some(parent), Some((parent_rel, _))) = (real.parent(), rel.rsplit_once('/')) {
            dirs.push((parent.to_path_buf(), parent_rel.to_owned()));
        }
    }
    dirs.sort_by(|a, b| a.1.cmp(&b.1));
    let gated: Vec<&str> = GATED_ROOTS
        .iter()
        .map(|(root, _)| *root)
        .chain(GATED_FILE_ROOTS.iter().copied())
        .collect();
    let mut walked: Vec<String> = Vec::new();
    for (dir, rel) in dirs {
        let covered = |root: &String| under(&rel, root);
        if gated.iter().any(|root| under(&rel, root)) || walked.iter().any(covered) {
            continue;
        }
        hasher.walk(files, &dir, &rel, &Ignored::in_extension(&dir), "");
        walked.push(rel);
    }
}

/// The files a manifest in `dir` names to run: its program when that is a
/// path, and each argument naming a file in the directory or the project.
fn runs(dir: &Path, project: &Path, dialect: Dialect) -> Vec<PathBuf> {
    let Ok(manifest) = Manifest::load_in(dir, dialect) else {
        return Vec::new();
    };
    let Some((program, args)) = manifest.program(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if program.components().count() > 1 {
        out.push(program);
    }
    for arg in args {
        for file in [dir.join(arg), project.join(arg)] {
            if file.is_file() {
                out.push(file);
            }
        }
    }
    out
}

fn sorted_entries(dir: &Path) -> std::io::Result<Vec<std::ffi::OsString>> {
    let mut names: Vec<_> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    names.sort();
    Ok(names)
}

fn unreadable(e: &std::io::Error) -> String {
    format!("unreadable:{:?}", e.kind())
}

/// Hashes files, reusing the cached hash of a file whose stat is unchanged.
struct Hasher<'a> {
    old: &'a BTreeMap<String, CachedStat>,
    new: BTreeMap<String, CachedStat>,
    now: SystemTime,
    racy: Duration,
    /// Every path pinned or walked, and every path named that is not
    /// there: what a quick re-check stats ([`Watched`]).
    seen: Vec<PathBuf>,
}

impl Hasher<'_> {
    /// Pins everything under `dir` (pinned as `rel`), not following links,
    /// except what `ignored` covers (`prefix` + the path below `dir`).
    fn walk(
        &mut self,
        files: &mut BTreeMap<String, String>,
        dir: &Path,
        rel: &str,
        ignored: &Ignored,
        prefix: &str,
    ) {
        self.seen.push(dir.to_path_buf());
        let entries = match sorted_entries(dir) {
            Ok(entries) => entries,
            Err(e) => {
                files.insert(format!("{rel}/"), unreadable(&e));
                return;
            }
        };
        for name in entries {
            let name = name.to_string_lossy().into_owned();
            let path = dir.join(&name);
            let Ok(meta) = path.symlink_metadata() else {
                continue;
            };
            let local = format!("{prefix}{name}");
            if ignored.covers(&local) {
                continue;
            }
            let rel = format!("{rel}/{name}");
            if meta.is_dir() {
                self.walk(files, &path, &rel, ignored, &format!("{local}/"));
            } else {
                self.pin(files, &path, &rel, &meta);
            }
        }
    }

    /// Pins one file, symlink or special file as `rel`.
    fn pin(
        &mut self,
        files: &mut BTreeMap<String, String>,
        path: &Path,
        rel: &str,
        meta: &std::fs::Metadata,
    ) {
        self.seen.push(path.to_path_buf());
        let kind = meta.file_type();
        let value = if kind.is_symlink() {
            match std::fs::read_link(path) {
                Ok(target) => {
                    let text = target.as_os_str().as_encoded_bytes();
                    format!("symlink:sha256:{}", hex(&Sha256::digest(text)))
                }
                Err(e) => unreadable(&e),
            }
        } else if kind.is_file() {
            self.hash_file(path, rel, meta)
        } else if kind.is_dir() {
            return;
        } else {
            // Never read a FIFO or a device: that could block or never end.
            "special".to_owned()
        };
        files.insert(rel.to_owned(), value);
    }

    fn hash_file(&mut self, path: &Path, rel: &str, meta: &std::fs::Metadata) -> String {
        let stat = CachedStat::of(meta);
        if let Some(cached) = self.old.get(rel)
            && cached.same_file(&stat)
        {
            self.new.insert(rel.to_owned(), cached.clone());
            return cached.hash.clone();
        }
        let hash = match hash_contents(path) {
            Ok(hash) => hash,
            Err(e) => return unreadable(&e),
        };
        if !stat.is_racy(self.now, self.racy) {
            self.new.insert(
                rel.to_owned(),
                CachedStat {
                    hash: hash.clone(),
                    ..stat
                },
            );
        }
        hash
    }
}

/// What a quick re-check of a trusted project stats: every pinned file,
/// every directory walked (an entry added or removed changes its mtime and
/// ctime), every named path that was not there, and every gated input's
/// path with its parents up to the project (one appearing changes them).
/// When none of them changed, the pinned files are as they were; otherwise
/// a full check (with git) tells.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Watched(Vec<(PathBuf, Option<StatKey>, Option<StatKey>)>);

/// A path's identity and change marks: device, inode, mode, size, mtime, ctime.
type StatKey = (u64, u64, u32, u64, (i64, i64), (i64, i64));

fn stat_key(meta: std::io::Result<std::fs::Metadata>) -> Option<StatKey> {
    let meta = meta.ok()?;
    Some((
        meta.dev(),
        meta.ino(),
        meta.mode(),
        meta.size(),
        (meta.mtime(), meta.mtime_nsec()),
        (meta.ctime(), meta.ctime_nsec()),
    ))
}

impl Watched {
    fn of(project: &Path, mut paths: Vec<PathBuf>) -> Self {
        let inputs = GATED_ROOTS
            .iter()
            .map(|(root, _)| *root)
            .chain(GATED_FILE_ROOTS.iter().copied())
            .chain(gated_files())
            .chain(
                crate::ecosystem::installed()
                    .into_iter()
                    .flat_map(|e| e.partly_gated_files().iter().copied()),
            );
        for rel in inputs {
            let mut path = project.join(rel);
            loop {
                paths.push(path.clone());
                if path == project || !path.pop() {
                    break;
                }
            }
        }
        paths.sort();
        paths.dedup();
        Self(
            paths
                .into_iter()
                .map(|path| {
                    let (lstat, stat) = Self::stat(&path);
                    (path, lstat, stat)
                })
                .collect(),
        )
    }

    /// The path's own stat and, through a symlink, its target's.
    fn stat(path: &Path) -> (Option<StatKey>, Option<StatKey>) {
        (stat_key(path.symlink_metadata()), stat_key(path.metadata()))
    }

    /// Whether every watched path stats as it did.
    pub fn unchanged(&self) -> bool {
        self.0
            .iter()
            .all(|(path, lstat, stat)| Self::stat(path) == (*lstat, *stat))
    }
}

/// Bytes read at a time while hashing a file (as `std::io::copy` reads).
const HASH_BUFFER_BYTES: usize = 8 * 1024;

fn hash_contents(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    // sha2 0.11's hasher is no `io::Write`: fed by hand, a buffer at a time.
    let mut buf = vec![0u8; HASH_BUFFER_BYTES];
    loop {
        let n = std::io::Read::read(&mut file, &mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(format!("sha256:{}", hex(&hasher.finalize())))
}

/// Untracked files git ignores below one directory, as git lists them
/// relative to it (`dir/` for a whole directory, `./` for all of it), in
/// extension directories git tracks. Outside a git work tree, or when git
/// cannot say, nothing is ignored.
///
/// An extension directory without a single tracked file did not come with
/// the repository, so git's ignore rules say nothing about it (a project
/// that is no repository of its own, inside a home directory kept in git
/// that ignores everything, would otherwise pin nothing): all of it counts.
#[derive(Debug, Clone, Default)]
struct Ignored(Vec<String>);

impl Ignored {
    /// For a root: entries relative to it, kept for extension directories
    /// (first path components) that hold a tracked file.
    fn in_root(root: &Path) -> Self {
        let tracked: std::collections::BTreeSet<String> = git_paths(root, &[])
            .iter()
            .filter_map(|path| path.split('/').next().map(str::to_owned))
            .collect();
        let ignored = git_paths(root, IGNORED_ARGS)
            .into_iter()
            .filter(|entry| {
                entry
                    .split('/')
                    .next()
                    .is_some_and(|first| tracked.contains(first))
            })
            .collect();
        Self(ignored)
    }

    /// For one extension directory (a link git does not look through).
    fn in_extension(dir: &Path) -> Self {
        if git_paths(dir, &[]).is_empty() {
            return Self::default();
        }
        Self(git_paths(dir, IGNORED_ARGS))
    }

    /// Whether `path` (relative to the directory asked about) is ignored.
    fn covers(&self, path: &str) -> bool {
        self.0.iter().any(|entry| match entry.strip_suffix('/') {
            Some(".") => true,
            Some(dir) => under(path, dir),
            None => entry == path,
        })
    }
}

/// `git ls-files` options that list untracked ignored files, a wholly
/// ignored directory as one `dir/` entry.
const IGNORED_ARGS: &[&str] = &["--others", "--ignored", "--exclude-standard", "--directory"];

/// `git ls-files -z <options>` in `dir`, paths relative to it (tracked
/// files without options); nothing when git cannot say.
fn git_paths(dir: &Path, options: &[&str]) -> Vec<String> {
    match git(dir).args(["ls-files", "-z"]).args(options).output() {
        Ok(out) if out.status.success() => out
            .stdout
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect(),
        _ => Vec::new(),
    }
}

/// `git -C dir` with fixed options: no fsmonitor hook (a repository's own
/// config must not run a program before it is trusted), no optional locks,
/// no repository chosen by the environment, and no terminal prompts.
fn git(dir: &Path) -> Command {
    let mut command = Command::new("git");
    command
        .arg("-C")
        .arg(dir)
        .args(["-c", "core.fsmonitor=false"])
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    command
}

/// A file's identity and hash in the stat cache.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct CachedStat {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    hash: String,
}

impl CachedStat {
    fn of(meta: &std::fs::Metadata) -> Self {
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
            hash: String::new(),
        }
    }

    fn same_file(&self, other: &Self) -> bool {
        (self.dev, self.ino, self.size, self.mtime, self.ctime)
            == (other.dev, other.ino, other.size, other.mtime, other.ctime)
    }

    /// Changed so recently (or in the future) that a change within the same
    /// timestamp tick would not show in the stat.
    fn is_racy(&self, now: SystemTime, racy: Duration) -> bool {
        let Ok(now) = now.duration_since(SystemTime::UNIX_EPOCH) else {
            return true;
        };
        let limit = now.saturating_sub(racy);
        [self.mtime, self.ctime].iter().any(|(secs, nanos)| {
            let at = u64::try_from(*secs)
                .map(|s| Duration::new(s, u32::try_from(*nanos).unwrap_or(0)))
                .unwrap_or_default();
            at >= limit
        })
    }
}

/// `$ZOT_HOME/trust-cache.json`: per project (canonical path), each pinned
/// file's stat and hash.
#[derive(Debug, Default, Serialize, Deserialize)]
struct StatCache {
    #[serde(default)]
    projects: BTreeMap<String, BTreeMap<String, CachedStat>>,
}

impl StatCache {
    /// The cache; unreadable or invalid counts as empty (it only saves time).
    fn load(path: &Path) -> Self {
        std::fs::read(path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    fn save(&self, path: &Path) {
        if let Ok(text) = serde_json::to_vec(self)
            && let Some(dir) = path.parent()
            && std::fs::create_dir_all(dir).is_ok()
        {
            let _ = write_with_mode(path, &text, 0o600);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn git_ignore_entries_cover_files_and_directories() {
        let ignored = Ignored(vec!["a/node_modules/".into(), "a/x.log".into()]);
        assert!(ignored.covers("a/node_modules"));
        assert!(ignored.covers("a/node_modules/y/z.js"));
        assert!(ignored.covers("a/x.log"));
        assert!(!ignored.covers("a/x.log2"));
        assert!(!ignored.covers("a/node_modules2"));
        assert!(Ignored(vec!["./".into()]).covers("anything"));
    }

    #[test]
    fn claude_commands_and_skills_are_pinned() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path();
        write(
            &project.join(".claude/commands/git/commit.md"),
            "!`git status`",
        );
        write(
            &project.join(".claude/skills/pdf/SKILL.md"),
            "---\nname: pdf\n---\n",
        );
        write(&project.join(".claude/settings.local.json"), "{}");
        let files = snapshot(project);
        let pinned: Vec<&str> = files.keys().map(String::as_str).collect();
        assert_eq!(
            pinned,
            [
                ".claude/commands/git/commit.md",
                ".claude/skills/pdf/SKILL.md"
            ]
        );
        let before = fingerprint(project).unwrap();
        write(
            &project.join(".claude/commands/git/commit.md"),
            "!`curl evil`",
        );
        assert_ne!(fingerprint(project).unwrap(), before);
    }

    #[test]
    fn every_project_skill_folder_is_gated_and_pinned() {
        for root in zot_protocol::layout::PROJECT_SKILL_ROOTS {
            assert!(GATED_FILE_ROOTS.contains(root), "{root} is not gated");
        }
        let dir = tempfile::tempdir().unwrap();
        write(&dir.path().join(".zot/skills/a/SKILL.md"), "a");
        write(&dir.path().join(".agents/skills/b/run.sh"), "b");
        let files = snapshot(dir.path());
        let pinned: Vec<&str> = files.keys().map(String::as_str).collect();
        assert_eq!(
            pinned,
            [".agents/skills/b/run.sh", ".zot/skills/a/SKILL.md"]
        );
    }

    #[test]
    fn changes_are_listed_file_by_file() {
        let then: BTreeMap<String, String> = [("a", "1"), ("b", "2"), ("c", "3")]
            .map(|(k, v)| (k.into(), v.into()))
            .into();
        let now: BTreeMap<String, String> = [("a", "1"), ("b", "9"), ("d", "4")]
            .map(|(k, v)| (k.into(), v.into()))
            .into();
        let shown: Vec<String> = diff(&then, &now).iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["changed b", "removed c", "added d"]);
    }

    #[test]
    fn the_cache_spares_unchanged_files_but_never_hides_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("p");
        let script = project.join(".zot/extensions/a/lib.sh");
        write(&script, "echo one");
        let home = dir.path().join("home");
        let cache_path = home.join(TRUST_CACHE_FILE);
        let mut store = TrustStore::load(&home).unwrap();

        // Just written: racy, so not cached (a same-size change within the
        // timestamp tick would not show in the stat).
        store.trust(&project).unwrap();
        assert!(StatCache::load(&cache_path).projects.is_empty());

        // Settled files are cached, and the cached hash is what is used.
        store.racy = Duration::ZERO;
        store.trust(&project).unwrap();
        let mut cache = StatCache::load(&cache_path);
        let entry = cache.projects.values_mut().next().unwrap();
        let cached = entry.get_mut(".zot/extensions/a/lib.sh").unwrap();
        cached.hash = "sha256:from-the-cache".into();
        cache.save(&cache_path);
        let check = store.check(&project).unwrap();
        assert_eq!(check.status, TrustStatus::Changed, "the cache was not used");
        store.trust(&project).unwrap();
        assert_eq!(store.status(&project).unwrap(), TrustStatus::Trusted);

        // A change to the file changes its stat, so it is read again.
        write(&script, "echo three");
        let check = store.check(&project).unwrap();
        assert_eq!(check.status, TrustStatus::Changed);
        assert_eq!(
            check.changes[0].to_string(),
            "changed .zot/extensions/a/lib.sh"
        );
    }

    #[test]
    fn special_files_are_pinned_without_being_read() {
        let dir = tempfile::tempdir().unwrap();
        let ext = dir.path().join(".zot/extensions/a");
        write(&ext.join("extension.json"), "{}");
        let fifo = ext.join("pipe");
        assert!(
            Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let files = snapshot(dir.path());
        assert_eq!(files[".zot/extensions/a/pipe"], "special");
    }
}
