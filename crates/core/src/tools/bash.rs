//! The `bash` tool: runs a shell command in its own process group, streams
//! its merged output as progress, and returns it, or its start and end when
//! it is long. Memory stays bounded whatever the command writes: beyond the
//! caps only the start and the end are kept, and the whole output streams
//! to a file in the session's tool-output folder. Owns the output caps,
//! timeouts, and killing the whole group.

use std::io;
use std::os::unix::process::ExitStatusExt as _;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt as _};
use tokio::process::{Child, Command};
use tokio::time::Instant;

use super::args::{args_object, optional_positive_int, required_str};
use super::output;
use crate::tool::{BoxFuture, Tool, ToolContext, ToolOutput, ToolSpec};

/// Most output bytes returned to the model; more is cut from the middle.
pub const MAX_OUTPUT_BYTES: usize = 51_200;

/// Most output lines returned to the model; more are cut from the middle.
pub const MAX_OUTPUT_LINES: usize = 2000;

/// Of [`MAX_OUTPUT_BYTES`], what the start of a cut output may take (a
/// first error is often there); its end gets the rest.
pub const HEAD_BYTES: usize = MAX_OUTPUT_BYTES / 5;

/// Of [`MAX_OUTPUT_LINES`], what the start of a cut output may take.
pub const HEAD_LINES: usize = MAX_OUTPUT_LINES / 5;

/// How long the process group gets between SIGTERM and SIGKILL to clean up
/// (temp files, child processes) after a timeout or abort.
pub const KILL_GRACE: Duration = Duration::from_secs(2);

/// How long output is still read after the shell exits. A background
/// process holding the pipes open would otherwise keep the call waiting
/// for an EOF that never comes; output already in flight arrives well
/// within this.
pub const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);

/// How often a dying process group is checked for survivors.
const GROUP_POLL: Duration = Duration::from_millis(20);

/// Bytes read from a pipe at a time, and so the largest progress chunk.
const READ_CHUNK: usize = 8192;

const SHELL: &str = "/bin/sh";

/// The longest timeout a call may ask for, in seconds: long
/// builds and test runs fit, a command left running all day does not.
pub const MAX_TIMEOUT_SECS: u64 = 60 * 60;

pub struct BashTool;

impl Tool for BashTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "bash".into(),
            description: format!(
                "Run a shell command ({SHELL} -c) in the project directory, stdin closed, \
                 stdout and stderr merged. Returns the exit code and the output; output over \
                 {MAX_OUTPUT_LINES} lines or {MAX_OUTPUT_BYTES} bytes keeps its start and end, and \
                 the full output is saved to a file whose path is given. Processes the command \
                 leaves running in the background are killed when it finishes."
            ),
            schema: json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The command line to run."},
                    "timeout": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_SECS, "description": format!("Seconds before the command is killed, at most {MAX_TIMEOUT_SECS}; the user's default (10 minutes unless set) when absent.")}
                },
                "required": ["command"]
            }).into(),
            read_only: false,
        }
    }

    /// The whole command, every line of it.
    fn approval_preview(&self, args: &Value, _cwd: &std::path::Path) -> Option<String> {
        args.get("command")
            .and_then(Value::as_str)
            .map(|c| format!("$ {c}"))
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let (command, timeout) = match parse_args(&args) {
                Ok(parsed) => parsed,
                Err(output) => return output,
            };
            run(&command, timeout, ctx).await
        })
    }

    /// `call` parses the arguments field by field, by the schema's rules.
    fn checks_own_arguments(&self) -> bool {
        true
    }
}

fn parse_args(args: &Value) -> Result<(String, Option<u64>), ToolOutput> {
    let obj = args_object(args)?;
    let command = required_str(obj, "command")?;
    if command.trim().is_empty() {
        return Err(ToolOutput::error("argument `command` is empty"));
    }
    let timeout = optional_positive_int(obj, "timeout")?;
    if let Some(secs) = timeout.filter(|&secs| secs > MAX_TIMEOUT_SECS) {
        return Err(ToolOutput::error(format!(
            "argument `timeout` must be at most {MAX_TIMEOUT_SECS} seconds, got {secs}"
        )));
    }
    Ok((command.to_owned(), timeout))
}

