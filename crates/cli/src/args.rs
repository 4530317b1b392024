//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "zot",
    version,
    about = "A terminal coding agent whose heart is its extension system.",
    after_help = "`zot rpc [OPTIONS]` serves the agent over JSON lines on stdin/stdout (same as --mode rpc)."
)]
pub struct Cli {
    /// Run as if started in DIR: its project, trust, sessions and context
    /// files (relative paths in other options are read from there too).
    #[arg(short = 'C', long = "cwd", value_name = "DIR", global = true)]
    pub cwd: Option<PathBuf>,

    /// Load an extension directory for this run only (repeatable); wins over an
    /// installed extension of the same name.
    #[arg(short = 'e', long = "ext", value_name = "DIR", global = true)]
    pub ext: Vec<PathBuf>,

    /// Skip discovery of installed extensions (--ext still loads).
    #[arg(long, global = true)]
    pub no_ext: bool,

    /// Run no command hooks (Claude-style hooks from settings files) this run.
    #[arg(long, global = true)]
    pub no_hooks: bool,

    /// Trust this project's extensions for this run without saving.
    #[arg(long, global = true)]
    pub trust: bool,

    #[command(flatten)]
    pub agent: AgentArgs,

    /// The prompt (print and JSON modes read stdin when it is empty).
    #[arg(value_name = "PROMPT")]
    pub prompt: Vec<String>,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// How to run the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    Interactive,
    Print,
    Json,
    Rpc,
}

#[derive(Debug, Clone, Default, Args)]
pub struct AgentArgs {
    /// Print the final answer and exit.
    #[arg(short = 'p', long, group = "modes")]
    pub print: bool,
    /// Stream every agent event as one JSON object per line.
    #[arg(long, group = "modes")]
    pub json: bool,
    /// The run mode (same as -p, --json, or `zot rpc`).
    #[arg(long, value_enum, group = "modes")]
    pub mode: Option<Mode>,

    /// anthropic, openai, ollama, or a named provider or preset (see docs/providers.md) [env: ZOT_PROVIDER, config: provider].
    #[arg(long)]
    pub provider: Option<String>,
    /// The model id, or PROVIDER:ID to choose the provider too (split at the first colon) [env: ZOT_MODEL, config: model].
    #[arg(long)]
    pub model: Option<String>,
    /// API key (else ANTHROPIC_API_KEY / OPENAI_API_KEY, else $ZOT_HOME/auth.json).
    #[arg(long)]
    pub api_key: Option<String>,
    /// The provider's base URL, e.g. http://localhost:11434 for ollama [env: ZOT_BASE_URL, config: base_url].
    #[arg(long)]
    pub base_url: Option<String>,
    /// The wire API of an OpenAI-style provider: responses (default at api.openai.com) or chat (default elsewhere, and for ollama) [config: api].
    #[arg(long, value_parser = ["responses", "chat"], ignore_case = true)]
    pub api: Option<String>,
    /// Extended thinking: low, medium or high.
    #[arg(long, value_parser = ["low", "medium", "high"], ignore_case = true)]
    pub reasoning: Option<String>,
    /// Attach an image (png, jpeg, gif or webp, up to 5 MiB) to the prompt
    /// (repeatable; print, JSON and the TUI's start-up prompt).
    #[arg(short = 'i', long = "image", value_name = "FILE")]
    pub images: Vec<PathBuf>,
    /// List the models (the same as `zot models`) and exit.
    #[arg(long)]
    pub list_models: bool,

    /// Replace the built-in system prompt (and $ZOT_HOME/SYSTEM.md).
    #[arg(long, value_name = "TEXT")]
    pub system_prompt: Option<String>,
    /// Append to the system prompt (repeatable).
    #[arg(long, value_name = "TEXT")]
    pub append_system_prompt: Vec<String>,

