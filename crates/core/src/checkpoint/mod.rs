//! Checkpoints: snapshots of the project's files before and after each
//! prompt that changes them, so any prompt's changes can be taken back
//! (`/undo`, `/rewind`, RPC `rewind`), those `bash` made included.
//!
//! Snapshots live in a git repository of zot's own under
//! `$ZOT_HOME/checkpoints/<project>/git` whose work tree is the project
//! (`git.rs`); the project's `.git` is never read or written. A project
//! over [`Limits`] falls back to snapshots of the files `edit` and `write`
//! change. Each session anchors its snapshots with a ref of its own, so
//! they are pruned with it (`prune.rs`). The session file keeps a
//! [`Record`] per prompt that changed something; a rewind (`rewind.rs`)
//! plans from them and writes each file atomically (`restore.rs`).

mod error;
mod git;
mod location;
mod prune;
#[cfg(test)]
mod prune_tests;
pub(crate) mod record;
mod restore;
mod rewind;
mod scan;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use zot_protocol::checkpoints::{Change, FileChange};

use crate::private_files::{private_dir, write_atomically};

pub use error::CheckpointError;
use git::{Git, nul_fields};
use location::project_dir;
pub use location::root;
pub use prune::{MAX_STORAGE_BYTES, prune, prune_at_start};
pub use record::Record;
pub use restore::FAULT_EXIT;
pub use rewind::{Plan, Rewound, last_prompt, plan, prompts, rewind};
pub use scan::{BUILTIN_EXCLUDES, Limits};

/// What a snapshot covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Coverage {
    /// Every file of the project (its ignores and the built-in list aside).
    Whole,
    /// The project is over [`Limits`]: only files `edit` and `write`
    /// changed, and those zot saw before.
    Touched,
}

/// One project's checkpoint repository.
#[derive(Debug)]
struct Store {
    git: Git,
    limits: Limits,
    coverage: Option<Coverage>,
    /// The exclude file as last written (rewritten only when it changes).
    excludes: String,
    /// Large files seen by the last whole snapshot: size and mtime.
    large: HashMap<String, (u64, u128)>,
    /// What to tell the user once (the fallback, nested repositories).
    notes: Vec<String>,
    told: bool,
    /// Each session's last snapshot: its commit and tree.
    heads: HashMap<String, (String, String)>,
}

/// The prompt being recorded.
#[derive(Debug, Default)]
struct Turn {
    before: Option<String>,
    /// Files `edit` and `write` were called on (relative).
    touched: Vec<String>,
    /// The large files (size, mtime) at the before-snapshot.
    large: HashMap<String, (u64, u128)>,
}

#[derive(Debug)]
struct State {
    dir: PathBuf,
    project: PathBuf,
    store: Option<Store>,
    turn: Option<Turn>,
    /// The running session's file, named in the store so pruning knows
    /// when it is gone.
    session_file: Option<PathBuf>,
    /// Set after the first failure: checkpoints are off for this run.
    failed: bool,
}

/// The agent's checkpoints of one project: cheap to clone, every git call
/// runs on tokio's blocking pool.
#[derive(Debug, Clone)]
pub struct Checkpoints {
    state: Arc<Mutex<State>>,
}

