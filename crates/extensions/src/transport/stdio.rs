//! The child-process transport: the extension runs in its own process
//! group (with a parent-death signal on Linux), frames travel over its
//! stdin and stdout, its stderr is copied into its log (which rotates as it
//! grows), and it is stopped with
//! escalating signals to the whole group. Every process starts with the
//! environment of `zot_sandbox::child_env` and, when it has a permission
//! scope, inside its sandbox (its [`Confinement`]).

use std::io;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::net::unix::pipe;
use tokio::process::{ChildStdin, Command};
use tokio::sync::watch;
use tokio::time::Instant;

use super::direct::Direct;
use super::{Connection, Endpoint, FrameReader, Outbox, Outgoing, preview};
use crate::ext_log::ExtLog;
use crate::reaper;

/// How a child process is confined: unrestricted by default (the
/// environment less `ZOTCORE_RPC_TOKEN`), or held to a permission scope.
#[derive(Debug, Default)]
pub struct Confinement {
    /// The scope; `None` runs with the user's full privileges.
    pub scope: Option<zot_sandbox::Scope>,
    /// Variables set by the process's own configuration (a private
    /// `TMPDIR`, a configured server's `env`…), added to the environment last.
    pub env: Vec<(String, String)>,
    /// The sandbox built for the scope, entered between fork and exec.
    pub sandbox: Option<zot_sandbox::Prepared>,
    /// The private temporary directory, removed when the process record goes.
    pub tmp: Option<zot_sandbox::PrivateTmp>,
}

/// A running extension process (and its process group).
#[derive(Debug)]
pub(crate) struct Process {
    pgid: Pid,
    exit: watch::Receiver<Option<ExitStatus>>,
    /// Dropped after the process: its private temporary directory.
    _tmp: Option<zot_sandbox::PrivateTmp>,
}

/// A started extension process: what the host supervises, the connection
/// over its stdin, and the frames from its stdout.
pub(crate) struct Spawned {
    pub(crate) process: Process,
    pub(crate) conn: Connection,
    pub(crate) reader: FrameReader,
}

/// Starts `program args…` in `cwd`, its stderr appended to the log; frames
/// longer than `max_frame_bytes` end the connection.
pub(crate) fn spawn(
    name: &str,
    program: &Path,
    args: &[String],
    cwd: &Path,
    log: &Arc<ExtLog>,
    max_frame_bytes: usize,
    confinement: Confinement,
) -> io::Result<Spawned> {
    let (process, stdin, stdout, stderr) = Process::spawn(program, args, cwd, confinement)?;
    tracing::info!(extension = %name, pid = process.pgid.as_raw(), program = %program.display(), "extension started");
    tokio::spawn(copy_stderr(stderr, Arc::clone(log)));
    let stdin = pipe::Sender::from_owned_fd(stdin.into_owned_fd()?)?;
    let (direct, stdin) = Direct::new(name, stdin);
    let (conn, outbox) = Connection::with_direct(Some(Arc::clone(&direct)));
    tokio::spawn(write_loop(
        stdin,
        direct,
        outbox,
        Arc::clone(log),
        name.to_owned(),
    ));
    Ok(Spawned {
        process,
        conn,
        reader: FrameReader::new(stdout, max_frame_bytes),
    })
}

/// Copies the extension's stderr into its log until every writer of the
/// pipe is gone, so the log rotates as it grows (a child writing to the file
/// itself could grow it without bound until its next start).
async fn copy_stderr(mut stderr: tokio::process::ChildStderr, log: Arc<ExtLog>) {
    use tokio::io::AsyncReadExt as _;
    let mut buf = vec![0u8; STDERR_CHUNK];
    while let Ok(n) = stderr.read(&mut buf).await {
        if n == 0 {
            break;
        }
        log.stderr(&buf[..n]);
    }
}

/// Bytes of an extension's stderr read at a time.
const STDERR_CHUNK: usize = 16 * 1024;

/// Writes the frames queued for stdin in order (those `direct` could not
/// write at once); closing the way in at the end (both handles on the pipe
/// dropped) lets the extension read EOF.
async fn write_loop(
    stdin: Arc<pipe::Sender>,
    direct: Arc<Direct>,
    outbox: Outbox,
    log: Arc<ExtLog>,
    name: String,
) {
    let Outbox {
        queue: mut rx,
        mut abort,
    } = outbox;
    loop {
        let next = tokio::select! {
            biased;
            _ = abort.wait_for(|a| *a) => break,
            next = rx.recv() => next,
        };
        let Some(Outgoing::Frame { line, written }) = next else {
            break;
        };
        tracing::debug!(extension = %name, frame = %preview(line.trim_ascii_end()), "frame out");
        let result = tokio::select! {
            biased;
            _ = abort.wait_for(|a| *a) => {
                log.line("a request write blocked past its deadline; closing the extension's stdin");
                break;
            }
            result = write_all(&stdin, &line) => result,
        };
        if let Err(e) = result {
            log.line(format_args!("write to extension failed: {e}"));
            break;
        }
        if let Some(written) = written {
            let _ = written.send(());
        }
        direct.caught_up(|| !rx.is_empty());
    }
    direct.close();
}

