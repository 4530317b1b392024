//! Sessions: one JSONL transcript per conversation under
//! `$ZOT_HOME/sessions/<hash of cwd>/`, written line by line as messages
//! arrive, so a crash loses at most the line being written. Every change to
//! the conversation is a typed line (a message, a compaction, a model
//! switch) with an id and a parent (`tree`), so replaying the file gives
//! exactly what the model saw last on the current branch. `index` keeps a
//! summary of every file for listing and finding sessions.

mod compaction;
pub mod index;
mod tree;

use std::fs::{File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::event::UsageReport;
use crate::message::{Block, Message, Role, now};
use compaction::compact;
pub use compaction::{Compaction, SUMMARY_HEADING, Served, summary_message};
use tree::{EntryKind, Tree};
pub use tree::{OutlineRow, is_prompt, outline};
use zot_protocol::sessions::TreeEntry;

/// Where callers have known it; it lives in the leaf below the session and checkpoints.
pub use crate::private_files::private_dir;

/// The file format zot writes: 2 gives every entry an `id` and a
/// `parent_id`. Files without the field (format 1, one linear conversation)
/// are read as they are; their entries get ids from their line numbers.
pub const FORMAT: u32 = 2;

/// Longest title kept, in characters (a first prompt may be pages long).
pub const TITLE_CHARS: usize = 80;

/// What a resumed session records for a tool call that never got a result.
pub const ABORTED_RESULT: &str = "tool call was aborted; no result recorded.";

/// Longest session line loaded (unbounded, a file with a 300 MB line
/// loaded at 886 MB). Larger than any line zot writes for real content: an image
/// is at most a few MiB of base64, and a model response is capped at 64 MiB
/// ([`crate::provider::MAX_RESPONSE_BYTES`]). A longer line is skipped,
/// read past without being held, with a warning naming the file and line;
/// a message keeps its place as a short note of the same role.
pub const MAX_SESSION_LINE_BYTES: usize = 128 * 1024 * 1024;

/// How much of a skipped line is kept to tell what it was (its `type` and
/// `role` come first).
const SKIPPED_PREFIX_BYTES: usize = 256;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    pub id: String,
    pub cwd: String,
    pub provider: String,
    pub model: String,
    pub started: String,
    pub version: String,
    /// [`FORMAT`] when written; 1 for files from before it.
    #[serde(default = "format_one")]
    pub format: u32,
}

fn format_one() -> u32 {
    1
}

/// A line as written: a tree entry carries its `id` and `parent_id`
/// (`null` for a root) before its type.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    parent_id: Option<Option<String>>,
    #[serde(flatten)]
    line: Line,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Line {
    Meta {
        meta: Meta,
    },
    Message {
        message: Message,
        /// Set on assistant messages (files before it have none).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        served: Option<Served>,
    },
    /// Extension bookkeeping (nimlet `entry`): kept in the file, never sent to the model.
    Extension {
        extension: String,
        data: serde_json::Value,
    },
    Compaction {
        #[serde(flatten)]
        compaction: Compaction,
        time: String,
    },
    /// The conversation goes on with another model (`/model`, RPC `set_model`).
    ModelChange {
        provider: String,
        model: String,
        time: String,
    },
    /// One model call's tokens (cache reads and writes included) and cost.
    Usage {
        model: String,
        usage: UsageReport,
    },
    /// The user named the session (`/name`, RPC `set_title`).
    Title {
        title: String,
        time: String,
    },
    /// The conversation goes on from another entry (`null`: from the
    /// start): a fork or a move in the tree. Nothing before it changes.
    Branch {
        leaf_id: Option<String>,
        time: String,
    },
    /// The snapshots before and after a prompt that changed files, or
    /// around a rewind ([`crate::checkpoint`]).
    Checkpoint {
        checkpoint: crate::checkpoint::record::Record,
    },
    /// A subagent's conversation (its prompt, its model's messages and
    /// their tool results), beside the `task` call `tool_call_id` that ran
    /// it. Not a tree entry: the model reads only the call's result, and a
    /// zot that does not know the line skips it.
    Subagent {
        tool_call_id: String,
        description: String,
        messages: Vec<Message>,
        time: String,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("{}: {error}", path.display())]
    Io { path: PathBuf, error: io::Error },
    #[error("{}: not a zot session (no meta line)", .0.display())]
    NoMeta(PathBuf),
    #[error("this run keeps no session file")]
    NoFile,
    #[error("no entry {0} in this session")]
    UnknownEntry(String),
    #[error("entry {0} is not a prompt: a fork starts before one")]
    NotAPrompt(String),
    #[error("cannot import {0}")]
    BadImport(String),
    #[error("no session matches \"{0}\" (zot sessions list --all shows them)")]
    NotFound(String),
    #[error("\"{prefix}\" matches several sessions: {}", ids.join(", "))]
    Ambiguous { prefix: String, ids: Vec<String> },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> SessionError + '_ {
    move |error| SessionError::Io {
        path: path.to_path_buf(),
        error,
    }
}