impl Checkpoints {
    /// The checkpoints of `project` under `root` (`$ZOT_HOME/checkpoints`).
    /// Nothing is read or written until the first snapshot.
    pub fn new(root: &Path, project: &Path) -> Self {
        let project = project
            .canonicalize()
            .unwrap_or_else(|_| project.to_path_buf());
        Self {
            state: Arc::new(Mutex::new(State {
                dir: project_dir(root, &project),
                project,
                store: None,
                turn: None,
                session_file: None,
                failed: false,
            })),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `job` on the state in tokio's blocking pool.
    async fn blocking<T: Send + 'static>(
        &self,
        job: impl FnOnce(&mut State) -> T + Send + 'static,
    ) -> Option<T> {
        let state = Arc::clone(&self.state);
        tokio::task::spawn_blocking(move || {
            job(&mut state.lock().unwrap_or_else(PoisonError::into_inner))
        })
        .await
        .ok()
    }

    /// A new prompt of the session whose file is `session_file` starts:
    /// nothing recorded for it yet.
    pub fn start_prompt(&self, session_file: &Path) {
        let mut state = self.lock();
        state.turn = Some(Turn::default());
        state.session_file = Some(session_file.to_path_buf());
    }

    /// Before a tool that may write runs: the prompt's first such call
    /// takes the before-snapshot; under [`Coverage::Touched`], each `edit`
    /// and `write` adds its file to it. Returns what to tell the user (a
    /// failure that turned checkpoints off).
    pub async fn before_tool(&self, session_id: &str, tool: &str, args: &Value) -> Vec<String> {
        let session_id = session_id.to_owned();
        let path = matches!(tool, "edit" | "write")
            .then(|| args.get("path").and_then(Value::as_str).map(str::to_owned))
            .flatten();
        self.blocking(move |state| state.before_tool(&session_id, path))
            .await
            .unwrap_or_default()
    }

    /// The prompt `entry_id` ended: when it took a before-snapshot, the
    /// after-snapshot, and the record when files changed.
    pub async fn end_prompt(
        &self,
        session_id: &str,
        entry_id: &str,
    ) -> (Option<Record>, Vec<String>) {
        let session_id = session_id.to_owned();
        let entry_id = entry_id.to_owned();
        self.blocking(move |state| state.end_prompt(&session_id, &entry_id))
            .await
            .unwrap_or_default()
    }
}

impl State {
    fn store(&mut self) -> Result<&mut Store, CheckpointError> {
        if self.store.is_none() {
            private_dir(&self.dir).map_err(|e| CheckpointError::io(&self.dir, e))?;
            let marker = self.dir.join("project");
            if !marker.exists() {
                let text = format!("{}\n", self.project.display());
                write_atomically(&marker, text.as_bytes(), 0o600)
                    .map_err(|e| CheckpointError::io(&marker, e))?;
            }
            let git = Git {
                git_dir: self.dir.join("git"),
                work_tree: self.project.clone(),
                index: self.dir.join("git").join("index"),
            };
            git.init()?;
            self.store = Some(Store {
                git,
                limits: Limits::current(),
                coverage: None,
                excludes: String::new(),
                large: HashMap::new(),
                notes: Vec::new(),
                told: false,
                heads: HashMap::new(),
            });
        }
        self.store
            .as_mut()
            .ok_or_else(|| CheckpointError::Git("no checkpoint store".into()))
    }

    /// Turns a failure into one note; checkpoints stay off for the run.
    fn fail(&mut self, e: &CheckpointError) -> Vec<String> {
        tracing::warn!(error = %e, "checkpoints failed");
        if std::mem::replace(&mut self.failed, true) {
            return Vec::new();
        }
        vec![format!("checkpoints are off for this run: {e}")]
    }

    fn before_tool(&mut self, session_id: &str, path: Option<String>) -> Vec<String> {
        if self.failed || self.turn.is_none() {
            return Vec::new();
        }
        let relative = path.and_then(|p| self.relative(&p));
        // Notes wait for the prompt's checkpoint, which they explain.
        match self.snapshot_before(session_id, relative) {
            Ok(()) => Vec::new(),
            Err(e) => self.fail(&e),
        }
    }

    fn snapshot_before(
        &mut self,
        session_id: &str,
        path: Option<String>,
    ) -> Result<(), CheckpointError> {
        let project = self.project.clone();
        let taken = self.turn.as_ref().is_some_and(|t| t.before.is_some());
        let session_file = self.session_file.clone();
        let store = self.store()?;
        if let Some(file) = &session_file {
            prune::name_session(&store.git, session_id, file)?;
        }
        let touched_mode = store.coverage == Some(Coverage::Touched);
        if taken && !(touched_mode && path.is_some()) {
            return Ok(());
        }
        let mut extra = Vec::new();
        if let Some(path) = &path
            && (touched_mode || store.coverage.is_none())
        {
            extra.push(path.clone());
        }
        let before = if taken {
            // The file joins the before-snapshot as it is now, before the
            // call changes it; the other files are as the index holds them.
            store.add_paths(&project, &extra)?;
            store.commit(session_id)?
        } else {
            store.snapshot(&project, session_id, &extra)?
        };
        let large = (!taken).then(|| store.large.clone());
        if let Some(turn) = &mut self.turn {
            turn.before = Some(before);
            turn.touched.extend(path);
            if let Some(large) = large {
                turn.large = large;
            }
        }
        Ok(())
    }