/// Why the command stopped.
enum End {
    Exited(ExitStatus),
    TimedOut(u64),
    Aborted,
    WaitFailed(io::Error),
}

async fn run(command: &str, timeout: Option<u64>, ctx: &ToolContext) -> ToolOutput {
    if ctx.cancel.is_cancelled() {
        return ToolOutput::error(format!("$ {command}\n\n(not started)\n\n[aborted]"));
    }
    let mut shell = Command::new(SHELL);
    let mut sandbox = None;
    let tmp = match ctx.sandbox.mode {
        zot_sandbox::SandboxMode::Off => None,
        _ => match zot_sandbox::private_tmp() {
            Ok(tmp) => Some(tmp),
            Err(e) => {
                return ToolOutput::error(format!(
                    "$ {command}\n\n(not started: cannot create the sandbox's temporary directory: {e})"
                ));
            }
        },
    };
    if let Some(resolved) = tmp
        .as_ref()
        .and_then(|tmp| ctx.sandbox.resolve(&ctx.cwd, tmp))
    {
        let kernel = zot_sandbox::Kernel::get();
        match zot_sandbox::prepare(&resolved, &kernel, zot_sandbox::Enforce::Strict) {
            Ok(prepared) => sandbox = Some(prepared),
            Err(e) => {
                let why = match e {
                    zot_sandbox::SandboxError::Unsupported { missing } => {
                        format!("this kernel lacks {}", missing.join(", "))
                    }
                    other => other.to_string(),
                };
                return ToolOutput::error(format!(
                    "$ {command}\n\n(not started: the {} sandbox is not available: {why}; the user can turn it off with /sandbox off or --sandbox off)",
                    ctx.sandbox.mode.as_str()
                ));
            }
        }
    }
    // The user's environment (less the RPC token), a process group of its
    // own, a supervisor that ends what it leaves behind, and its sandbox.
    zot_sandbox::harden(shell.as_std_mut(), None, &[], sandbox.as_ref());
    if let (Some(_), Some(tmp)) = (&sandbox, &tmp) {
        for key in zot_sandbox::MODEL_KEY_ENV {
            shell.env_remove(key);
        }
        for var in zot_sandbox::TMP_ENV {
            shell.env(var, tmp);
        }
    }
    let spawned = shell
        .arg("-c")
        .arg(command)
        .current_dir(&ctx.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            return ToolOutput::error(format!("cannot run {SHELL} in {}: {e}", ctx.cwd.display()));
        }
    };
    // process_group(0) makes the shell a group leader: its pid is the group id.
    let Some(pgid) = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw)
    else {
        return ToolOutput::error("the shell exited before it could be tracked");
    };
    let mut guard = GroupGuard { pgid, armed: true };

    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let mut out_buf = [0u8; READ_CHUNK];
    let mut err_buf = [0u8; READ_CHUNK];
    let mut output = Output::default();
    let timeout = timeout.map_or(ctx.bash_timeout, Duration::from_secs);
    let timeout_at = Some(Instant::now() + timeout);
    let mut exited: Option<(Instant, ExitStatus)> = None;

    let end = loop {
        if let Some((_, status)) = exited
            && stdout.is_none()
            && stderr.is_none()
        {
            break End::Exited(status);
        }
        // Unbiased on purpose: with a fixed order, a pipe that is always
        // ready (a background `yes`) would starve the other pipe and the
        // exit and drain branches, and the call would never end.
        tokio::select! {
            () = ctx.cancel.cancelled() => break End::Aborted,
            () = sleep_until(timeout_at), if exited.is_none() => {
                break End::TimedOut(timeout.as_secs());
            }
            () = sleep_until(exited.map(|(at, _)| at)) => {
                if let Some((_, status)) = exited {
                    break End::Exited(status);
                }
            }
            status = child.wait(), if exited.is_none() => match status {
                Ok(status) => exited = Some((Instant::now() + DRAIN_AFTER_EXIT, status)),
                Err(e) => break End::WaitFailed(e),
            },
            read = read_some(&mut stdout, &mut out_buf) => match read {
                Ok(n) if n > 0 => output.push(&out_buf[..n], ctx).await,
                _ => stdout = None,
            },
            read = read_some(&mut stderr, &mut err_buf) => match read {
                Ok(n) if n > 0 => output.push(&err_buf[..n], ctx).await,
                _ => stderr = None,
            },
        }
    };
    // Close our pipe ends first so survivors writing to them die of
    // SIGPIPE rather than block on a full pipe during the grace period.
    drop((stdout, stderr));
    terminate_group(pgid, &mut child).await;
    guard.armed = false;
    output.finish(ctx).await;

    let (status, is_error) = match &end {
        End::Exited(status) => match (status.code(), status.signal()) {
            (Some(code), _) => (format!("[exit {code}]"), code != 0),
            (None, Some(signal)) => (format!("[killed by signal {signal}]"), true),
            (None, None) => ("[exit unknown]".to_owned(), true),
        },
        End::TimedOut(secs) => (format!("[timed out after {secs}s]"), true),
        End::Aborted => ("[aborted]".to_owned(), true),
        End::WaitFailed(e) => (format!("[could not wait for the shell: {e}]"), true),
    };
    let text = output.render(command, &status);
    ToolOutput {
        is_error,
        ..ToolOutput::text(text)
    }
}