#[derive(Debug)]
pub struct Session {
    meta: Meta,
    path: PathBuf,
    file: File,
    tree: Tree,
    /// The conversation at the tree's leaf.
    messages: Vec<Message>,
    /// The name the user gave the session.
    title: Option<String>,
    /// Lines were skipped (for their size, or damaged): their results are
    /// checked again whenever the conversation is replayed.
    skipped: bool,
    /// Every call's usage added up.
    usage: UsageReport,
    /// Set when a write failed; later writes are skipped rather than
    /// interleaving a partial line.
    failed: Option<String>,
    /// What loading the file had to say (lines skipped for their size, or
    /// damaged).
    warnings: Vec<String>,
    /// Checkpoint records in file order, each with the number of tree
    /// entries written before it (what it came after).
    checkpoints: Vec<(usize, crate::checkpoint::record::Record)>,
}

/// `$ZOT_HOME/sessions/<first 8 bytes of sha256(cwd), hex>`.
pub fn sessions_dir(zot_home: &Path, cwd: &Path) -> PathBuf {
    let digest = Sha256::digest(cwd.display().to_string().as_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    zot_home.join("sessions").join(hex)
}

impl Session {
    /// Starts a new session file for `cwd`.
    pub fn create(
        zot_home: &Path,
        cwd: &Path,
        provider: &str,
        model: &str,
    ) -> Result<Self, SessionError> {
        Self::create_in(&sessions_dir(zot_home, cwd), cwd, provider, model)
    }

    /// Starts the session that follows this one (`/clear`): a new file
    /// beside it; this one stays as it is, resumable.
    pub fn successor(&self, provider: &str, model: &str) -> Result<Self, SessionError> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        Self::create_in(dir, Path::new(&self.meta.cwd), provider, model)
    }

    fn create_in(
        dir: &Path,
        cwd: &Path,
        provider: &str,
        model: &str,
    ) -> Result<Self, SessionError> {
        let dir = dir.to_path_buf();
        // Sessions hold code and often secrets: only the user may read them.
        private_dir(&dir).map_err(io_err(&dir))?;
        let started = now();
        let stamp: String = started
            .chars()
            .filter(char::is_ascii_digit)
            .take(14)
            .collect();
        let random = format!(
            "{:016x}",
            std::collections::hash_map::RandomState::new()
                .build_hasher()
                .finish()
        );
        let id = format!(
            "{}-{}-{}",
            &stamp[..8.min(stamp.len())],
            &stamp[8.min(stamp.len())..],
            &random[..8]
        );
        let path = dir.join(format!("{id}.jsonl"));
        let mut options = OpenOptions::new();
        options.append(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let file = options.open(&path).map_err(io_err(&path))?;
        let meta = Meta {
            id,
            cwd: cwd.display().to_string(),
            provider: provider.to_owned(),
            model: model.to_owned(),
            started,
            version: env!("CARGO_PKG_VERSION").to_owned(),
            format: FORMAT,
        };
        let mut session = Self {
            meta: meta.clone(),
            path,
            file,
            tree: Tree::default(),
            messages: Vec::new(),
            title: None,
            skipped: false,
            usage: UsageReport::default(),
            failed: None,
            warnings: Vec::new(),
            checkpoints: Vec::new(),
        };
        session.write(&Record::plain(Line::Meta { meta }));
        Ok(session)
    }

    /// Opens an existing session to continue it. Unparsable lines (a torn
    /// last line after a crash) are skipped; tool calls that never got a
    /// result are closed with an error result, written to the file too.
    pub fn open(path: &Path) -> Result<Self, SessionError> {
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(path)
            .map_err(io_err(path))?;
        let loaded = load(path, &file)?;
        // A torn last line must not swallow the next one.
        if loaded.torn {
            file.seek(SeekFrom::End(0)).map_err(io_err(path))?;
            file.write_all(b"\n").map_err(io_err(path))?;
        }
        let mut session = Self {
            meta: loaded.meta,
            path: path.to_path_buf(),
            file,
            tree: loaded.tree,
            messages: Vec::new(),
            title: loaded.title,
            skipped: loaded.skipped,
            usage: loaded.usage,
            failed: None,
            warnings: loaded.warnings,
            checkpoints: loaded.checkpoints,
        };
        session.replay();
        Ok(session)
    }

    /// The newest session of `cwd` ([`recency`]).
    /// The session files of `cwd`, the most recently used first.
    pub fn newest_first(zot_home: &Path, cwd: &Path) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(sessions_dir(zot_home, cwd)) else {
            return Vec::new();
        };
        let mut found: Vec<_> = entries
            .filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
            .filter_map(|e| Some((recency(&e.metadata().ok()?)?, e.path())))
            .collect();
        found.sort_unstable_by(|a, b| b.cmp(a));
        found.into_iter().map(|(_, path)| path).collect()
    }

    pub fn id(&self) -> &str {
        &self.meta.id
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Every message from the root to the leaf, those a compaction
    /// summarised included (what the model no longer sees, such as the
    /// `todo_write` call that set the plan).
    pub fn history(&self) -> Vec<&Message> {
        self.tree.history()
    }

    /// What loading the file had to say: each line skipped for its size or
    /// damaged.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The first write error, if any.
    pub fn failure(&self) -> Option<&str> {
        self.failed.as_deref()
    }

    /// Appends a message and writes it at once.
    pub fn append(&mut self, message: &Message) {
        self.append_served(message, None);
    }

    /// Appends a message with who produced it (assistant messages).
    pub fn append_served(&mut self, message: &Message, served: Option<Served>) {
        self.messages.push(message.clone());
        self.add(
            EntryKind::Message(message.clone()),
            Line::Message {
                message: message.clone(),
                served,
            },
        );
    }

    /// Records a compaction and applies it to the conversation.
    pub fn append_compaction(&mut self, compaction: Compaction) {
        compact(&mut self.messages, &compaction);
        self.add(
            EntryKind::Compaction(compaction.clone()),
            Line::Compaction {
                compaction,
                time: now(),
            },
        );
    }

    /// Records that the conversation goes on with `provider`/`model`.
    pub fn append_model_change(&mut self, provider: &str, model: &str) {
        self.add(
            EntryKind::ModelChange {
                provider: provider.to_owned(),
                model: model.to_owned(),
            },
            Line::ModelChange {
                provider: provider.to_owned(),
                model: model.to_owned(),
                time: now(),
            },
        );
    }

    /// Every call's usage so far, this run's and earlier runs'.
    pub fn usage(&self) -> UsageReport {
        self.usage
    }

    /// Records one model call's usage as
    /// `{"type":"usage","model":…,"usage":{input,output,reasoning,cache_read,cache_write,cost_usd}}`.
    pub fn append_usage(&mut self, model: &str, usage: UsageReport) {
        self.usage += usage;
        self.write(&Record::plain(Line::Usage {
            model: model.to_owned(),
            usage,
        }));
    }

    /// Records extension data (nimlet `entry`) as
    /// `{"type":"extension","extension":…,"data":…}`.
    pub fn append_extension(&mut self, extension: &str, data: serde_json::Value) {
        self.add(
            EntryKind::Extension {
                extension: extension.to_owned(),
            },
            Line::Extension {
                extension: extension.to_owned(),
                data,
            },
        );
    }

    /// Records the conversation of the subagent that the `task` call
    /// `tool_call_id` ran.
    pub fn append_subagent(&mut self, tool_call_id: &str, description: &str, messages: &[Message]) {
        self.write(&Record::plain(Line::Subagent {
            tool_call_id: tool_call_id.to_owned(),
            description: description.to_owned(),
            messages: messages.to_vec(),
            time: now(),
        }));
    }

    /// The session's name: the one the user gave it, else its first
    /// prompt's first line, trimmed ("" before any prompt).
    pub fn title(&self) -> String {
        title_of(self.title.as_deref(), &self.tree)
    }

    /// Names the session (`/name`, RPC `set_title`).
    pub fn set_title(&mut self, title: &str) {
        let title = shorten(title);
        self.title = Some(title.clone());
        self.write(&Record::plain(Line::Title { title, time: now() }));
    }

    /// The checkpoints recorded, in file order, each with the number of
    /// entries written before it.
    pub fn checkpoints(&self) -> &[(usize, crate::checkpoint::record::Record)] {
        &self.checkpoints
    }

    /// Records a checkpoint (not a tree entry: the conversation is unchanged).
    pub fn append_checkpoint(&mut self, checkpoint: crate::checkpoint::record::Record) {
        self.checkpoints.push((self.tree.len(), checkpoint.clone()));
        self.write(&Record::plain(Line::Checkpoint { checkpoint }));
    }

    /// The whole text of the prompt `entry_id`.
    pub fn prompt_text(&self, entry_id: &str) -> Option<String> {
        self.tree.prompt_text(self.tree.find(entry_id)?)
    }

    /// The id of the entry the conversation goes on from (`None` before
    /// the first entry, or after a fork before the first prompt).
    pub fn leaf_id(&self) -> Option<&str> {
        self.tree.leaf_id()
    }

    /// Every entry of the session, in the order they were written.
    pub fn entries(&self) -> Vec<TreeEntry> {
        self.tree.describe()
    }

    /// Starts a new branch before the prompt `entry_id`: the conversation
    /// goes on from the entry before it, which keeps every earlier entry as
    /// it was (so the shared prefix is sent byte for byte as before).
    /// Returns the prompt's text, to edit and send again. This is also the
    /// undo of "rewind the conversation".
    pub fn fork_before(&mut self, entry_id: &str) -> Result<String, SessionError> {
        let index = self
            .tree
            .find(entry_id)
            .ok_or_else(|| SessionError::UnknownEntry(entry_id.to_owned()))?;
        let text = self
            .tree
            .prompt_text(index)
            .ok_or_else(|| SessionError::NotAPrompt(entry_id.to_owned()))?;
        self.branch_to(self.tree.entry(index).parent);
        Ok(text)
    }

    /// Moves the conversation to `entry_id`: for a prompt, to the end of
    /// the turn it began (its answer); for any other entry, to it.
    pub fn move_to(&mut self, entry_id: &str) -> Result<(), SessionError> {
        let index = self
            .tree
            .find(entry_id)
            .ok_or_else(|| SessionError::UnknownEntry(entry_id.to_owned()))?;
        let target = match self.tree.prompt_text(index) {
            Some(_) => self.tree.turn_end(index),
            None => index,
        };
        self.branch_to(Some(target));
        Ok(())
    }

    fn branch_to(&mut self, leaf: Option<usize>) {
        self.tree.set_leaf(leaf);
        let leaf_id = self.tree.leaf_id().map(str::to_owned);
        self.write(&Record::plain(Line::Branch {
            leaf_id,
            time: now(),
        }));
        self.replay();
    }

    /// The conversation at the leaf, rebuilt from the tree; tool calls it
    /// ends with that never got a result are closed with error results.
    fn replay(&mut self) {
        self.messages = self.tree.conversation();
        if self.skipped {
            orphans_to_text(&mut self.messages);
        }
        if let Some(closing) = unanswered(&self.messages) {
            self.append(&closing);
        }
    }

    /// Makes what was written so far durable (the end of each turn).
    pub fn sync(&mut self) {
        if self.failed.is_none()
            && let Err(e) = self.file.sync_data()
        {
            self.failed = Some(format!("{}: {e}", self.path.display()));
        }
    }

    /// Adds a tree entry under the leaf and writes its line.
    fn add(&mut self, kind: EntryKind, line: Line) {
        let id = loop {
            let id = random_hex();
            if !self.tree.contains(&id) {
                break id;
            }
        };
        let parent = self.tree.leaf();
        let parent_id = self.tree.leaf_id().map(str::to_owned);
        self.tree.push(id.clone(), parent, kind);
        self.write(&Record {
            id: Some(id),
            parent_id: Some(parent_id),
            line,
        });
    }

    fn write(&mut self, record: &Record) {
        if self.failed.is_some() {
            return;
        }
        let result = serde_json::to_vec(record)
            .map_err(io::Error::from)
            .and_then(|mut bytes| {
                bytes.push(b'\n');
                self.file.write_all(&bytes)?;
                self.file.flush()
            });
        if let Err(e) = result {
            self.failed = Some(format!("{}: {e}", self.path.display()));
        }
    }
}

impl Record {
    /// A line that is not a tree entry.
    fn plain(line: Line) -> Self {
        Self {
            id: None,
            parent_id: None,
            line,
        }
    }
}

/// How recent a session file is, the greater the newer: its modification
/// time, then its creation time, for two modified within one tick of the
/// file system's clock (a `/clear` writes the old session's last entries,
/// and the prompt after it the new one's; a file system without creation
/// times orders by the first alone). `None` without a modification time.
/// `-c` ([`Session::newest_first`]) and every list of sessions ([`index::list`])
/// order by it, so they agree on which is the newest.
pub(crate) fn recency(metadata: &std::fs::Metadata) -> Option<(SystemTime, SystemTime)> {
    let created = metadata.created().unwrap_or(SystemTime::UNIX_EPOCH);
    Some((metadata.modified().ok()?, created))
}

/// Eight random hex digits: an entry id, unique within its session.
fn random_hex() -> String {
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    format!("{:08x}", random & 0xffff_ffff)
}

/// A title: the first non-empty line, trimmed, at most [`TITLE_CHARS`].
fn shorten(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    match line.char_indices().nth(TITLE_CHARS) {
        Some((cut, _)) => format!("{}…", line[..cut].trim_end()),
        None => line.to_owned(),
    }
}

fn title_of(named: Option<&str>, tree: &Tree) -> String {
    match named {
        Some(title) => title.to_owned(),
        None => tree
            .first_prompt()
            .as_deref()
            .map(shorten)
            .unwrap_or_default(),
    }
}

/// `"parent_id": null` is a root, which plain `Option<Option<_>>` would
/// read as a missing field.
fn present<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(deserializer).map(Some)
}