    fn end_prompt(&mut self, session_id: &str, entry_id: &str) -> (Option<Record>, Vec<String>) {
        let Some(turn) = self.turn.take() else {
            return (None, Vec::new());
        };
        let Some(before) = turn.before else {
            return (None, Vec::new());
        };
        if self.failed {
            return (None, Vec::new());
        }
        let project = self.project.clone();
        let made = (|| {
            let store = self.store()?;
            let after = store.snapshot(&project, session_id, &turn.touched)?;
            let files = store.diff(&before, &after)?;
            let unrestorable = store.large_changes(&turn.large);
            let hashes = unrestorable
                .iter()
                .filter_map(|path| Some((path.clone(), scan::sha256(&project.join(path)).ok()?)))
                .collect();
            Ok::<_, CheckpointError>((after, files, unrestorable, hashes))
        })();
        match made {
            Ok((after, files, unrestorable, hashes)) => {
                let mut notes = self.take_notes();
                if !unrestorable.is_empty() {
                    notes.push(format!(
                        "changed, but over the size limit: recorded, not restorable: {}",
                        unrestorable.join(", ")
                    ));
                }
                if files.is_empty() && unrestorable.is_empty() {
                    return (None, notes);
                }
                let record = Record {
                    entry_id: entry_id.to_owned(),
                    before,
                    after,
                    files,
                    unrestorable,
                    hashes,
                    rewind: false,
                };
                (Some(record), notes)
            }
            Err(e) => (None, self.fail(&e)),
        }
    }

    fn take_notes(&mut self) -> Vec<String> {
        match &mut self.store {
            Some(store) if !store.told && !store.notes.is_empty() => {
                store.told = true;
                store.notes.clone()
            }
            _ => Vec::new(),
        }
    }

    /// `path` (as a tool was given it) relative to the project, when inside it.
    fn relative(&self, path: &str) -> Option<String> {
        let path = Path::new(path);
        let absolute = if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.project.join(path)
        };
        let parent = absolute.parent()?.canonicalize().ok()?;
        let full = parent.join(absolute.file_name()?);
        let relative = full.strip_prefix(&self.project).ok()?;
        let text = scan::slashed(relative);
        git::safe_relative(&text).then_some(text)
    }
}

impl Store {
    /// Chooses the coverage on the first snapshot and writes the excludes;
    /// returns whether the snapshot is whole.
    fn prepare(&mut self, project: &Path) -> Result<bool, CheckpointError> {
        if self.coverage == Some(Coverage::Touched) {
            return Ok(false);
        }
        let found = scan::scan(project, &self.limits);
        if found.oversized {
            self.coverage = Some(Coverage::Touched);
            self.notes.push(format!(
                "{} is over {} files or {} MiB: checkpoints cover only the files edit and write change, not what bash changes",
                project.display(),
                self.limits.max_files,
                self.limits.max_bytes >> 20
            ));
            return Ok(false);
        }
        if self.coverage.is_none() && !found.nested.is_empty() {
            self.notes.push(format!(
                "nested repositories (submodules) are left out of checkpoints: {}",
                found.nested.join(", ")
            ));
        }
        self.coverage = Some(Coverage::Whole);
        let mut excludes = String::from("/.git\n");
        for name in BUILTIN_EXCLUDES {
            excludes.push_str(&format!("{name}/\n"));
        }
        for (path, ..) in &found.large {
            excludes.push_str(&format!("/{}\n", glob_escape(path)));
        }
        for path in &found.nested {
            excludes.push_str(&format!("/{}/\n", glob_escape(path)));
        }
        if excludes != self.excludes {
            let file = self.git.git_dir.join("info").join("exclude");
            write_atomically(&file, excludes.as_bytes(), 0o600)
                .map_err(|e| CheckpointError::io(&file, e))?;
            self.excludes = excludes;
        }
        self.large = found
            .large
            .into_iter()
            .map(|(path, size, time)| (path, (size, time)))
            .collect();
        Ok(true)
    }

    /// Large files whose size or time differs from `before`'s.
    fn large_changes(&self, before: &HashMap<String, (u64, u128)>) -> Vec<String> {
        let mut changed: Vec<String> = self
            .large
            .iter()
            .filter(|(path, value)| before.get(*path) != Some(*value))
            .map(|(path, _)| path.clone())
            .chain(
                before
                    .keys()
                    .filter(|path| !self.large.contains_key(*path))
                    .cloned(),
            )
            .collect();
        changed.sort();
        changed
    }

    /// Uses this session's index (seeded from the newest other one, so its
    /// first snapshot need not read every file again).
    fn use_index(&mut self, session_id: &str) -> Result<(), CheckpointError> {
        let dir = self.git.git_dir.join("indexes");
        let index = dir.join(session_id);
        if self.git.index != index {
            private_dir(&dir).map_err(|e| CheckpointError::io(&dir, e))?;
            if !index.exists()
                && let Some(newest) = std::fs::read_dir(&dir)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
                    .max()
            {
                let _ = std::fs::copy(&newest.1, &index);
            }
            self.git.index = index;
        }
        Ok(())
    }