    /// Continue the newest session of this directory.
    #[arg(short = 'c', long = "continue")]
    pub continue_session: bool,
    /// Continue the session in this file.
    #[arg(long, value_name = "PATH", conflicts_with = "continue_session")]
    pub session: Option<std::path::PathBuf>,
    /// Keep no session file.
    #[arg(long, conflicts_with_all = ["continue_session", "session"])]
    pub no_session: bool,
    /// Resume a session: alone, pick one in the TUI; `--resume=ID` (a
    /// unique prefix of the id is enough) resumes it directly, in any mode.
    #[arg(
        short = 'r',
        long = "resume",
        value_name = "ID",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "",
        conflicts_with_all = ["continue_session", "session", "no_session"]
    )]
    pub resume: Option<String>,

    /// Only these tools (built-in and extension), comma-separated.
    #[arg(long, value_delimiter = ',', value_name = "A,B")]
    pub tools: Option<Vec<String>>,
    /// No tools at all.
    #[arg(long, conflicts_with = "tools")]
    pub no_tools: bool,
    /// Stop after this many model calls per prompt (reaching it before the
    /// model has finished fails the prompt, saying so).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_steps: Option<u32>,
    /// Ask before each tool call (interactive mode only).
    #[arg(long)]
    pub no_yolo: bool,
    /// Do not load skills.
    #[arg(long)]
    pub no_skills: bool,
    /// Plan mode: only read-only tools (read, skill, and extension tools
    /// whose capabilities are read/user) are offered.
    #[arg(long)]
    pub plan: bool,
    /// Confine the bash tool: `workspace` writes only the project, its git
    /// top-level and temp dirs; `read-only` only temp dirs; no network either
    /// way. Default off (config key `sandbox`; see docs/permissions.md).
    #[arg(long, value_name = "MODE", value_parser = ["read-only", "workspace", "off"])]
    pub sandbox: Option<String>,
    /// Keep the network for sandboxed bash commands (config key `sandbox_net`).
    #[arg(long)]
    pub sandbox_net: bool,
}

impl AgentArgs {
    /// The bash tool's sandbox these arguments ask for.
    pub fn bash_sandbox(&self) -> zot_sandbox::BashSandbox {
        zot_sandbox::BashSandbox {
            mode: self
                .sandbox
                .as_deref()
                .and_then(zot_sandbox::SandboxMode::parse)
                .unwrap_or_default(),
            net: self.sandbox_net,
        }
    }
}

impl AgentArgs {
    /// Whether a flag asks for a prompt to be run (-p, --json, --mode).
    pub fn runs_a_prompt(&self) -> bool {
        self.print || self.json || self.mode.is_some()
    }