/// A session file read: what [`Session::open`] continues and the index
/// summarises.
struct Loaded {
    meta: Meta,
    tree: Tree,
    title: Option<String>,
    usage: UsageReport,
    warnings: Vec<String>,
    /// Lines were skipped for their size, or damaged.
    skipped: bool,
    /// The last line has no newline (a crash mid-write).
    torn: bool,
    checkpoints: Vec<(usize, crate::checkpoint::record::Record)>,
}

/// Reads a session file line by line into its tree. Lines that do not
/// parse (a torn last line, a newer zot's) are skipped; a line over
/// [`MAX_SESSION_LINE_BYTES`] keeps its place as a note (see
/// [`placeholder`]).
fn load(path: &Path, file: &File) -> Result<Loaded, SessionError> {
    let mut meta = None;
    let mut tree = Tree::default();
    let mut title = None;
    let mut warnings = Vec::new();
    let mut usage = UsageReport::default();
    let mut reader = io::BufReader::with_capacity(64 * 1024, file);
    let mut line = Vec::new();
    let mut number = 0u64;
    let mut torn = false;
    let mut checkpoints = Vec::new();
    loop {
        let (skipped, ended) = match read_line(&mut reader, &mut line).map_err(io_err(path))? {
            LineRead::End => break,
            LineRead::Line { ended } => (None, ended),
            LineRead::TooLong { bytes, ended } => (Some(bytes), ended),
        };
        number += 1;
        torn = !ended;
        if let Some(bytes) = skipped {
            warnings.push(format!(
                "{}: line {number} ({bytes} bytes) is larger than {} MiB and was not loaded",
                path.display(),
                MAX_SESSION_LINE_BYTES >> 20
            ));
            let (id, parent_id) = prefix_ids(&line);
            let parent = place(&tree, parent_id);
            let before = parent.and_then(|p| match &tree.entry(p).kind {
                EntryKind::Message(message) => Some(message),
                _ => None,
            });
            if let Some(note) = placeholder(&line, bytes, before) {
                let id = entry_id(&tree, id, number);
                tree.push(id, parent, EntryKind::Message(note));
            }
            continue;
        }
        // A complete line that is not JSON was damaged (cut, overwritten):
        // said, where a torn last line (a crash mid-write) is not.
        let damaged = |warnings: &mut Vec<String>| {
            if ended {
                warnings.push(format!(
                    "{}: line {number} is damaged (not JSON) and was not loaded",
                    path.display()
                ));
            }
        };
        let Ok(text) = std::str::from_utf8(&line) else {
            damaged(&mut warnings);
            continue;
        };
        if text.trim().is_empty() {
            continue;
        }
        // Lines of a newer zot are skipped, like a torn last line.
        let Ok(record) = serde_json::from_str::<Record>(text) else {
            if serde_json::from_str::<serde::de::IgnoredAny>(text).is_err() {
                damaged(&mut warnings);
            }
            continue;
        };
        let kind = match record.line {
            Line::Meta { meta: m } => {
                meta = meta.or(Some(m));
                continue;
            }
            Line::Usage { usage: u, .. } => {
                usage += u;
                continue;
            }
            Line::Title { title: t, .. } => {
                title = Some(t);
                continue;
            }
            Line::Checkpoint { checkpoint } => {
                checkpoints.push((tree.len(), checkpoint));
                continue;
            }
            Line::Subagent { .. } => continue,
            Line::Branch { leaf_id, .. } => {
                match leaf_id {
                    None => tree.set_leaf(None),
                    Some(id) => {
                        if let Some(index) = tree.find(&id) {
                            tree.set_leaf(Some(index));
                        }
                    }
                }
                continue;
            }
            Line::Message { message, .. } => EntryKind::Message(message),
            Line::Compaction { compaction, .. } => EntryKind::Compaction(compaction),
            Line::ModelChange {
                provider, model, ..
            } => EntryKind::ModelChange { provider, model },
            Line::Extension { extension, .. } => EntryKind::Extension { extension },
        };
        let parent = place(&tree, record.parent_id);
        let id = entry_id(&tree, record.id, number);
        tree.push(id, parent, kind);
    }
    let meta = meta.ok_or_else(|| SessionError::NoMeta(path.to_path_buf()))?;
    Ok(Loaded {
        meta,
        tree,
        title,
        usage,
        skipped: !warnings.is_empty(),
        warnings,
        torn,
        checkpoints,
    })
}