    /// Records the project's files now and returns the commit.
    fn snapshot(
        &mut self,
        project: &Path,
        session_id: &str,
        touched: &[String],
    ) -> Result<String, CheckpointError> {
        let start = std::time::Instant::now();
        self.use_index(session_id)?;
        let whole = self.prepare(project)?;
        if whole {
            self.git.add(&["--all", "--", "."])?;
        } else {
            self.git.add(&["--update"])?;
            self.add_paths(project, touched)?;
        }
        let commit = self.commit(session_id)?;
        // scripts/bench reads this line (the checkpoint scenario).
        let ms = start.elapsed().as_secs_f64() * 1e3;
        tracing::debug!(whole, ms, "checkpoint snapshot");
        Ok(commit)
    }

    /// Adds these files (relative) as they are now, when they exist.
    fn add_paths(&mut self, project: &Path, paths: &[String]) -> Result<(), CheckpointError> {
        let present: Vec<&str> = paths
            .iter()
            .filter(|p| {
                std::fs::symlink_metadata(project.join(p))
                    .is_ok_and(|m| m.len() <= self.limits.max_file_bytes || !m.is_file())
            })
            .map(String::as_str)
            .collect();
        for chunk in present.chunks(PATHS_PER_CALL) {
            let mut args = vec!["--force", "--"];
            args.extend_from_slice(chunk);
            self.git.add(&args)?;
        }
        Ok(())
    }

    /// A commit of the index, on this session's chain; the session's last
    /// one again when nothing changed.
    fn commit(&mut self, session_id: &str) -> Result<String, CheckpointError> {
        let tree = self.git.line(&["write-tree"])?;
        let reference = format!("refs/zot/{session_id}");
        let head = match self.heads.get(session_id) {
            Some(head) => Some(head.clone()),
            // Once per session and run: after that the head is known.
            None => self
                .git
                .line(&[
                    "rev-parse",
                    "--verify",
                    "--quiet",
                    &format!("{reference}^{{commit}}"),
                ])
                .ok()
                .filter(|p| !p.is_empty())
                .map(|commit| {
                    let tree = self
                        .git
                        .line(&["rev-parse", &format!("{commit}^{{tree}}")])
                        .unwrap_or_default();
                    (commit, tree)
                }),
        };
        if let Some((commit, parent_tree)) = &head
            && *parent_tree == tree
        {
            return Ok(commit.clone());
        }
        let mut args = vec!["commit-tree", tree.as_str(), "-m", "zot checkpoint"];
        if let Some((parent, _)) = &head {
            args.extend(["-p", parent.as_str()]);
        }
        let commit = self.git.line(&args)?;
        self.git.output(&["update-ref", &reference, &commit])?;
        self.heads
            .insert(session_id.to_owned(), (commit.clone(), tree));
        Ok(commit)
    }

    /// The files that differ between two snapshots.
    fn diff(&self, from: &str, to: &str) -> Result<Vec<FileChange>, CheckpointError> {
        let out = self.git.output(&[
            "diff-tree",
            "-r",
            "-z",
            "--no-renames",
            "--name-status",
            from,
            to,
        ])?;
        let mut fields = nul_fields(&out);
        let mut files = Vec::new();
        while let (Some(status), Some(path)) = (fields.next(), fields.next()) {
            let change = match status.first() {
                Some(b'A') => Change::Created,
                Some(b'D') => Change::Deleted,
                _ => Change::Modified,
            };
            files.push(FileChange {
                path: String::from_utf8_lossy(path).into_owned(),
                change,
            });
        }
        Ok(files)
    }

    /// The stored state of `paths` in `commit` (absent paths left out).
    fn stored(
        &self,
        commit: &str,
        paths: &[&str],
    ) -> Result<HashMap<String, restore::Stored>, CheckpointError> {
        let mut found = HashMap::new();
        for chunk in paths.chunks(PATHS_PER_CALL) {
            let mut args = vec!["ls-tree", "-r", "-z", "--full-tree", commit, "--"];
            args.extend_from_slice(chunk);
            let out = self.git.output(&args)?;
            for line in nul_fields(&out) {
                // `<mode> <type> <object>\t<path>`
                let line = String::from_utf8_lossy(line);
                let Some((head, path)) = line.split_once('\t') else {
                    continue;
                };
                let mut parts = head.split(' ');
                let (Some(mode), Some("blob"), Some(blob)) =
                    (parts.next(), parts.next(), parts.next())
                else {
                    continue;
                };
                found.insert(
                    path.to_owned(),
                    restore::Stored {
                        mode: mode.to_owned(),
                        blob: blob.to_owned(),
                    },
                );
            }
        }
        Ok(found)
    }
}

/// How many paths one git call names (well under the argument limit).
const PATHS_PER_CALL: usize = 500;

/// A path as an exclude pattern matching only itself.
fn glob_escape(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\' | '!' | '#') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