async fn read_some<R: AsyncRead + Unpin>(
    pipe: &mut Option<R>,
    buf: &mut [u8],
) -> io::Result<usize> {
    match pipe {
        Some(pipe) => pipe.read(buf).await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// SIGTERM to the whole group, then SIGKILL to whatever is still there
/// after [`KILL_GRACE`]. Also reaps the shell, whose zombie would otherwise
/// keep the group looking alive.
async fn terminate_group(pgid: Pid, child: &mut Child) {
    if killpg(pgid, Signal::SIGTERM).is_err() {
        // ESRCH: nobody left in the group.
        let _ = child.try_wait();
        return;
    }
    let deadline = Instant::now() + KILL_GRACE;
    loop {
        let _ = child.try_wait();
        if !group_has_live_members(pgid) {
            return;
        }
        if Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(GROUP_POLL).await;
    }
    let _ = killpg(pgid, Signal::SIGKILL);
    let _ = child.try_wait();
}

/// Whether any process of the group is still running. Zombies do not
/// count: they run nothing, but `kill(-pgid, 0)` succeeds on them until
/// their new parent reaps them, which some inits do only every second or so.
fn group_has_live_members(pgid: Pid) -> bool {
    if killpg(pgid, None).is_err() {
        return false;
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        // No procfs to tell zombies apart: trust kill(2).
        return true;
    };
    entries.flatten().any(|entry| {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            return false;
        };
        // After the parenthesised command name: state, ppid, pgrp.
        let mut fields = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace())
            .into_iter()
            .flatten();
        let state = fields.next();
        let pgrp = fields.nth(1).and_then(|f| f.parse::<i32>().ok());
        pgrp == Some(pgid.as_raw()) && !matches!(state, Some("Z" | "X"))
    })
}

/// Kills the group if the call is dropped mid-run (the agent loop giving
/// up on the future), so no command outlives its turn.
struct GroupGuard {
    pgid: Pid,
    armed: bool,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            let _ = killpg(self.pgid, Signal::SIGKILL);
        }
    }
}

