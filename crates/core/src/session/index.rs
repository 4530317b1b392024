//! The index of every session under `$ZOT_HOME/sessions/index.json`: one
//! summary per file (title, dates, directory, model, counts, cost), kept
//! with the file's size and modification time. A listing stats each file
//! and reads again only those that disagree with their entry, so listing
//! a thousand sessions reads one small JSON file, not a thousand
//! transcripts. The index is a cache: losing it costs one slow listing.

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use zot_protocol::sessions::SessionSummary;

use super::tree::Tree;
use super::{EntryKind, SessionError, io_err, load, private_dir, recency, sessions_dir, title_of};

/// The index's file name under `$ZOT_HOME/sessions/`.
pub const INDEX_FILE: &str = "index.json";

/// Bumped when [`Indexed`] changes: an index of another format is rebuilt.
const INDEX_FORMAT: u32 = 1;

#[derive(Debug, Default, Serialize, Deserialize)]
struct IndexFile {
    format: u32,
    /// By session file path.
    sessions: BTreeMap<String, Indexed>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Indexed {
    size: u64,
    modified_ns: u64,
    summary: SessionSummary,
}

/// The sessions of `cwd` (every directory's when `None`), newest first.
/// Files that disagree with the index are read again and the index is
/// rewritten; a file that is not a session is left out.
pub fn list(zot_home: &Path, cwd: Option<&Path>) -> Result<Vec<SessionSummary>, SessionError> {
    let root = zot_home.join("sessions");
    let dirs: Vec<PathBuf> = match cwd {
        Some(cwd) => vec![sessions_dir(zot_home, cwd)],
        None => match std::fs::read_dir(&root) {
            Ok(entries) => entries
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect(),
            Err(_) => Vec::new(),
        },
    };
    let index_path = root.join(INDEX_FILE);
    let mut index = read_index(&index_path);
    let mut changed = false;
    let mut seen = HashSet::new();
    let mut found = Vec::new();
    for dir in &dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.extension().is_none_or(|x| x != "jsonl") {
                continue;
            }
            let Ok(metadata) = entry.metadata() else {
                continue;
            };
            let (size, modified_ns) = (metadata.len(), nanos(metadata.modified().ok()));
            let key = path.display().to_string();
            seen.insert(key.clone());
            let fresh = index
                .sessions
                .get(&key)
                .filter(|i| i.size == size && i.modified_ns == modified_ns);
            let indexed = match fresh {
                Some(indexed) => indexed.clone(),
                None => {
                    changed = true;
                    match summarize(&path, metadata.modified().ok()) {
                        Ok(summary) => Indexed {
                            size,
                            modified_ns,
                            summary,
                        },
                        Err(e) => {
                            tracing::debug!(error = %e, "not a session; left out of the index");
                            index.sessions.remove(&key);
                            continue;
                        }
                    }
                }
            };
            index.sessions.insert(key, indexed.clone());
            // A session nobody has said anything in yet (a running zot's
            // new one) is not one to find.
            if !indexed.summary.title.is_empty() || indexed.summary.message_count > 0 {
                found.push((recency(&metadata), indexed.summary));
            }
        }
    }
    // Entries of files that are gone, in the directories looked at.
    let before = index.sessions.len();
    index.sessions.retain(|key, _| {
        seen.contains(key) || !dirs.iter().any(|dir| Path::new(key).starts_with(dir))
    });
    changed |= index.sessions.len() != before;
    if changed {
        write_index(&root, &index_path, &mut index);
    }
    found.sort_by_key(|(recency, _)| std::cmp::Reverse(*recency));
    Ok(found.into_iter().map(|(_, summary)| summary).collect())
}

/// The session whose id is `query` or starts with it, in any directory.
pub fn find(zot_home: &Path, query: &str) -> Result<SessionSummary, SessionError> {
    let all = list(zot_home, None)?;
    if let Some(exact) = all.iter().find(|s| s.id == query) {
        return Ok(exact.clone());
    }
    let mut matching: Vec<SessionSummary> = all
        .into_iter()
        .filter(|s| !query.is_empty() && s.id.starts_with(query))
        .collect();
    match matching.len() {
        0 => Err(SessionError::NotFound(query.to_owned())),
        1 => Ok(matching.remove(0)),
        _ => Err(SessionError::Ambiguous {
            prefix: query.to_owned(),
            ids: matching.into_iter().map(|s| s.id).collect(),
        }),
    }
}

