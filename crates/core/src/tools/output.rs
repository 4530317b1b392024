//! Full tool outputs: what the model gets of a tool's result is capped, the
//! whole result goes to a file the model can read later. The files live in
//! `$ZOT_HOME/tool-output/<session-id>/` (directories 0700, files 0600),
//! are pruned at start-up once older than [`TOOL_OUTPUT_MAX_AGE`], and a
//! run without a session file deletes its own when it ends (see
//! `Agent`'s `Drop`).

use std::fs::File;
use std::io::{self, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::message::Block;
use crate::tool::ToolOutput;

/// The folder under `$ZOT_HOME` that holds full tool outputs.
pub const TOOL_OUTPUT_DIR: &str = "tool-output";

/// Full outputs older than this are deleted at start-up.
pub const TOOL_OUTPUT_MAX_AGE: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// Most bytes of text the model gets from one tool result, from any tool.
/// The built-in tools cut their own output to about 51 KB in a way that
/// suits them (bash keeps head and tail, read pages); this cap is above
/// that, so it only cuts what they do not (extension tools, long edit
/// diffs): it keeps the start and ends with [`omitted_note`].
pub const MAX_TOOL_RESULT_BYTES: usize = 64 * 1024;

/// Most bytes one saved full output keeps: its first and last halves, with
/// a line saying how much was cut between them ([`cut_note`]). `cat
/// /dev/zero` through bash wrote 1.4 GB in 8 s before this cap;
/// 64 MiB is far more than anyone reads back, and a build log's start (the
/// first error) and end (the summary) both survive.
pub const MAX_SAVED_OUTPUT_BYTES: u64 = 64 * 1024 * 1024;

/// What each end of a cut saved output keeps.
const SAVED_HALF: u64 = MAX_SAVED_OUTPUT_BYTES / 2;

/// Write buffer of a saved output (and of its tail ring).
const SAVE_BUFFER: usize = 64 * 1024;

/// The line a cut saved output holds where `cut` bytes were left out.
pub fn cut_note(cut: u64) -> String {
    format!(
        "\n[zot: {cut} bytes cut here; a saved output keeps its first and last {} MiB]\n",
        SAVED_HALF >> 20
    )
}

/// A full output being saved while it is produced, within
/// [`MAX_SAVED_OUTPUT_BYTES`] on disk at any time: the first half goes to
/// the file as it comes, everything after it into a ring file of the same
/// size beside it (`<file>.tail`, overwritten from its start once full),
/// which [`SavedOutput::finish`] appends in order after the [`cut_note`].
pub(crate) struct SavedOutput {
    path: PathBuf,
    file: tokio::io::BufWriter<tokio::fs::File>,
    /// Bytes given so far.
    written: u64,
    ring: Option<tokio::io::BufWriter<tokio::fs::File>>,
}

impl SavedOutput {
    pub(crate) fn new(path: PathBuf, file: File) -> Self {
        Self {
            path,
            file: tokio::io::BufWriter::with_capacity(SAVE_BUFFER, tokio::fs::File::from_std(file)),
            written: 0,
            ring: None,
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    fn ring_path(&self) -> PathBuf {
        let mut name = self.path.clone().into_os_string();
        name.push(".tail");
        PathBuf::from(name)
    }

    pub(crate) async fn write(&mut self, mut chunk: &[u8]) -> io::Result<()> {
        use tokio::io::{AsyncSeekExt as _, AsyncWriteExt as _};
        if self.written < SAVED_HALF {
            let n = usize::try_from(SAVED_HALF - self.written)
                .unwrap_or(usize::MAX)
                .min(chunk.len());
            self.file.write_all(&chunk[..n]).await?;
            self.written += n as u64;
            chunk = &chunk[n..];
        }
        while !chunk.is_empty() {
            let at = (self.written - SAVED_HALF) % SAVED_HALF;
            let ring = match &mut self.ring {
                Some(ring) => ring,
                None => {
                    let file = std::fs::OpenOptions::new()
                        .read(true)
                        .write(true)
                        .create_new(true)
                        .mode(0o600)
                        .open(self.ring_path())?;
                    self.ring.insert(tokio::io::BufWriter::with_capacity(
                        SAVE_BUFFER,
                        tokio::fs::File::from_std(file),
                    ))
                }
            };
            if at == 0 && self.written > SAVED_HALF {
                ring.seek(io::SeekFrom::Start(0)).await?;
            }
            let n = usize::try_from(SAVED_HALF - at)
                .unwrap_or(usize::MAX)
                .min(chunk.len());
            ring.write_all(&chunk[..n]).await?;
            self.written += n as u64;
            chunk = &chunk[n..];
        }
        Ok(())
    }

    /// Appends the kept end (after the cut note when something was cut) and
    /// flushes; the ring file goes.
    pub(crate) async fn finish(mut self) -> io::Result<()> {
        use tokio::io::AsyncWriteExt as _;
        let appended = match self.ring.take() {
            Some(mut ring) => {
                let flushed = ring.flush().await;
                drop(ring);
                let appended = match flushed {
                    Ok(()) => self.append_ring().await,
                    Err(e) => Err(e),
                };
                let _ = tokio::fs::remove_file(self.ring_path()).await;
                appended
            }
            None => Ok(()),
        };
        appended?;
        self.file.flush().await
    }

    async fn append_ring(&mut self) -> io::Result<()> {
        use tokio::io::{AsyncReadExt as _, AsyncSeekExt as _, AsyncWriteExt as _};
        let tail = self.written - SAVED_HALF;
        let mut ring = tokio::fs::File::open(self.ring_path()).await?;
        if tail <= SAVED_HALF {
            tokio::io::copy(&mut (&mut ring).take(tail), &mut self.file).await?;
            return Ok(());
        }
        self.file
            .write_all(cut_note(tail - SAVED_HALF).as_bytes())
            .await?;
        // The oldest kept byte is where the next write would have gone.
        let start = tail % SAVED_HALF;
        ring.seek(io::SeekFrom::Start(start)).await?;
        tokio::io::copy(&mut (&mut ring).take(SAVED_HALF - start), &mut self.file).await?;
        ring.seek(io::SeekFrom::Start(0)).await?;
        tokio::io::copy(&mut (&mut ring).take(start), &mut self.file).await?;
        Ok(())
    }
}

impl Drop for SavedOutput {
    /// A call dropped mid-run leaves no ring file behind.
    fn drop(&mut self) {
        if self.ring.is_some() {
            let _ = std::fs::remove_file(self.ring_path());
        }
    }
}

/// `$ZOT_HOME/tool-output`.
pub fn root(zot_home: &Path) -> PathBuf {
    zot_home.join(TOOL_OUTPUT_DIR)
}

/// The folder of one session's full outputs under `root`. The id becomes
/// one path component whatever it holds (an opened session file names its
/// own id).
pub fn session_dir(root: &Path, session_id: &str) -> PathBuf {
    let mut name: String = session_id
        .chars()
        .take(128)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.chars().all(|c| c == '.') {
        name = format!("session{name}");
    }
    root.join(name)
}

/// The note that ends a cut result: `[zot: N bytes omitted; full output: PATH]`,
/// or why the full output could not be kept.
pub fn omitted_note(omitted: usize, saved: &Result<PathBuf, String>) -> String {
    match saved {
        Ok(path) => format!(
            "[zot: {omitted} bytes omitted; full output: {}]",
            path.display()
        ),
        Err(why) => format!("[zot: {omitted} bytes omitted; full output not saved: {why}]"),
    }
}

/// Creates a new file for a full output of `tool` in `dir` (made 0700, and
/// its parent too when that is the tool-output root; any other existing
/// parent, such as the system's temporary directory, keeps its mode), mode
/// 0600, named `<tool>-<random>.<ext>`.
pub(crate) fn create(dir: &Path, tool: &str, ext: &str) -> io::Result<(PathBuf, File)> {
    let root = dir
        .parent()
        .filter(|p| p.file_name().is_some_and(|n| n == TOOL_OUTPUT_DIR));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    for d in [root, Some(dir)].into_iter().flatten() {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700))?;
    }
    let tool: String = tool
        .chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut attempt = 0;
    loop {
        let path = dir.join(format!("{tool}-{}.{ext}", super::fs::random_hex()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 8 => attempt += 1,
            Err(e) => return Err(e),
        }
    }
}

/// `output` as the model should get it: unchanged when its text fits
/// [`MAX_TOOL_RESULT_BYTES`]; otherwise its text is cut to that many bytes
/// (at a line end when there is one in the last quarter), the whole text is
/// written to a file in `dir`, and the result ends with [`omitted_note`].
/// Images pass unchanged. Blocking file work: call from a blocking context.
pub fn cap(output: ToolOutput, tool: &str, dir: Option<&Path>) -> ToolOutput {
    let total: usize = output.content.iter().map(text_len).sum();
    if total <= MAX_TOOL_RESULT_BYTES {
        return output;
    }
    let saved = match dir {
        Some(dir) => save(&output.content, tool, dir),
        None => Err("no folder for tool outputs".to_owned()),
    };
    let mut budget = MAX_TOOL_RESULT_BYTES;
    let mut kept = 0;
    let mut content = Vec::with_capacity(output.content.len() + 1);
    for block in output.content {
        match block {
            Block::Text { text } if budget == 0 => drop(text),
            Block::Text { mut text } => {
                if text.len() > budget {
                    text.truncate(cut_point(&text, budget));
                }
                budget -= text.len().min(budget);
                kept += text.len();
                content.push(Block::Text { text });
            }
            other => content.push(other),
        }
    }
    content.push(Block::Text {
        text: omitted_note(total - kept, &saved),
    });
    ToolOutput {
        content,
        is_error: output.is_error,
    }
}

fn text_len(block: &Block) -> usize {
    match block {
        Block::Text { text } => text.len(),
        _ => 0,
    }
}

/// Where to cut `text` to at most `max` bytes: after the last newline in
/// the last quarter of the allowance, else at the last char boundary.
fn cut_point(text: &str, max: usize) -> usize {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    match text[..end].rfind('\n') {
        Some(i) if i + 1 >= end - end / 4 => i + 1,
        _ => end,
    }
}

/// Writes the text blocks, one after another, to a new file in `dir`;
/// past [`MAX_SAVED_OUTPUT_BYTES`], their first and last halves with the
/// [`cut_note`] between them.
fn save(content: &[Block], tool: &str, dir: &Path) -> Result<PathBuf, String> {
    let (path, mut file) = create(dir, tool, "txt").map_err(|e| e.to_string())?;
    let mut parts: Vec<&[u8]> = Vec::new();
    for block in content {
        if let Block::Text { text } = block {
            if !parts.is_empty() {
                parts.push(b"\n");
            }
            parts.push(text.as_bytes());
        }
    }
    let total: u64 = parts.iter().map(|p| p.len() as u64).sum();
    let written = (|| {
        if total <= MAX_SAVED_OUTPUT_BYTES {
            for part in &parts {
                file.write_all(part)?;
            }
        } else {
            write_range(&mut file, &parts, 0, SAVED_HALF)?;
            file.write_all(cut_note(total - 2 * SAVED_HALF).as_bytes())?;
            write_range(&mut file, &parts, total - SAVED_HALF, total)?;
        }
        file.flush()
    })();
    match written {
        Ok(()) => Ok(path),
        Err(e) => {
            let _ = std::fs::remove_file(&path);
            Err(format!("{}: {e}", path.display()))
        }
    }
}

/// Writes bytes `from..to` of the concatenation of `parts`.
fn write_range(file: &mut File, parts: &[&[u8]], from: u64, to: u64) -> io::Result<()> {
    let mut at = 0u64;
    for part in parts {
        let end = at + part.len() as u64;
        let (lo, hi) = (from.max(at), to.min(end));
        if lo < hi {
            let (lo, hi) = ((lo - at) as usize, (hi - at) as usize);
            file.write_all(&part[lo..hi])?;
        }
        at = end;
    }
    Ok(())
}

/// Deletes full outputs older than `max_age` under `root`, the session
/// folders that leaves empty, and the folders of session-less runs
/// (`local-<pid>`) whose process is gone. Best effort: what cannot be read
/// or removed stays. Returns how many files were removed.
pub fn prune(root: &Path, max_age: Duration) -> usize {
    let Ok(sessions) = std::fs::read_dir(root) else {
        return 0;
    };
    let now = SystemTime::now();
    let mut removed = 0;
    for session in sessions.flatten() {
        let dir = session.path();
        if !session.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let name = session.file_name();
        let orphan = name
            .to_str()
            .and_then(|n| n.strip_prefix("local-"))
            .and_then(|pid| pid.parse::<i32>().ok())
            .is_some_and(|pid| !process_exists(pid));
        let Ok(files) = std::fs::read_dir(&dir) else {
            continue;
        };
        for file in files.flatten() {
            let old = file
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|modified| now.duration_since(modified).ok())
                .is_some_and(|age| age > max_age);
            if (orphan || old) && std::fs::remove_file(file.path()).is_ok() {
                removed += 1;
            }
        }
        // Fails, as it should, while files are left.
        let _ = std::fs::remove_dir(&dir);
    }
    removed
}

/// Whether a process `pid` exists (a zombie counts; permission to signal it
/// does not matter).
fn process_exists(pid: i32) -> bool {
    use nix::errno::Errno;
    if pid <= 0 {
        return false;
    }
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
        Ok(()) => true,
        Err(Errno::EPERM) => true,
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_become_one_path_component() {
        let root = Path::new("/r");
        assert_eq!(
            session_dir(root, "20250101-1200-ab"),
            root.join("20250101-1200-ab")
        );
        assert_eq!(session_dir(root, "../../etc"), root.join(".._.._etc"));
        assert_eq!(session_dir(root, ".."), root.join("session.."));
        assert_eq!(session_dir(root, ""), root.join("session"));
        assert_eq!(session_dir(root, "a/b\u{0}c"), root.join("a_b_c"));
    }

    #[test]
    fn cuts_at_a_line_end_near_the_limit_or_a_char_boundary() {
        assert_eq!(cut_point("abcde\nfg", 7), 6);
        assert_eq!(cut_point("abc\ndefg", 6), 6);
        assert_eq!(cut_point("abcdefgh\nij", 8), 8);
        assert_eq!(cut_point("aé", 2), 1);
    }
}