    pub fn mode(&self) -> Mode {
        match (self.print, self.json, self.mode) {
            (true, _, _) => Mode::Print,
            (_, true, _) => Mode::Json,
            (_, _, Some(mode)) => mode,
            _ => Mode::Interactive,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Manage, diagnose and inspect extensions.
    #[command(subcommand_required = true, arg_required_else_help = true)]
    Ext {
        #[command(subcommand)]
        command: ExtCommand,
    },
    /// Inspect command hooks (Claude-style hooks from settings files).
    #[command(subcommand_required = true, arg_required_else_help = true)]
    Hooks {
        #[command(subcommand)]
        command: HooksCommand,
    },
    /// Trust this project's extensions (./.zot/extensions) so they may run.
    Trust(TrustArgs),
    /// Read and write settings: $ZOT_HOME/config.json, or ./.zot/config.json with --project.
    #[command(subcommand_required = true, arg_required_else_help = true)]
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// The model table beside what each provider serves (asked only with a
    /// key, or of ollama; each answer is kept a day in $ZOT_HOME/cache/).
    Models {
        /// Only this provider (built in or named).
        #[arg(long)]
        provider: Option<String>,
        /// Ask the providers again instead of using the day-old lists.
        #[arg(long)]
        refresh: bool,
        /// One JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Check everything: config and where each value comes from, credentials,
    /// the model endpoint, $ZOT_HOME, sessions, then every extension.
    Doctor {
        /// One JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print a shell completion script (see the README for where to put it).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print zot's manual page (roff): `zot man | man -l -`.
    Man,
    /// Store or forget a provider's API key in $ZOT_HOME/auth.json (mode 0600).
    #[command(subcommand_required = true, arg_required_else_help = true)]
    Auth {
        #[command(subcommand)]
        command: AuthCommand,
    },
    /// List, show and delete sessions (this directory's unless --all).
    #[command(subcommand_required = true, arg_required_else_help = true)]
    Sessions {
        #[command(subcommand)]
        command: SessionsCommand,
    },
    /// Manage MCP servers: $ZOT_HOME/mcp.json (user) and ./.mcp.json (project).
    #[command(subcommand_required = true, arg_required_else_help = true)]
    Mcp {
        #[command(subcommand)]
        command: McpCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// This directory's sessions, newest first: id, last change, messages,
    /// cost, model and title.
    List {
        /// Every directory's sessions.
        #[arg(long)]
        all: bool,
        /// One JSON array instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// A session's summary and its prompts as a tree.
    Show {
        /// The session id, or a unique prefix of it.
        id: String,
        /// One JSON document (summary, leaf and every entry).
        #[arg(long)]
        json: bool,
    },
    /// Delete a session and its saved tool outputs.
    Rm {
        /// The session id, or a unique prefix of it.
        id: String,
    },
    /// Write a session's current branch as a self-contained web page
    /// (default) or as Markdown, to `<id>.html`/`<id>.md` here or to -o.
    Export {
        /// The session id, or a unique prefix of it.
        id: String,
        /// A web page: markdown rendered, code highlighted, tool calls and
        /// thinking collapsed, safe to open (the default).
        #[arg(long, conflicts_with = "md")]
        html: bool,
        /// Markdown for pasting into an issue.
        #[arg(long)]
        md: bool,
        /// Where to write it (`-` for stdout).
        #[arg(short = 'o', long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Take a session file in (validated; copied, never linked) among this
    /// directory's sessions.
    Import { file: PathBuf },
    /// Delete every session not changed for a while.
    Prune {
        /// How long unchanged: 30d, 12h, 2w, "1 month".
        #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
        older_than: std::time::Duration,
    },
}

#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// Every configured hook: its file, scope, event, matcher and command,
    /// and whether it is supported and trusted.
    List {
        /// One JSON array instead of lines.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Every setting with its value and where it comes from.
    List {
        /// Only what the project's .zot/config.json says.
        #[arg(long)]
        project: bool,
    },
    /// Print one setting's value (exit 1 when it is not set).
    Get {
        key: String,
        /// From the project's .zot/config.json.
        #[arg(long)]
        project: bool,
    },
    /// Set a key: the value is read as JSON (12, false, "text"), else taken as a string.
    Set {
        key: String,
        value: String,
        /// In the project's .zot/config.json (model, subagent_model, reasoning, max_steps,
        /// auto_compact only).
        #[arg(long)]
        project: bool,
    },
    /// Remove a key.
    Unset {
        key: String,
        /// From the project's .zot/config.json.
        #[arg(long)]
        project: bool,
    },
    /// Print the config file's path.
    Path {
        /// The project's .zot/config.json.
        #[arg(long)]
        project: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum AuthCommand {
    /// Read an API key from stdin and store it.
    Login {
        /// anthropic, openai, or a named provider (its key is bound to its base URL).
        provider: String,
    },
    /// Forget a stored API key.
    Logout {
        /// anthropic, openai, or a named provider.
        provider: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ExtCommand {
    /// List every extension found, with its state.
    List {
        /// One JSON document instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Start every extension as zot would and report what happened.
    Doctor {
        /// One JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Install from a directory (copied) or a git URL (shallow clone).
    Install {
        /// A directory, or a git URL (https://, git@, ssh://, file://, or ending in .git).
        source: String,
        /// Install into ./.zot/extensions instead of $ZOT_HOME/extensions.
        #[arg(long)]
        project: bool,
        /// Install even when an extension of the same name is already installed there.
        #[arg(long)]
        force: bool,
    },
    /// Delete an installed extension.
    #[command(alias = "rm")]
    Remove {
        /// Manifest name or directory name.
        name: String,
        /// Do not ask for confirmation.
        #[arg(short = 'y', long)]
        yes: bool,
        #[command(flatten)]
        scope: ScopeArgs,
    },
    /// Enable an installed extension.
    Enable {
        /// Manifest name or directory name.
        name: String,
        #[command(flatten)]
        scope: ScopeArgs,
    },
    /// Disable an installed extension without removing it.
    Disable {
        /// Manifest name or directory name.
        name: String,
        #[command(flatten)]
        scope: ScopeArgs,
    },
    /// Write a new extension that works as it is: manifest, code (one slash
    /// command, one tool, shutdown handling) and a README.
    New {
        /// The extension's name; also its slash command and the start of its tool's name.
        name: String,
        /// The language (and SDK) to write it in.
        #[arg(long, value_enum)]
        lang: Lang,
        /// Where to write it (default ./<name>); must not exist, or be an empty directory.
        #[arg(long, value_name = "PATH")]
        dir: Option<PathBuf>,
    },
    /// Show an extension's effective permission scope and what this kernel enforces of it.
    Permissions {
        /// Manifest name or directory name.
        name: String,
        /// One JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print an extension's log (its stderr and zot's notes about it).
    Logs {
        /// Manifest name or directory name.
        name: String,
        /// Keep printing as the log grows, until Ctrl-C.
        #[arg(short = 'f', long)]
        follow: bool,
    },
}

#[derive(Debug, Args)]
pub struct ScopeArgs {
    /// Only look in ./.zot/extensions.
    #[arg(long, conflicts_with = "global")]
    pub project: bool,
    /// Only look in $ZOT_HOME/extensions.
    #[arg(long)]
    pub global: bool,
}

#[derive(Debug, Args)]
pub struct TrustArgs {
    /// Revoke trust for this project.
    #[arg(long, conflicts_with = "list")]
    pub revoke: bool,
    /// List trusted projects.
    #[arg(long)]
    pub list: bool,
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Add a server: `zot mcp add <name> -- <command> [args...]`, or
    /// `zot mcp add --transport http|sse <name> <url>`.
    Add(McpAddArgs),
    /// Every configured server, with its scope, transport and state.
    List {
        /// One JSON document instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// One server's settings (env and header values are never shown).
    Get {
        name: String,
        /// One JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Remove a server from its config file.
    #[command(alias = "rm")]
    Remove {
        name: String,
        /// Which file, when both have the server.
        #[arg(long, value_enum)]
        scope: Option<McpScope>,
    },
    /// Add the servers configured for Claude Code (~/.claude.json) or Codex
    /// (~/.codex/config.toml): chosen interactively, or named, or --all.
    Import {
        /// The servers to import (default: ask, on a terminal).
        names: Vec<String>,
        /// Import every server found.
        #[arg(long, conflicts_with = "names")]
        all: bool,
        /// Where to add them.
        #[arg(long, value_enum, default_value = "user")]
        scope: McpScope,
    },
    /// Sign in to a remote server that asks for OAuth (opens $BROWSER, or
    /// prints the URL); the tokens are kept in $ZOT_HOME (mode 0600) and refreshed.
    Login { name: String },
    /// Forget the tokens `zot mcp login` stored for a server.
    Logout { name: String },
}

/// Which MCP config file: the user's `$ZOT_HOME/mcp.json` or the project's `.mcp.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum McpScope {
    /// $ZOT_HOME/mcp.json (alias: global).
    #[value(alias = "global")]
    User,
    /// ./.mcp.json, shared with the project (runs once the project is trusted).
    Project,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum McpTransport {
    /// A local command speaking MCP over stdin/stdout.
    Stdio,
    /// Streamable HTTP.
    Http,
    /// The legacy HTTP+SSE transport.
    Sse,
}

#[derive(Debug, Args)]
pub struct McpAddArgs {
    /// Which config file to add it to.
    #[arg(long, value_enum, default_value = "user")]
    pub scope: McpScope,
    /// How zot reaches the server.
    #[arg(short = 't', long, value_enum, default_value = "stdio")]
    pub transport: McpTransport,
    /// An environment variable for a stdio server (repeatable; `-e` works too).
    #[arg(long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// An HTTP header for a remote server (repeatable).
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    pub header: Vec<String>,
    /// The server's name (letters, digits, `-` and `_`).
    pub name: String,
    /// The command and its arguments (after `--`), or the server's URL.
    #[arg(value_name = "COMMAND_OR_URL", required = true)]
    pub target: Vec<String>,
}

/// The language of a new extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    /// Rust with the `zot-ext` SDK (built with `./build`).
    #[value(alias = "rs")]
    Rust,
    /// Python 3.9+ with the `zot_ext` SDK.
    #[value(alias = "py")]
    Python,
    /// TypeScript-checked JavaScript with the `@zot/ext` SDK (Node 18+, no build step).
    #[value(alias = "typescript")]
    Ts,
    /// Plain POSIX sh, no SDK, no jq.
    #[value(alias = "shell")]
    Sh,
}