/// The merged output: all of it while it fits the caps; after that its
/// start (`head`) and end (`buf`) in memory and all of it in a file in the
/// session's tool-output folder.
#[derive(Default)]
struct Output {
    /// All bytes until the caps are exceeded; after that at least the last
    /// `MAX_OUTPUT_BYTES + 1` (the extra byte tells whether the kept end
    /// starts on a line boundary).
    buf: Vec<u8>,
    /// The start of the output within the head caps, taken when the caps
    /// are first exceeded.
    head: Option<Vec<u8>>,
    total_bytes: usize,
    newlines: usize,
    log: Option<output::SavedOutput>,
    log_path: Option<PathBuf>,
    log_error: Option<String>,
    /// The start of a UTF-8 sequence split across reads, held back so
    /// progress text never shows a replacement character for it.
    pending_utf8: Vec<u8>,
}

impl Output {
    fn truncated(&self) -> bool {
        self.total_bytes > MAX_OUTPUT_BYTES || self.total_lines() > MAX_OUTPUT_LINES
    }

    fn total_lines(&self) -> usize {
        let unterminated = self.buf.last().is_some_and(|&b| b != b'\n');
        self.newlines + usize::from(unterminated)
    }

    async fn push(&mut self, chunk: &[u8], ctx: &ToolContext) {
        self.report(chunk, ctx);
        self.total_bytes += chunk.len();
        self.newlines += chunk.iter().filter(|&&b| b == b'\n').count();
        let was_truncated = self.head.is_some();
        self.buf.extend_from_slice(chunk);
        if !was_truncated && self.truncated() {
            self.head = Some(head_of(&self.buf).to_vec());
            self.open_log(ctx).await;
        } else if let Some(file) = &mut self.log
            && let Err(e) = file.write(chunk).await
        {
            self.log = None;
            self.log_error = Some(e.to_string());
        }
        // Trimming only once the buffer is twice the cap keeps the copying
        // amortised.
        if self.truncated() && self.buf.len() > 2 * MAX_OUTPUT_BYTES {
            let cut = self.buf.len() - (MAX_OUTPUT_BYTES + 1);
            self.buf.drain(..cut);
        }
    }

    /// Called when the output first exceeds the caps: the file gets
    /// everything so far (still all in `buf`), then each later chunk.
    async fn open_log(&mut self, ctx: &ToolContext) {
        let Some(dir) = ctx.output_dir.clone() else {
            self.log_error = Some("no folder for tool outputs".to_owned());
            return;
        };
        let created =
            tokio::task::spawn_blocking(move || output::create(&dir, "bash", "log")).await;
        let (path, file) = match created {
            Ok(Ok(created)) => created,
            Ok(Err(e)) => {
                self.log_error = Some(e.to_string());
                return;
            }
            Err(e) => {
                self.log_error = Some(e.to_string());
                return;
            }
        };
        let mut file = output::SavedOutput::new(path.clone(), file);
        match file.write(&self.buf).await {
            Ok(()) => {
                self.log_path = Some(path);
                self.log = Some(file);
            }
            Err(e) => self.log_error = Some(format!("{}: {e}", path.display())),
        }
    }

    fn report(&mut self, chunk: &[u8], ctx: &ToolContext) {
        if ctx.progress.is_none() {
            return;
        }
        self.pending_utf8.extend_from_slice(chunk);
        let keep = match std::str::from_utf8(&self.pending_utf8) {
            Err(e) if e.error_len().is_none() => self.pending_utf8.len() - e.valid_up_to(),
            _ => 0,
        };
        let ready = self.pending_utf8.len() - keep;
        if ready > 0 {
            ctx.report(&String::from_utf8_lossy(&self.pending_utf8[..ready]));
            self.pending_utf8.drain(..ready);
        }
    }

    async fn finish(&mut self, ctx: &ToolContext) {
        if !self.pending_utf8.is_empty() {
            ctx.report(&String::from_utf8_lossy(&self.pending_utf8));
            self.pending_utf8.clear();
        }
        // Flushed, not synced: the file is a copy for reading back, and a
        // sync would make every long command wait for the disk.
        if let Some(file) = self.log.take() {
            let path = file.path().to_owned();
            if let Err(e) = file.finish().await {
                self.log_error = Some(format!("{}: {e}", path.display()));
            }
        }
    }

