//! Short shell commands that zot runs to their end on the user's or a
//! project's behalf: command hooks and the `` !`cmd` `` of Markdown
//! commands. One runner for both: `/bin/sh -c <command>` in a process group
//! of its own (on Linux supervised: nothing it starts outlives zot), with the environment of
//! [`child_env`](crate::child_env) and, when given, a sandbox; stdout and
//! stderr read up to a cap while it runs; killed with its group at its
//! timeout; whatever it leaves running in the background killed when it
//! exits; and the group killed too when the caller stops waiting (an abort
//! drops the future).
//!
//! Also [`harden`], what every child zot starts for extensions and hooks
//! gets before it is spawned.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use crate::enforce::Prepared;
use crate::scope::Scope;

/// The shell that runs the commands: the POSIX one at its fixed place, so
/// a project's `PATH` cannot choose another.
pub const SHELL: &str = "/bin/sh";

/// How long output is still read once the command has ended and its group
/// was killed. The pipes close with the group, so this only bounds the wait
/// on a process that left the group (`setsid`) and still holds one.
pub const OUTPUT_GRACE: Duration = Duration::from_millis(500);

/// Bytes read from a pipe at a time.
const READ_CHUNK: usize = 16 * 1024;

/// What one run needs.
#[derive(Debug, Clone, Copy)]
pub struct ShellCall<'a> {
    pub command: &'a str,
    pub cwd: &'a Path,
    /// The permission scope its environment is cut to (`None`: the
    /// user's environment, less the RPC token; see [`child_env`](crate::child_env)).
    pub scope: Option<&'a Scope>,
    /// Variables of its own (the project directory), added last.
    pub env: &'a [(String, String)],
    /// The sandbox it enters between fork and exec.
    pub sandbox: Option<&'a Prepared>,
    /// Written to its stdin, then end of file; `None`: stdin is `/dev/null`.
    pub input: Option<&'a [u8]>,
    /// After this it is killed with its group.
    pub timeout: Duration,
    /// The most bytes of stdout, and of stderr, kept; the rest is read and
    /// dropped, so the command never blocks on a full pipe.
    pub max_output: usize,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// It exited with this code.
    Exited(i32),
    /// A signal ended it (a crash, or a kill from elsewhere): its status as text.
    Signalled(String),
    /// It outlived its timeout; its group was killed.
    TimedOut,
    /// It could not be started, or waited for: why.
    Failed(String),
}

/// One stream of a run, up to the cap.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    /// The bytes kept, as text (invalid UTF-8 replaced).
    pub text: String,
    /// How many bytes past the cap were read and dropped.
    pub dropped: usize,
}

/// The outcome of [`run_shell`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellRun {
    pub ended: Ended,
    pub stdout: Captured,
    pub stderr: Captured,
}

/// Prepares `command` as every child zot starts for extensions, hooks and
/// commands: the environment of [`child_env`](crate::child_env) for `scope`
/// plus `env`, a process group of its own (so it is stopped with everything
/// it started), a [`supervise`](crate::supervise)d start (nothing it starts
/// outlives zot), and `sandbox` when given.
pub fn harden(
    command: &mut std::process::Command,
    scope: Option<&Scope>,
    env: &[(String, String)],
    sandbox: Option<&Prepared>,
) {
    use std::os::unix::process::CommandExt;
    crate::set_child_env(command, scope, env);
    command.process_group(0);
    crate::supervise(command);
    // In the command, below its supervisor: a command that cannot enter its
    // sandbox does not run at all.
    if let Some(sandbox) = sandbox {
        sandbox.apply(command);
    }
}

/// Kills a process group when dropped, unless disarmed: a run whose caller
/// stops waiting leaves nothing behind.
struct GroupGuard {
    pgid: libc::pid_t,
    armed: bool,
}

