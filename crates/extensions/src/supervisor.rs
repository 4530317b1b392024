//! Extension processes: spawning each in its own process group (with a
//! parent-death signal on Linux), watching for its exit, and stopping it
//! with escalating signals to the whole group.

use std::io;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::sync::watch;
use tokio::time::Instant;

/// A running extension process (and its process group).
#[derive(Debug)]
pub(crate) struct Process {
    pgid: Pid,
    exit: watch::Receiver<Option<ExitStatus>>,
}

pub(crate) struct Spawned {
    pub(crate) process: Process,
    pub(crate) stdin: ChildStdin,
    pub(crate) stdout: ChildStdout,
}

/// Resolves `exec` as the reference does (research zot.md §2.1 item 6):
/// absolute as is; anything with a path separator (`./x`, `../x`, `bin/x`,
/// `.`, `..`) relative to the extension directory; a bare name on `$PATH`.
pub(crate) fn resolve_exec(dir: &Path, exec: &str) -> std::path::PathBuf {
    let path = Path::new(exec);
    if path.is_absolute() {
        path.to_path_buf()
    } else if exec.contains(std::path::MAIN_SEPARATOR)
        || exec.contains('/')
        || exec == "."
        || exec == ".."
    {
        dir.join(path)
    } else {
        path.to_path_buf()
    }
}

/// Resolves a nimlet `command[0]` (research nimlet.md E3): containing `/`
/// (and not absolute) it is relative to the extension directory; otherwise
/// it is used as is (an absolute path, or a name looked up on `$PATH`).
pub(crate) fn resolve_nimlet(dir: &Path, program: &str) -> std::path::PathBuf {
    let path = Path::new(program);
    if !path.is_absolute() && program.contains('/') {
        dir.join(path)
    } else {
        path.to_path_buf()
    }
}

impl Process {
    /// Starts `program args…` in `cwd` with piped stdin/stdout and `stderr`
    /// (the log file) as its stderr.
    pub(crate) fn spawn(
        program: &Path,
        args: &[String],
        cwd: &Path,
        stderr: std::fs::File,
    ) -> io::Result<Spawned> {
        let mut command = Command::new(program);
        command
            .args(args)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .process_group(0);
        #[cfg(target_os = "linux")]
        {
            let host = nix::unistd::getpid();
            // SAFETY: the closure runs between fork and exec and only makes
            // async-signal-safe syscalls (prctl, getppid).
            unsafe {
                command.pre_exec(move || {
                    // The signal fires when the thread that forked us exits;
                    // the host spawns from runtime threads that live as long as it.
                    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(io::Error::from)?;
                    if nix::unistd::getppid() != host {
                        // The host died before prctl took effect.
                        return Err(io::Error::other("host exited during spawn"));
                    }
                    Ok(())
                });
            }
        }
        let mut child = command.spawn()?;
        let (Some(stdin), Some(stdout), Some(pid)) =
            (child.stdin.take(), child.stdout.take(), child.id())
        else {
            return Err(io::Error::other("child has no stdio pipes"));
        };
        let pgid = Pid::from_raw(i32::try_from(pid).map_err(io::Error::other)?);
        let (tx, exit) = watch::channel(None);
        // The one place that reaps the child: no zombies, whoever stops it.
        tokio::spawn(async move {
            let status = child.wait().await;
            let _ = tx.send(Some(status.unwrap_or_else(|_| failed_wait_status())));
        });
        Ok(Spawned {
            process: Process { pgid, exit },
            stdin,
            stdout,
        })
    }

    pub(crate) fn pid(&self) -> i32 {
        self.pgid.as_raw()
    }

    /// The exit status once the process has been reaped.
    pub(crate) fn status(&self) -> Option<ExitStatus> {
        *self.exit.borrow()
    }

    /// Waits for the exit until `deadline`.
    pub(crate) async fn wait_until(&self, deadline: Instant) -> Option<ExitStatus> {
        let mut exit = self.exit.clone();
        let waited = tokio::time::timeout_at(deadline, exit.wait_for(Option::is_some)).await;
        match waited {
            Ok(Ok(status)) => *status,
            _ => self.status(),
        }
    }

    pub(crate) fn signal(&self, signal: Signal) {
        // ESRCH (the group is gone) is the expected outcome late in a stop.
        let _ = killpg(self.pgid, signal);
    }

    /// Kills the group at once and reaps the leader.
    pub(crate) async fn kill(&self) -> Option<ExitStatus> {
        self.signal(Signal::SIGKILL);
        self.wait_until(Instant::now() + Duration::from_secs(5))
            .await
    }

    /// Waits for a voluntary exit until `deadline`, then SIGTERM, `term_grace`,
    /// SIGKILL. The group is swept with SIGKILL at the end so no grandchild survives.
    pub(crate) async fn stop(&self, deadline: Instant, term_grace: Duration) -> Option<ExitStatus> {
        let mut status = self.wait_until(deadline).await;
        if status.is_none() {
            self.signal(Signal::SIGTERM);
            status = self.wait_until(Instant::now() + term_grace).await;
        }
        if status.is_none() {
            status = self.kill().await;
        }
        self.signal(Signal::SIGKILL);
        status
    }
}

impl Process {
    /// SIGKILL to the group unless the leader is already reaped; does not wait.
    pub(crate) fn kill_now(&self) {
        if self.status().is_none() {
            self.signal(Signal::SIGKILL);
        }
    }
}

impl Drop for Process {
    /// A record dropped while its process runs still leaves nothing behind.
    fn drop(&mut self) {
        self.kill_now();
    }
}

/// Describes how a process ended, for error messages: `exit status: 3`,
/// `signal: 9 (SIGKILL)`, or that it is still running.
pub(crate) fn describe(status: Option<ExitStatus>) -> String {
    match status {
        Some(status) => status.to_string(),
        None => "still running".to_owned(),
    }
}

fn failed_wait_status() -> ExitStatus {
    use std::os::unix::process::ExitStatusExt;
    ExitStatus::from_raw(0xff << 8)
}