    /// `$ command`, the output (its start and end when cut), the status
    /// line, and for a cut output the note saying where all of it is.
    fn render(&self, command: &str, status: &str) -> String {
        let mut text = format!("$ {command}\n\n");
        let head = match &self.head {
            Some(head) if self.truncated() => head,
            _ => {
                if self.total_bytes == 0 {
                    text.push_str("(no output)");
                } else {
                    let body = String::from_utf8_lossy(&self.buf);
                    text.push_str(body.strip_suffix('\n').unwrap_or(&body));
                }
                text.push_str("\n\n");
                text.push_str(status);
                return text;
            }
        };
        let head_lines = head.iter().filter(|&&b| b == b'\n').count();
        let tail = self.tail(
            MAX_OUTPUT_BYTES - head.len(),
            MAX_OUTPUT_LINES.saturating_sub(head_lines.max(1)),
        );
        let omitted = self.total_bytes - head.len() - tail.len();
        let omitted_lines =
            self.newlines - head_lines - tail.iter().filter(|&&b| b == b'\n').count();
        let head = String::from_utf8_lossy(head);
        let tail = String::from_utf8_lossy(tail);
        text.push_str(head.strip_suffix('\n').unwrap_or(&head));
        text.push_str(&format!(
            "\n[... {omitted_lines} lines, {omitted} bytes omitted ...]\n"
        ));
        text.push_str(tail.strip_suffix('\n').unwrap_or(&tail));
        text.push_str("\n\n");
        text.push_str(status);
        text.push('\n');
        let saved = match (&self.log_path, &self.log_error) {
            (_, Some(error)) => Err(error.clone()),
            (Some(path), None) => Ok(path.clone()),
            (None, None) => Err("not written".to_owned()),
        };
        text.push_str(&output::omitted_note(omitted, &saved));
        text
    }

    /// The end of the output within `max_bytes` and `max_lines`, starting
    /// on a line boundary when there is one to start on.
    fn tail(&self, max_bytes: usize, max_lines: usize) -> &[u8] {
        let start = self.buf.len().saturating_sub(max_bytes);
        let mut tail = &self.buf[start..];
        let mid_line = start > 0 && self.buf[start - 1] != b'\n';
        if mid_line
            && let Some(i) = tail.iter().position(|&b| b == b'\n')
            && i + 1 < tail.len()
        {
            tail = &tail[i + 1..];
        }
        // A cut inside a UTF-8 sequence leaves continuation bytes first.
        let skip = tail
            .iter()
            .take(3)
            .take_while(|&&b| (0x80..0xC0).contains(&b))
            .count();
        tail = &tail[skip..];

        let newlines = tail.iter().filter(|&&b| b == b'\n').count();
        let lines = newlines + usize::from(tail.last().is_some_and(|&b| b != b'\n'));
        if lines > max_lines {
            let mut to_skip = lines - max_lines;
            if let Some(i) = tail.iter().position(|&b| {
                if b == b'\n' {
                    to_skip -= 1;
                }
                to_skip == 0
            }) {
                tail = &tail[i + 1..];
            }
        }
        tail
    }
}

/// The start of `output` within [`HEAD_BYTES`] and [`HEAD_LINES`], ending
/// after a newline when there is one to end on, else cut at a UTF-8
/// character boundary.
fn head_of(output: &[u8]) -> &[u8] {
    let mut end = output.len().min(HEAD_BYTES);
    if let Some(i) = output[..end]
        .iter()
        .enumerate()
        .filter(|&(_, &b)| b == b'\n')
        .nth(HEAD_LINES - 1)
        .map(|(i, _)| i)
    {
        end = i + 1;
    }
    let head = &output[..end];
    if head.last() == Some(&b'\n') || end == output.len() {
        return head;
    }
    match head.iter().rposition(|&b| b == b'\n') {
        Some(i) => &head[..=i],
        None => {
            // One long line: cut before a split UTF-8 sequence.
            let keep = match std::str::from_utf8(head) {
                Err(e) if e.error_len().is_none() => e.valid_up_to(),
                _ => head.len(),
            };
            &head[..keep]
        }
    }
}
