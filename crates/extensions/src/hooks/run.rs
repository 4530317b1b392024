//! One hook call: `sh -c <command>` in the project directory, in a process
//! group of its own, one line of JSON on stdin, stdout and stderr read up to
//! a cap, killed with its group when it outlives its timeout.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio::time::Instant;

use crate::reaper;
pub(crate) use crate::transport::stdio::Confinement;
use crate::transport::stdio::harden;

/// Most bytes of a hook's stdout, and of its stderr, that are kept (the
/// issue: 1 MiB each); the rest is read and dropped so the hook never
/// blocks on a full pipe.
pub const MAX_HOOK_OUTPUT: usize = 1 << 20;

/// After a hook exits, how long its pipes may stay open (held by something
/// it left running in the background) before that group is killed and the
/// output taken as it is.
pub const PIPE_GRACE: Duration = Duration::from_secs(2);

/// How a hook call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ran {
    /// It exited with this code.
    Exited {
        code: i32,
        stdout: String,
        stderr: String,
    },
    /// Killed by a signal (a crash), or it could not be started.
    Failed { why: String, stderr: String },
    /// It outlived its timeout; its group was killed.
    TimedOut { after: Duration, stderr: String },
}

/// What one call needs.
pub struct Call<'a> {
    pub command: &'a str,
    pub cwd: &'a Path,
    pub env: &'a [(&'a str, &'a Path)],
    /// One line of JSON (the newline is added).
    pub input: &'a [u8],
    pub timeout: Duration,
    /// Its scope and sandbox (none for user hooks); `env` is added to it.
    pub confinement: Confinement,
}

/// Runs one hook to its end (or its timeout).
pub async fn run(call: Call<'_>) -> Ran {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(call.command)
        .current_dir(call.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // The environment every child gets, and the hook's own variables.
    let mut confinement = call.confinement;
    confinement.env.extend(
        call.env
            .iter()
            .map(|(key, value)| ((*key).to_owned(), value.display().to_string())),
    );
    harden(&mut command, &confinement);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            return Ran::Failed {
                why: format!("cannot start sh: {e}"),
                stderr: String::new(),
            };
        }
    };
    let (Some(mut stdin), Some(stdout), Some(stderr), Some(pid)) = (
        child.stdin.take(),
        child.stdout.take(),
        child.stderr.take(),
        child.id(),
    ) else {
        return Ran::Failed {
            why: "the hook has no stdio pipes".to_owned(),
            stderr: String::new(),
        };
    };
    let pgid = Pid::from_raw(i32::try_from(pid).unwrap_or(i32::MAX));
    // Tokio reaps it, so the orphan reaper must not.
    reaper::own(pgid.as_raw());
    let mut line = call.input.to_vec();
    line.push(b'\n');
    // A hook that never reads its input must not hold the call: the write
    // runs beside the rest, and a closed pipe is no error.
    let feed = async move {
        let _ = stdin.write_all(&line).await;
        drop(stdin);
    };
    let reads = async {
        let ((), out, err) = tokio::join!(feed, capped(stdout), capped(stderr));
        (out, err)
    };
    tokio::pin!(reads);
    let deadline = Instant::now() + call.timeout;
    let mut outputs = None;
    let status = loop {
        tokio::select! {
            read = &mut reads, if outputs.is_none() => outputs = Some(read),
            status = child.wait() => break Some(status),
            () = tokio::time::sleep_until(deadline) => break None,
        }
    };
    if status.is_none() {
        let _ = killpg(pgid, Signal::SIGKILL);
        let _ = tokio::time::timeout(PIPE_GRACE, child.wait()).await;
    }
    let (stdout, stderr) = match outputs {
        Some(read) => read,
        None => match tokio::time::timeout(PIPE_GRACE, &mut reads).await {
            Ok(read) => read,
            Err(_) => {
                // Something it left running holds the pipes: it goes, and
                // the pipes close with it.
                let _ = killpg(pgid, Signal::SIGKILL);
                tokio::time::timeout(PIPE_GRACE, &mut reads)
                    .await
                    .unwrap_or_default()
            }
        },
    };
    let ran = match status {
        None => Ran::TimedOut {
            after: call.timeout,
            stderr,
        },
        Some(Ok(status)) => match status.code() {
            Some(code) => Ran::Exited {
                code,
                stdout,
                stderr,
            },
            None => Ran::Failed {
                why: status.to_string(),
                stderr,
            },
        },
        Some(Err(e)) => Ran::Failed {
            why: e.to_string(),
            stderr,
        },
    };
    // Whatever the hook left behind in its group goes with it.
    let _ = killpg(pgid, Signal::SIGKILL);
    reaper::disown(pgid.as_raw());
    ran
}

/// Reads a pipe to its end, keeping the first [`MAX_HOOK_OUTPUT`] bytes.
async fn capped(mut pipe: impl AsyncRead + Unpin) -> String {
    let mut kept = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = MAX_HOOK_OUTPUT.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}
