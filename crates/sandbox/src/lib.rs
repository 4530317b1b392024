//! Permission scopes for the processes zot starts (extensions, MCP stdio
//! servers, hook commands, the bash tool) and the kernel machinery that holds
//! a process to its scope. Also the one function that builds the environment
//! of every child process ([`child_env`]), how every such child is started
//! ([`harden`]), and the one runner of short shell commands (hook commands,
//! a Markdown command's `` !`cmd` ``): [`run_shell`].
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
mod policy;
mod probe;
mod resolve;
mod scope;
mod shell;

pub use bash::{BashSandbox, SandboxMode};
pub use enforce::{Prepared, SandboxError, missing, prepare};
pub use env::{PROJECT_DIR_ENV, RPC_TOKEN_ENV, SAFE_BASE, child_env, set_child_env};
pub use policy::{Enforce, Origin, POLICY_FILE, Policy, PolicyError};
pub use probe::{Kernel, PRETEND_MISSING_ENV};
pub use resolve::{Places, PrivateTmp, Resolved, resolve};
pub use scope::{Grant, Net, Place, Scope, ScopeError};
pub use shell::{Captured, Ended, OUTPUT_GRACE, SHELL, ShellCall, ShellRun, harden, run_shell};
