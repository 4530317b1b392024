//! Permission scopes for the processes zot starts (extensions, MCP stdio
//! servers, hook commands, the bash tool) and the kernel machinery that holds
//! a process to its scope. Also the one function that builds the environment
//! of every child process ([`child_env`]), how every such child is started
//! ([`harden`]), and the one runner of short shell commands (hook commands,
//! a Markdown command's `` !`cmd` ``): [`run_shell`]; every such child runs
//! under a [`supervise`]d copy of zot that ends what it leaves behind.
//!
//! The flow: a [`Scope`] is declared (manifest `permissions`) and narrowed by
//! the user's [`Policy`] into a [`Grant`]; [`resolve`] turns a scope into
//! absolute paths for one program; [`prepare`] builds the Landlock ruleset
//! and the seccomp filter before the fork and checks what this kernel can
//! enforce; [`Prepared::apply`] installs them in a `Command` between fork
//! and exec.

mod bash;
mod enforce;
mod env;
mod fork_try;
mod mounts;
mod policy;
mod probe;
mod resolve;
mod scope;
mod shell;
mod supervise;

pub use bash::{BashSandbox, SandboxMode, private_tmp, remove_private_tmp};
pub use enforce::{Prepared, SandboxError, missing, prepare};
pub use env::{
    MODEL_KEY_ENV, PROJECT_DIR_ENV, RPC_TOKEN_ENV, SAFE_BASE, TMP_ENV, child_env, set_child_env,
};
pub use policy::{Enforce, Origin, POLICY_FILE, Policy, PolicyError};
pub use probe::{Kernel, PRETEND_MISSING_ENV};
pub use resolve::{Places, PrivateTmp, Resolved, resolve};
pub use scope::{Grant, Net, Place, Scope, ScopeError};
pub use shell::{Captured, Ended, OUTPUT_GRACE, SHELL, ShellCall, ShellRun, harden, run_shell};
pub use supervise::{LEFTOVER_GRACE, supervise};

/// Makes this process non-dumpable (Linux), as every zot process is: a
/// process zot starts, even one running as the same user or as root
/// without capabilities, cannot read zot's memory or environment (API keys,
/// the RPC token) through `/proc` or ptrace. Children inherit it until they
/// exec.
pub fn make_undumpable() {
    #[cfg(target_os = "linux")]
    // SAFETY: a prctl without pointers.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}