/// Where an entry read from a file hangs: its `parent_id` (`null`: a
/// root); without the field (format 1) or with one that is not in the
/// file, under the entry before it.
fn place(tree: &Tree, parent_id: Option<Option<String>>) -> Option<usize> {
    match parent_id {
        Some(None) => None,
        Some(Some(id)) => tree.find(&id).or(tree.leaf()),
        None => tree.leaf(),
    }
}

/// An entry's id as written, or `L<line number>` for a format-1 line (the
/// same on every read, so later lines may name it as their parent).
fn entry_id(tree: &Tree, id: Option<String>, number: u64) -> String {
    match id {
        Some(id) if !tree.contains(&id) => id,
        _ => format!("L{number}"),
    }
}

/// The `id` and `parent_id` at the start of a line skipped for its size.
fn prefix_ids(prefix: &[u8]) -> (Option<String>, Option<Option<String>>) {
    let prefix = String::from_utf8_lossy(prefix);
    let quoted = |key: &str| -> Option<String> {
        let start = prefix.find(key)? + key.len();
        let rest = &prefix[start..];
        Some(rest[..rest.find('"')?].to_owned())
    };
    let id = quoted(r#""id":""#);
    let parent = if prefix.contains(r#""parent_id":null"#) {
        Some(None)
    } else {
        quoted(r#""parent_id":""#).map(Some)
    };
    (id, parent)
}

impl Drop for Session {
    /// A session nobody said anything in leaves no file behind.
    fn drop(&mut self) {
        if !self.tree.has_messages() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// How one line of a session file was read.
#[derive(Clone, Copy)]
enum LineRead {
    End,
    /// In the buffer, without its newline (`ended`: it had one).
    Line {
        ended: bool,
    },
    /// Over [`MAX_SESSION_LINE_BYTES`]: read past; the buffer holds its
    /// first [`SKIPPED_PREFIX_BYTES`].
    TooLong {
        bytes: usize,
        ended: bool,
    },
}

/// Reads the next line into `line`, holding at most
/// [`MAX_SESSION_LINE_BYTES`] of it.
fn read_line(reader: &mut impl io::BufRead, line: &mut Vec<u8>) -> io::Result<LineRead> {
    line.clear();
    let mut bytes = 0usize;
    let mut too_long = false;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(match (bytes, too_long) {
                (0, _) => LineRead::End,
                (_, false) => LineRead::Line { ended: false },
                (_, true) => LineRead::TooLong {
                    bytes,
                    ended: false,
                },
            });
        }
        let (part, ended) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..i], true),
            None => (chunk, false),
        };
        let used = part.len() + usize::from(ended);
        bytes += part.len();
        if !too_long && bytes > MAX_SESSION_LINE_BYTES {
            too_long = true;
            line.truncate(SKIPPED_PREFIX_BYTES);
            line.shrink_to_fit();
        }
        if too_long {
            let room = SKIPPED_PREFIX_BYTES.saturating_sub(line.len());
            line.extend_from_slice(&part[..room.min(part.len())]);
        } else {
            line.extend_from_slice(part);
        }
        reader.consume(used);
        if ended {
            return Ok(if too_long {
                LineRead::TooLong { bytes, ended }
            } else {
                LineRead::Line { ended }
            });
        }
    }
}