impl GroupGuard {
    fn kill(&self) {
        // SAFETY: killpg on a group this run created; ESRCH (nobody left) is fine.
        unsafe {
            libc::killpg(self.pgid, libc::SIGKILL);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            self.kill();
        }
    }
}

/// Runs `call.command` to its end, its timeout, or until the future is
/// dropped (which kills its group).
pub async fn run_shell(call: ShellCall<'_>) -> ShellRun {
    let mut command = Command::new(SHELL);
    harden(command.as_std_mut(), call.scope, call.env, call.sandbox);
    command
        .arg("-c")
        .arg(call.command)
        .current_dir(call.cwd)
        .stdin(if call.input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let not_run = |why: String| ShellRun {
        ended: Ended::Failed(why),
        stdout: Captured::default(),
        stderr: Captured::default(),
    };
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return not_run(format!("cannot start {SHELL}: {e}")),
    };
    // process_group(0) makes the shell a group leader: its pid is the group id.
    let Some(pgid) = child.id().and_then(|id| libc::pid_t::try_from(id).ok()) else {
        return not_run("the shell exited before it could be tracked".to_owned());
    };
    let mut guard = GroupGuard { pgid, armed: true };
    let stdin = child.stdin.take();
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let (mut out, mut err) = (Captured::default(), Captured::default());
    let (mut out_kept, mut err_kept) = (Vec::new(), Vec::new());
    let status = {
        let input = call.input.map(<[u8]>::to_vec);
        // A command that never reads its input must not hold the run: the
        // write goes beside the reads, and a closed pipe is no error.
        let feed = async move {
            if let (Some(mut stdin), Some(input)) = (stdin, input) {
                let _ = stdin.write_all(&input).await;
            }
        };
        let reads = async {
            tokio::join!(
                feed,
                capped(stdout, call.max_output, &mut out_kept, &mut out.dropped),
                capped(stderr, call.max_output, &mut err_kept, &mut err.dropped),
            )
        };
        tokio::pin!(reads);
        let deadline = tokio::time::sleep(call.timeout);
        tokio::pin!(deadline);
        let mut read_all = false;
        let status = loop {
            tokio::select! {
                _ = &mut reads, if !read_all => read_all = true,
                status = child.wait() => break Some(status),
                () = &mut deadline => break None,
            }
        };
        // What it left running in the background goes with it (all of it
        // at a timeout), which also closes the pipes those processes held.
        guard.kill();
        if !read_all {
            let _ = tokio::time::timeout(OUTPUT_GRACE, &mut reads).await;
        }
        status
    };
    let ended = match status {
        None => {
            // Killed above; reaped here (tokio reaps it anyway once dropped).
            let _ = tokio::time::timeout(OUTPUT_GRACE, child.wait()).await;
            Ended::TimedOut
        }
        Some(Ok(status)) => match status.code() {
            Some(code) => Ended::Exited(code),
            None => Ended::Signalled(status.to_string()),
        },
        Some(Err(e)) => Ended::Failed(e.to_string()),
    };
    guard.armed = false;
    out.text = String::from_utf8_lossy(&out_kept).into_owned();
    err.text = String::from_utf8_lossy(&err_kept).into_owned();
    ShellRun {
        ended,
        stdout: out,
        stderr: err,
    }
}

