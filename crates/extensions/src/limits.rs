//! Every timeout, limit and grace period of the host, with where its value
//! comes from. `Limits` bundles them so a host config (and tests) can shorten them.

use std::time::Duration;

/// The first frame must be `hello` within this time. The spec sets no bound
/// (the reference waits forever, a bug); the extension host issue sets 10 s.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(10);

/// Without `ready`, this much silence after the last frame counts as ready
/// (legacy SDKs; research zot.md §2.2 item 13).
pub const AUTO_READY_IDLE: Duration = Duration::from_millis(250);

/// Each extension's own deadline for `ready` after `hello_ack` (research §2.2 item 14).
pub const READY_TIMEOUT: Duration = Duration::from_secs(3);

/// How long a slash command may take to answer (research §2.4 item 31).
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// Default deadline of a tool call (spec, "tool_call": "default 60s").
pub const TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// Per-extension deadline of an intercept, request write included
/// (spec, "event_intercept_response": "Missing the response within 5s").
pub const INTERCEPT_TIMEOUT: Duration = Duration::from_secs(5);

/// Shared grace period for all extensions to exit after `shutdown`
/// (spec, "Lifecycle": "waits up to 2s").
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Time between SIGTERM and SIGKILL for holdouts (research §2.9 item 60).
pub const TERM_GRACE: Duration = Duration::from_secs(1);

/// After an extension's stdout closes, how long to wait for it to exit before
/// killing its process group, so its exit status can be reported. The host's own choice.
pub const EXIT_REAP_GRACE: Duration = Duration::from_millis(500);

/// Largest frame accepted from an extension (spec, "System prompt replacement":
/// "complete transport frames are limited to 4 MiB").
pub const MAX_FRAME_BYTES: usize = 4 * 1024 * 1024;

/// Largest encoded `system_prompt` value in a reply (spec, "System prompt replacement": 1 MiB).
pub const MAX_SYSTEM_PROMPT_BYTES: usize = 1024 * 1024;

/// Size at which `ext-<name>.log` is rotated to `ext-<name>.log.1` (one old
/// file is kept), checked when the log is opened and when the host writes to
/// it. The host's own choice (hardening issue: "for example 10 MiB").
pub const MAX_LOG_BYTES: u64 = 10 * 1024 * 1024;

/// Commands one extension may register; later ones are refused with one
/// warning. The host's own choice (hardening issue: "e.g. 256 each").
pub const MAX_COMMANDS: usize = 256;

/// Tools one extension may register; later ones are refused with one
/// warning. Every tool goes into every model request, so this bounds the
/// request size one extension can cause.
pub const MAX_TOOLS: usize = 256;

/// How often the host pings a WebSocket extension, and how long each ping
/// may wait for its pong: a ping still unanswered when the next one is due
/// ends the connection (remote extensions issue: "Pings every 20 s; no pong
/// within 20 s is a disconnect").
pub const PING_INTERVAL: Duration = Duration::from_secs(20);

/// The host's timeouts and limits. `Default` gives the constants above.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub hello_timeout: Duration,
    pub auto_ready_idle: Duration,
    pub ready_timeout: Duration,
    pub command_timeout: Duration,
    pub tool_timeout: Duration,
    pub intercept_timeout: Duration,
    pub shutdown_grace: Duration,
    pub term_grace: Duration,
    pub exit_reap_grace: Duration,
    /// [`PING_INTERVAL`]: the ping period and pong deadline of WebSocket extensions.
    pub ping_interval: Duration,
    pub max_frame_bytes: usize,
    pub max_system_prompt_bytes: usize,
    pub max_log_bytes: u64,
    pub max_commands: usize,
    pub max_tools: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            hello_timeout: HELLO_TIMEOUT,
            auto_ready_idle: AUTO_READY_IDLE,
            ready_timeout: READY_TIMEOUT,
            command_timeout: COMMAND_TIMEOUT,
            tool_timeout: TOOL_TIMEOUT,
            intercept_timeout: INTERCEPT_TIMEOUT,
            shutdown_grace: SHUTDOWN_GRACE,
            term_grace: TERM_GRACE,
            exit_reap_grace: EXIT_REAP_GRACE,
            ping_interval: PING_INTERVAL,
            max_frame_bytes: MAX_FRAME_BYTES,
            max_system_prompt_bytes: MAX_SYSTEM_PROMPT_BYTES,
            max_log_bytes: MAX_LOG_BYTES,
            max_commands: MAX_COMMANDS,
            max_tools: MAX_TOOLS,
        }
    }
}
