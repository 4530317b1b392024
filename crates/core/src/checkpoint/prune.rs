//! Checkpoints go with their session: a session's snapshots are reachable
//! only from its ref (`refs/zot/<session id>`), so when the session file is
//! gone the ref and its index go, and git drops what nothing reaches. The
//! whole store is also kept under [`MAX_STORAGE_BYTES`], oldest session
//! first.

use std::path::{Path, PathBuf};

use super::error::CheckpointError;
use super::git::Git;

/// The most `$ZOT_HOME/checkpoints` may hold: a few full copies of
/// projects at [`super::Limits`]'s byte limit.
pub const MAX_STORAGE_BYTES: u64 = 4 << 30;

/// Objects younger than this are never pruned: a snapshot running in
/// another zot writes its objects before its ref points at them.
const PRUNE_EXPIRE: &str = "1.hour.ago";

/// [`PRUNE_EXPIRE`] in seconds: a session that snapshot more recently is
/// left out of the size pruning, since dropping it would free nothing yet
/// (and it may be running).
const RECENT_SECS: u64 = 3600;

/// How often a start goes over every project's checkpoints and the size
/// of the whole store; in between, a start looks only at its own project's.
pub(super) const FULL_PASS_EVERY: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// At a start of zot in `project`: the project's checkpoints of deleted
/// sessions go at once (one `git for-each-ref`), every project's and the
/// size limit's at most once a [`FULL_PASS_EVERY`] (marked by the
/// `.pruned` file's time), so a start does not walk the whole store or run
/// git in every project that has checkpoints. Returns how many sessions'
/// checkpoints went.
pub fn prune_at_start(zot_home: &Path, root: &Path, project: &Path) -> usize {
    let stamp = root.join(".pruned");
    let due = std::fs::metadata(&stamp)
        .and_then(|m| m.modified())
        .map_or(true, |at| {
            at.elapsed().map_or(true, |age| age >= FULL_PASS_EVERY)
        });
    if due && root.is_dir() {
        let _ = std::fs::write(&stamp, b"");
        return prune(zot_home, root, MAX_STORAGE_BYTES);
    }
    let project = project
        .canonicalize()
        .unwrap_or_else(|_| project.to_path_buf());
    store(&super::location::project_dir(root, &project))
        .map_or(0, |(git, _)| drop_deleted(zot_home, &git).0)
}

/// The store in `dir`, when it holds one: its git and the directory.
fn store(dir: &Path) -> Option<(Git, PathBuf)> {
    let project = std::fs::read_to_string(dir.join("project")).ok()?;
    let git = Git {
        git_dir: dir.join("git"),
        work_tree: PathBuf::from(project.trim_end_matches('\n')),
        index: dir.join("git").join("index"),
    };
    git.git_dir
        .join("HEAD")
        .exists()
        .then(|| (git, dir.to_path_buf()))
}

/// Drops the checkpoints of `git`'s sessions whose file is gone; how many
/// went, and the time and id of each session kept.
fn drop_deleted(zot_home: &Path, git: &Git) -> (usize, Vec<(u64, String)>) {
    let sessions = crate::session::sessions_dir(zot_home, &git.work_tree);
    let mut removed = 0;
    let mut kept = Vec::new();
    for (time, id) in session_refs(git) {
        // The file the session named, else where sessions usually are.
        let file = std::fs::read_to_string(git.git_dir.join("sessions").join(&id))
            .map_or_else(|_| sessions.join(format!("{id}.jsonl")), PathBuf::from);
        if file.exists() {
            kept.push((time, id));
        } else {
            drop_session(git, &id);
            removed += 1;
        }
    }
    if removed > 0 {
        let _ = git.output(&["prune", &format!("--expire={PRUNE_EXPIRE}")]);
    }
    (removed, kept)
}

/// Prunes the checkpoints under `root` whose session file is gone, then
/// the oldest sessions' while the store is over `max_bytes`. Returns how
/// many sessions' checkpoints went.
pub fn prune(zot_home: &Path, root: &Path, max_bytes: u64) -> usize {
    let stores: Vec<(Git, PathBuf)> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| store(&entry.path()))
        .collect();
    let mut removed = 0;
    let mut all = Vec::new();
    for (git, _) in &stores {
        let (dropped, kept) = drop_deleted(zot_home, git);
        removed += dropped;
        all.extend(kept.into_iter().map(|(time, id)| (time, git.clone(), id)));
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    all.retain(|(time, ..)| now.saturating_sub(*time) > RECENT_SECS);
    all.sort_by_key(|(time, ..)| *time);
    for (_, git, id) in all {
        if size_of(root) <= max_bytes {
            break;
        }
        drop_session(&git, &id);
        let _ = git.output(&["prune", &format!("--expire={PRUNE_EXPIRE}")]);
        removed += 1;
    }
    removed
}

/// Each session's ref: its last snapshot's time and the session id.
pub(super) fn session_refs(git: &Git) -> Vec<(u64, String)> {
    let Ok(out) = git.output(&[
        "for-each-ref",
        "--format=%(committerdate:unix) %(refname)",
        "refs/zot/",
    ]) else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|line| {
            let (time, name) = line.split_once(' ')?;
            Some((
                time.parse().ok()?,
                name.strip_prefix("refs/zot/")?.to_owned(),
            ))
        })
        .collect()
}

fn drop_session(git: &Git, id: &str) {
    let _ = git.output(&["update-ref", "-d", &format!("refs/zot/{id}")]);
    let _ = std::fs::remove_file(git.git_dir.join("indexes").join(id));
    let _ = std::fs::remove_file(git.git_dir.join("sessions").join(id));
}

/// Names the file of session `id` in the store (once), so its snapshots
/// are pruned when that file is gone, wherever it lives (`--session PATH`).
pub(super) fn name_session(git: &Git, id: &str, file: &Path) -> Result<(), CheckpointError> {
    let dir = git.git_dir.join("sessions");
    let marker = dir.join(id);
    if marker.exists() {
        return Ok(());
    }
    crate::private_files::private_dir(&dir).map_err(|e| CheckpointError::io(&dir, e))?;
    let file = file.canonicalize().unwrap_or_else(|_| file.to_path_buf());
    let text = file.display().to_string();
    crate::private_files::write_atomically(&marker, text.as_bytes(), 0o600)
        .map_err(|e| CheckpointError::io(&marker, e))
}

/// Bytes of the files under `dir`.
fn size_of(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            match entry.metadata() {
                Ok(meta) if meta.is_dir() => stack.push(entry.path()),
                Ok(meta) => total += meta.len(),
                Err(_) => {}
            }
        }
    }
    total
}
