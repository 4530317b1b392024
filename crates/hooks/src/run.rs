//! One hook call: its command run by zot-sandbox's shell runner (`sh -c` in
//! the project directory, in a process group of its own, one line of JSON
//! on stdin, stdout and stderr read up to a cap, killed with its group when
//! it outlives its timeout), under the hook's confinement.

use std::path::Path;
use std::time::Duration;

use zot_sandbox::{Ended, ShellCall};

pub use zot_extensions::transport::Confinement;

/// Most bytes of a hook's stdout, and of its stderr, that are kept (the
/// issue: 1 MiB each); the rest is read and dropped so the hook never
/// blocks on a full pipe.
pub const MAX_HOOK_OUTPUT: usize = 1 << 20;

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
    let mut confinement = call.confinement;
    confinement.env.extend(
        call.env
            .iter()
            .map(|(key, value)| ((*key).to_owned(), value.display().to_string())),
    );
    let mut line = call.input.to_vec();
    line.push(b'\n');
    // `confinement` (and its private temporary directory) lives until the
    // run has ended.
    let run = zot_sandbox::run_shell(ShellCall {
        command: call.command,
        cwd: call.cwd,
        scope: confinement.scope.as_ref(),
        env: &confinement.env,
        sandbox: confinement.sandbox.as_ref(),
        input: Some(&line),
        timeout: call.timeout,
        max_output: MAX_HOOK_OUTPUT,
    })
    .await;
    let stderr = run.stderr.text;
    match run.ended {
        Ended::Exited(code) => Ran::Exited {
            code,
            stdout: run.stdout.text,
            stderr,
        },
        Ended::Signalled(why) | Ended::Failed(why) => Ran::Failed { why, stderr },
        Ended::TimedOut => Ran::TimedOut {
            after: call.timeout,
            stderr,
        },
    }
}