/// Deletes a session's file and its saved tool outputs.
pub fn remove(zot_home: &Path, summary: &SessionSummary) -> Result<(), SessionError> {
    let path = Path::new(&summary.path);
    std::fs::remove_file(path).map_err(io_err(path))?;
    let outputs =
        crate::tools::output::session_dir(&crate::tools::output::root(zot_home), &summary.id);
    if outputs.is_dir() {
        std::fs::remove_dir_all(&outputs).map_err(io_err(&outputs))?;
    }
    Ok(())
}

/// Deletes every session not changed for `age`; returns those deleted.
pub fn prune(zot_home: &Path, age: Duration) -> Result<Vec<SessionSummary>, SessionError> {
    let cutoff = SystemTime::now().checked_sub(age).unwrap_or(UNIX_EPOCH);
    let mut removed = Vec::new();
    for summary in list(zot_home, None)? {
        let updated = humantime::parse_rfc3339(&summary.updated).unwrap_or(UNIX_EPOCH);
        if updated < cutoff {
            remove(zot_home, &summary)?;
            removed.push(summary);
        }
    }
    if !removed.is_empty() {
        // The next listing drops them from the index.
        list(zot_home, None)?;
    }
    Ok(removed)
}

/// A summary of the session file at `path`.
pub fn summarize(
    path: &Path,
    modified: Option<SystemTime>,
) -> Result<SessionSummary, SessionError> {
    let file = File::open(path).map_err(io_err(path))?;
    let loaded = load(path, &file)?;
    let (provider, model) = match loaded.tree.model() {
        Some((provider, model)) => (provider.to_owned(), model.to_owned()),
        None => (loaded.meta.provider.clone(), loaded.meta.model.clone()),
    };
    Ok(SessionSummary {
        id: loaded.meta.id,
        path: path.display().to_string(),
        cwd: loaded.meta.cwd,
        title: title_of(loaded.title.as_deref(), &loaded.tree),
        started: loaded.meta.started,
        updated: modified
            .map(|m| humantime::format_rfc3339_seconds(m).to_string())
            .unwrap_or_default(),
        provider,
        model,
        message_count: message_count(&loaded.tree),
        cost_usd: loaded.usage.cost_usd,
    })
}

/// The number of messages the model sees at the leaf, without copying them.
fn message_count(tree: &Tree) -> usize {
    let mut count = 0usize;
    for index in tree.path() {
        match &tree.entry(index).kind {
            EntryKind::Message(_) => count += 1,
            // The summary, then the messages kept.
            EntryKind::Compaction(c) => count = 1 + count.saturating_sub(c.first_kept),
            EntryKind::ModelChange { .. } | EntryKind::Extension { .. } => {}
        }
    }
    count
}

fn nanos(time: Option<SystemTime>) -> u64 {
    time.and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// The index as saved; empty when missing, unreadable or of another format.
fn read_index(path: &Path) -> IndexFile {
    std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<IndexFile>(&bytes).ok())
        .filter(|index| index.format == INDEX_FORMAT)
        .unwrap_or_default()
}