/// Writes all of `line` to the pipe, waiting while it is full. Dropped
/// mid-frame (an abort), it leaves the frame cut short; the writer task then
/// closes the pipe, so the extension never reads the rest as a frame.
async fn write_all(pipe: &pipe::Sender, mut line: &[u8]) -> io::Result<()> {
    while !line.is_empty() {
        pipe.writable().await?;
        match pipe.try_write(line) {
            Ok(n) => line = &line[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

impl Process {
    /// Starts `program args…` in `cwd` with piped stdin, stdout and stderr.
    fn spawn(
        program: &Path,
        args: &[String],
        cwd: &Path,
        confinement: Confinement,
    ) -> io::Result<(
        Self,
        ChildStdin,
        tokio::process::ChildStdout,
        tokio::process::ChildStderr,
    )> {
        let mut command = Command::new(program);
        command
            .args(args)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // The environment of `child_env`, a process group of its own, on
        // Linux death with zot, and its sandbox.
        zot_sandbox::harden(
            command.as_std_mut(),
            confinement.scope.as_ref(),
            &confinement.env,
            confinement.sandbox.as_ref(),
        );
        let mut child = command.spawn()?;
        let (Some(stdin), Some(stdout), Some(stderr), Some(pid)) = (
            child.stdin.take(),
            child.stdout.take(),
            child.stderr.take(),
            child.id(),
        ) else {
            return Err(io::Error::other("child has no stdio pipes"));
        };
        let pgid = Pid::from_raw(i32::try_from(pid).map_err(io::Error::other)?);
        // Tokio reaps it, so the orphan reaper must not.
        reaper::own(pgid.as_raw());
        let (tx, exit) = watch::channel(None);
        // The one place that reaps the child: no zombies, whoever stops it.
        tokio::spawn(async move {
            let status = child.wait().await;
            reaper::disown(pgid.as_raw());
            let _ = tx.send(Some(status.unwrap_or_else(|_| failed_wait_status())));
        });
        let process = Process {
            pgid,
            exit,
            _tmp: confinement.tmp,
        };
        Ok((process, stdin, stdout, stderr))
    }

    /// The exit status once the process has been reaped.
    fn status(&self) -> Option<ExitStatus> {
        *self.exit.borrow()
    }

    /// Waits for the exit until `deadline`.
    async fn wait_for_exit(&self, deadline: Instant) -> Option<ExitStatus> {
        let mut exit = self.exit.clone();
        let waited = tokio::time::timeout_at(deadline, exit.wait_for(Option::is_some)).await;
        match waited {
            Ok(Ok(status)) => *status,
            _ => self.status(),
        }
    }

    fn signal(&self, signal: Signal) {
        // ESRCH (the group is gone) is the expected outcome late in a stop.
        let _ = killpg(self.pgid, signal);
    }

    /// Kills the group at once and reaps the leader.
    async fn kill_group(&self) -> Option<ExitStatus> {
        self.signal(Signal::SIGKILL);
        self.wait_for_exit(Instant::now() + KILL_REAP).await
    }

    /// Waits for a voluntary exit until `deadline`, then SIGTERM, `term_grace`,
    /// SIGKILL. The group is swept with SIGKILL at the end so no grandchild survives.
    async fn stop_group(&self, deadline: Instant, term_grace: Duration) -> Option<ExitStatus> {
        let mut status = self.wait_for_exit(deadline).await;
        if status.is_none() {
            self.signal(Signal::SIGTERM);
            status = self.wait_for_exit(Instant::now() + term_grace).await;
        }
        if status.is_none() {
            status = self.kill_group().await;
        }
        self.signal(Signal::SIGKILL);
        status
    }
}

/// How long a SIGKILLed leader may take to be reaped before we stop waiting.
const KILL_REAP: Duration = Duration::from_secs(5);

fn text(status: Option<ExitStatus>) -> Option<String> {
    status.map(|s| s.to_string())
}

impl Endpoint for Process {
    fn pid(&self) -> Option<i32> {
        Some(self.pgid.as_raw())
    }

    fn exit(&self) -> Option<String> {
        text(self.status())
    }

    fn wait_until(&self, deadline: Instant) -> BoxFuture<'_, Option<String>> {
        self.wait_for_exit(deadline).map(text).boxed()
    }

    fn kill(&self) -> BoxFuture<'_, Option<String>> {
        self.kill_group().map(text).boxed()
    }

    fn stop(&self, deadline: Instant, term_grace: Duration) -> BoxFuture<'_, Option<String>> {
        self.stop_group(deadline, term_grace).map(text).boxed()
    }

    /// SIGKILL to the group unless the leader is already reaped; does not wait.
    fn kill_now(&self) {
        if self.status().is_none() {
            self.signal(Signal::SIGKILL);
        }
    }
}

impl Drop for Process {
    /// A record dropped while its process runs still leaves nothing behind.
    fn drop(&mut self) {
        Endpoint::kill_now(self);
    }
}

fn failed_wait_status() -> ExitStatus {
    use std::os::unix::process::ExitStatusExt;
    ExitStatus::from_raw(0xff << 8)
}