/// What stands in for a skipped line that held a message: a note of the
/// same role, so the conversation keeps its shape. A tool message's note
/// answers the calls of the message before it with error results.
fn placeholder(prefix: &[u8], bytes: usize, before: Option<&Message>) -> Option<Message> {
    let prefix = String::from_utf8_lossy(prefix);
    if !prefix.contains(r#""type":"message""#) {
        return None;
    }
    let note = format!(
        "[zot: this message ({bytes} bytes) was larger than {} MiB and was not loaded]",
        MAX_SESSION_LINE_BYTES >> 20
    );
    let role = ["assistant", "tool", "user"]
        .into_iter()
        .find(|role| prefix.contains(&format!(r#""role":"{role}""#)))?;
    Some(match role {
        "assistant" => Message::new(Role::Assistant, vec![Block::Text { text: note }]),
        "tool" => {
            let calls: Vec<Block> = before
                .filter(|m| m.role == Role::Assistant)
                .into_iter()
                .flat_map(Message::tool_calls)
                .map(|(id, _, _)| Block::ToolResult {
                    call_id: id.to_owned(),
                    is_error: true,
                    content: vec![Block::Text { text: note.clone() }],
                })
                .collect();
            if calls.is_empty() {
                return None;
            }
            Message::new(Role::Tool, calls)
        }
        _ => Message::new(Role::User, vec![Block::Text { text: note }]),
    })
}

/// Tool results whose call is not in the message before them (it was in a
/// skipped line) become text, which every provider accepts.
fn orphans_to_text(messages: &mut [Message]) {
    for i in 1..messages.len() {
        let calls: Vec<String> = messages[i - 1]
            .tool_calls()
            .map(|(id, _, _)| id.to_owned())
            .collect();
        for block in &mut messages[i].content {
            if let Block::ToolResult {
                call_id, content, ..
            } = block
                && !calls.contains(call_id)
            {
                let text = content
                    .iter()
                    .filter_map(|b| match b {
                        Block::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                *block = Block::Text {
                    text: format!("[result of a tool call that was not loaded] {text}"),
                };
            }
        }
    }
}

/// Error results for the tool calls of the last assistant message that
/// have none, as one tool message; `None` when every call was answered.
fn unanswered(messages: &[Message]) -> Option<Message> {
    let (index, last_assistant) = messages
        .iter()
        .enumerate()
        .rev()
        .find(|(_, m)| m.role == Role::Assistant)?;
    let answered: Vec<&str> = messages[index + 1..]
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            Block::ToolResult { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    let missing: Vec<Block> = last_assistant
        .tool_calls()
        .filter(|(id, _, _)| !answered.contains(id))
        .map(|(id, _, _)| Block::ToolResult {
            call_id: id.to_owned(),
            is_error: true,
            content: vec![Block::Text {
                text: ABORTED_RESULT.to_owned(),
            }],
        })
        .collect();
    (!missing.is_empty()).then(|| Message::new(Role::Tool, missing))
}