/// Replaces the index through a temporary file, so a reader never sees half
/// of one. Best effort: without it, listings are only slower.
fn write_index(root: &Path, path: &Path, index: &mut IndexFile) {
    index.format = INDEX_FORMAT;
    let tmp = root.join(format!(".{INDEX_FILE}.{}.tmp", std::process::id()));
    let result = (|| -> std::io::Result<()> {
        private_dir(root)?;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut file = std::io::BufWriter::new(options.open(&tmp)?);
        serde_json::to_writer(&mut file, index)?;
        file.into_inner().map_err(|e| e.into_error())?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        tracing::warn!(error = %e, path = %path.display(), "cannot write the session index");
    }
}

/// How long ago an RFC 3339 time was, for listings: "just now", "5 min
/// ago", "3 h ago", "yesterday", "4 days ago", else its date.
pub fn ago(time: &str, now: SystemTime) -> String {
    let Ok(then) = humantime::parse_rfc3339(time) else {
        return time.to_owned();
    };
    let secs = now.duration_since(then).map_or(0, |d| d.as_secs());
    match secs {
        0..60 => "just now".to_owned(),
        60..3600 => format!("{} min ago", secs / 60),
        3600..86_400 => format!("{} h ago", secs / 3600),
        86_400..172_800 => "yesterday".to_owned(),
        172_800..2_592_000 => format!("{} days ago", secs / 86_400),
        _ => time.get(..10).unwrap_or(time).to_owned(),
    }
}

/// A session file's entries and the id of its leaf, read without changing
/// the file (`zot sessions show`).
pub fn read_tree(
    path: &Path,
) -> Result<(Option<String>, Vec<zot_protocol::sessions::TreeEntry>), SessionError> {
    let file = File::open(path).map_err(io_err(path))?;
    let loaded = load(path, &file)?;
    Ok((
        loaded.tree.leaf_id().map(str::to_owned),
        loaded.tree.describe(),
    ))
}

/// One entry of a session's current branch, for an export.
#[derive(Debug, Clone)]
pub enum BranchItem {
    Message(crate::message::Message),
    /// A compaction's summary: the messages before it were summarised.
    Compaction(String),
    /// `provider/model`.
    ModelChange(String),
}

/// A session's current branch read without changing the file (`zot
/// sessions export`): every entry from the root to the leaf as written
/// (compactions as notes, not applied), the prompts of other branches,
/// and every call's usage added up.
#[derive(Debug, Clone)]
pub struct Branch {
    pub meta: super::Meta,
    pub title: String,
    pub items: Vec<BranchItem>,
    /// Prompts on no current path: the other branches.
    pub others: Vec<super::OutlineRow>,
    pub usage: crate::event::UsageReport,
}

pub fn read_branch(path: &Path) -> Result<Branch, SessionError> {
    let file = File::open(path).map_err(io_err(path))?;
    let loaded = load(path, &file)?;
    let tree = &loaded.tree;
    let items = tree
        .path()
        .into_iter()
        .filter_map(|index| match &tree.entry(index).kind {
            EntryKind::Message(message) => Some(BranchItem::Message(message.clone())),
            EntryKind::Compaction(c) => Some(BranchItem::Compaction(c.summary.clone())),
            EntryKind::ModelChange { provider, model } => {
                Some(BranchItem::ModelChange(format!("{provider}/{model}")))
            }
            EntryKind::Extension { .. } => None,
        })
        .collect();
    let others = super::outline(&tree.describe(), tree.leaf_id())
        .into_iter()
        .filter(|row| !row.on_path)
        .collect();
    Ok(Branch {
        title: title_of(loaded.title.as_deref(), tree),
        meta: loaded.meta,
        items,
        others,
        usage: loaded.usage,
    })
}

/// Takes a session file in (`zot sessions import`): it must read as a
/// session (a meta line, entries that parse) with an id that is a plain
/// file name; it is copied, never linked, among `cwd`'s sessions, and
/// refused when a session of that id is already there.
pub fn import(zot_home: &Path, cwd: &Path, file: &Path) -> Result<SessionSummary, SessionError> {
    let source = File::open(file).map_err(io_err(file))?;
    let loaded = load(file, &source)?;
    let id = &loaded.meta.id;
    let plain = !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'));
    if !plain {
        return Err(SessionError::BadImport(format!(
            "{}: the session id {id:?} is not a plain name",
            file.display()
        )));
    }
    if !tree_has_messages(&loaded.tree) {
        return Err(SessionError::BadImport(format!(
            "{}: the session holds no messages",
            file.display()
        )));
    }
    if find(zot_home, id).is_ok_and(|s| s.id == *id) {
        return Err(SessionError::BadImport(format!(
            "a session {id} is already here (zot sessions show {id})"
        )));
    }
    let dir = sessions_dir(zot_home, cwd);
    private_dir(&dir).map_err(io_err(&dir))?;
    let target = dir.join(format!("{id}.jsonl"));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut out = options.open(&target).map_err(io_err(&target))?;
    let mut input = File::open(file).map_err(io_err(file))?;
    if let Err(e) = std::io::copy(&mut input, &mut out).and_then(|_| out.sync_all()) {
        let _ = std::fs::remove_file(&target);
        return Err(SessionError::Io {
            path: target,
            error: e,
        });
    }
    let modified = out.metadata().ok().and_then(|m| m.modified().ok());
    summarize(&target, modified)
}

fn tree_has_messages(tree: &Tree) -> bool {
    tree.has_messages()
}