/// Reads `pipe` to its end into `kept`, at most `max` bytes of it, counting
/// the rest in `dropped`. Writes through references, so what was read
/// stays when the read is given up on.
async fn capped(
    pipe: Option<impl AsyncRead + Unpin>,
    max: usize,
    kept: &mut Vec<u8>,
    dropped: &mut usize,
) {
    let Some(mut pipe) = pipe else {
        return;
    };
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = max.saturating_sub(kept.len()).min(n);
                kept.extend_from_slice(&buf[..room]);
                *dropped += n - room;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call<'a>(command: &'a str, cwd: &'a Path) -> ShellCall<'a> {
        ShellCall {
            command,
            cwd,
            scope: None,
            env: &[],
            sandbox: None,
            input: None,
            timeout: Duration::from_secs(60),
            max_output: 1000,
        }
    }

    /// Whether `pid` runs (a zombie does not count).
    fn alive(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            !stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
    }

    /// Whether `pid` is gone within a deadline (SIGKILL is delivered
    /// asynchronously).
    fn gone(pid: i32) -> bool {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while alive(pid) {
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }

    fn pid_in(path: &Path) -> i32 {
        std::fs::read_to_string(path)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    #[tokio::test]
    async fn output_is_capped_per_stream_and_input_arrives() {
        let dir = tempfile::tempdir().unwrap();
        let env = [("GREETING".to_owned(), "hi".to_owned())];
        let run = run_shell(ShellCall {
            input: Some(b"from stdin\n"),
            env: &env,
            ..call(
                "head -c 3000 /dev/zero | tr '\\0' x; cat >&2; echo $GREETING >&2; exit 3",
                dir.path(),
            )
        })
        .await;
        assert_eq!(run.ended, Ended::Exited(3));
        assert_eq!(run.stdout.text, "x".repeat(1000));
        assert_eq!(run.stdout.dropped, 2000);
        assert_eq!(run.stderr.text, "from stdin\nhi\n");
        assert_eq!(run.stderr.dropped, 0);
    }

    #[tokio::test]
    async fn a_crash_a_timeout_and_a_background_child_leave_nothing_running() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        let run = run_shell(call("kill -SEGV $$", cwd)).await;
        assert!(matches!(run.ended, Ended::Signalled(_)), "{run:?}");

        // A background child holding the pipe does not keep the run waiting.
        let run = run_shell(call("sleep 600 & echo $! > bg.pid; echo done", cwd)).await;
        assert_eq!(run.ended, Ended::Exited(0));
        assert_eq!(run.stdout.text, "done\n");
        assert!(
            gone(pid_in(&cwd.join("bg.pid"))),
            "the background child went"
        );

        // Nor does a daemon that left its group and session: its supervisor
        // ends it when the command exits.
        let run = run_shell(call(
            "setsid sleep 600 </dev/null >/dev/null 2>&1 & echo $! > daemon.pid",
            cwd,
        ))
        .await;
        assert_eq!(run.ended, Ended::Exited(0));
        assert!(gone(pid_in(&cwd.join("daemon.pid"))), "the daemon went");

        // Past its timeout it is killed with its group, keeping what it printed.
        let run = run_shell(ShellCall {
            timeout: Duration::from_secs(1),
            ..call(
                "echo started; echo $$ > sh.pid; sleep 600 & echo $! > bg.pid; wait",
                cwd,
            )
        })
        .await;
        assert_eq!(run.ended, Ended::TimedOut);
        assert_eq!(run.stdout.text, "started\n");
        assert!(gone(pid_in(&cwd.join("sh.pid"))));
        assert!(gone(pid_in(&cwd.join("bg.pid"))));
    }

    #[tokio::test]
    async fn dropping_the_run_kills_its_group() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        let pid_file = cwd.join("bg.pid");
        let command = format!("sleep 600 & echo $! > '{}'; wait", pid_file.display());
        let mut run = Box::pin(run_shell(call(&command, cwd)));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::fs::read_to_string(&pid_file).is_ok_and(|t| t.trim().is_empty())
            || !pid_file.exists()
        {
            assert!(std::time::Instant::now() < deadline, "it never started");
            tokio::select! {
                _ = &mut run => panic!("it ended on its own"),
                () = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
        }
        let pid = pid_in(&pid_file);
        drop(run);
        assert!(gone(pid), "still running");
    }

    #[tokio::test]
    async fn a_missing_directory_is_a_failure_to_start() {
        let run = run_shell(call("true", Path::new("/nonexistent/zot-dir"))).await;
        assert!(
            matches!(&run.ended, Ended::Failed(why) if why.contains("cannot start")),
            "{run:?}"
        );
    }
}
