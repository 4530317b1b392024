//! The `zot` binary's logic as a library: the modes (print and JSON in
//! `oneshot`, `rpc`, the interactive wiring), the hook glue between the
//! agent and the extension host (`ext_hooks`), and the `zot ext`, `zot
//! trust` and `zot auth` subcommands. `main.rs` only parses arguments and
//! calls [`run`], so all of this is testable without spawning the binary.

#[macro_use]
pub mod term;

pub mod args;
pub mod commands;
pub mod config;
pub mod config_cmd;
pub mod context;
pub mod credentials;
pub mod doctor;
pub mod ecosystem_view;
pub mod ext_cmd;
pub mod ext_hooks;
pub mod hooks_cmd;
pub mod interactive;
pub mod lines;
pub mod logging;
pub mod mcp_cmd;
pub mod models_cmd;
pub mod oneshot;
pub mod paths;
pub mod permissions_cmd;
pub mod providers;
pub mod rpc;
pub mod run;
pub mod sampling;
pub mod scaffold;
pub mod sessions_cmd;
pub mod slash;
pub mod trust_cmd;

use std::process::ExitCode;

use anyhow::Context as _;

use crate::args::{Cli, Command, Mode};

/// Runs what the parsed arguments ask for.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    // Before anything reads the working directory (project, trust,
    // sessions, context files): `--cwd` is as if zot started there.
    if let Some(dir) = &cli.cwd {
        std::env::set_current_dir(dir)
            .with_context(|| format!("--cwd {}: cannot change to it", dir.display()))?;
    }
    if let Some(zot_home) = zot_extensions::default_zot_home() {
        logging::init(&zot_home);
    }
    tracing::info!(version = env!("CARGO_PKG_VERSION"), "zot starts");
    // Before anything builds an HTTP client (reqwest has no provider of its own).
    zot_core::provider::install_tls_provider();
    // The ecosystems beyond zot and nimlet extensions that the host runs.
    zot_mcp::install();
    zot_hooks::ecosystem::install();
    let Some(command) = &cli.command else {
        let mode = cli.agent.mode();
        let result = agent_mode(&cli, mode);
        // Why a JSON run could not start is a stream line too (what fails
        // once the stream runs is one already).
        if mode == Mode::Json
            && let Err(e) = &result
        {
            oneshot::json_error(&format!("{e:#}"));
        }
        return result;
    };
    match command {
        Command::Ext { command } => {
            let ctx = context::Context::new(&cli)?;
            ext_cmd::run(&ctx, command)
        }
        Command::Config { command } => {
            // Reads the files itself: `path` and `unset` work on a broken one.
            let zot_home = zot_extensions::default_zot_home().context(
                "cannot tell where $ZOT_HOME is: set ZOT_HOME (or XDG_STATE_HOME, or HOME)",
            )?;
            let project = std::env::current_dir().context("cannot read the working directory")?;
            config_cmd::run(&zot_home, &project, command)
        }
        Command::Completions { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            let mut script = Vec::new();
            clap_complete::generate(*shell, &mut command, "zot", &mut script);
            print_to_pipe(&script)
        }
        Command::Man => {
            let command = <Cli as clap::CommandFactory>::command();
            let mut page = Vec::new();
            clap_mangen::Man::new(command).render(&mut page)?;
            print_to_pipe(&page)
        }
        Command::Models {
            provider,
            refresh,
            json,
        } => {
            let mut ctx = context::Context::new(&cli)?;
            ctx.load_settings()?;
            let mut args = cli.agent.clone();
            if provider.is_some() {
                args.provider.clone_from(provider);
            }
            ctx.settings.apply(&mut args);
            for warning in &ctx.settings.warnings {
                errln!("zot: warning: {warning}");
            }
            models_cmd::run(&args, &ctx.zot_home, *refresh, *json)
        }
        Command::Doctor { json } => {
            let mut ctx = context::Context::new(&cli)?;
            doctor::run(&cli, &mut ctx, *json)
        }
        Command::Auth { command } => {
            let ctx = context::Context::new(&cli)?;
            credentials::auth_command(&ctx.zot_home, command)
        }
        Command::Mcp { command } => {
            let ctx = context::Context::new(&cli)?;
            mcp_cmd::run(&ctx, command)
        }
        Command::Hooks { command } => {
            let mut ctx = context::Context::new(&cli)?;
            ctx.load_settings()?;
            hooks_cmd::run(&ctx, command)
        }
        Command::Sessions { command } => {
            let ctx = context::Context::new(&cli)?;
            sessions_cmd::run(&ctx, command)
        }
        Command::Trust(args) => {
            let ctx = context::Context::new(&cli)?;
            trust_cmd::run(&ctx, args)
        }
    }
}

/// Writes `bytes` to stdout. A reader that stops early (`zot man | head`)
/// is not an error: the output was for it, and it has what it wanted.
fn print_to_pipe(bytes: &[u8]) -> anyhow::Result<ExitCode> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::Error::new(e).context("cannot write to stdout"))
        }
        _ => Ok(ExitCode::SUCCESS),
    }
}

fn agent_mode(cli: &Cli, mode: Mode) -> anyhow::Result<ExitCode> {
    let mut ctx = context::Context::new(cli)?;
    ctx.load_settings()?;
    // Flags first; what they leave unset comes from the environment and the
    // config files (a `--model PROVIDER:ID` sets the provider before they do).
    let mut args = cli.agent.clone();
    run::split_model(&mut args, &ctx.settings.providers)?;
    ctx.settings.apply(&mut args);
    if args.list_models {
        return models_cmd::run(&args, &ctx.zot_home, false, false);
    }
    if mode != Mode::Interactive {
        for warning in &ctx.settings.warnings {
            errln!("zot: warning: {warning}");
        }
    }
    match mode {
        Mode::Print | Mode::Json => oneshot::run(&args, &cli.prompt, &ctx, mode),
        Mode::Rpc => rpc::run(&args, &ctx),
        Mode::Interactive => interactive::run(&args, &cli.prompt, &ctx),
    }
}

/// The async runtime of the print and JSON modes, which run one prompt: a
/// single thread. Each extra thread costs its stack and, with glibc, a
/// malloc arena of its own that keeps freed memory (see BENCHMARKS.md,
/// performance issue); one prompt's work is a chain of awaits that two
/// threads do not speed up. Blocking work (files, capping outputs) still
/// goes to tokio's blocking pool.
pub fn prompt_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// `zot rpc …` is `zot --mode rpc …`, so every agent option works after it.
pub fn rewrite_rpc(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    if args.get(1).is_some_and(|a| a == "rpc") {
        args.splice(1..2, ["--mode".into(), "rpc".into()]);
    }
    args
}

/// `-e KEY=VALUE` after `zot mcp add` is `--env KEY=VALUE` (as in `claude mcp
/// add`), not the global `-e/--ext DIR`; only up to `--`, after which the
/// words belong to the server's command.
pub fn rewrite_mcp_env(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    if args.get(1).is_none_or(|a| a != "mcp") || args.get(2).is_none_or(|a| a != "add") {
        return args;
    }
    for arg in args.iter_mut().skip(3) {
        if arg == "--" {
            break;
        }
        if arg == "-e" {
            *arg = "--env".into();
        } else if let Some(rest) = arg.to_str().and_then(|a| a.strip_prefix("-e")) {
            let value = rest.strip_prefix('=').unwrap_or(rest);
            *arg = format!("--env={value}").into();
        }
    }
    args
}

/// What the library's unit tests share: an agent wired to a loopback model
/// and a host with no extensions, built as the binary builds them.
#[cfg(test)]
pub(crate) mod testing {
    use clap::Parser;
    use zot_testkit::MockModel;

    use crate::args::{Cli, Mode};
    use crate::context::Context;
    use crate::run::{self, Running};

    pub(crate) struct Setup {
        pub(crate) running: Running,
        pub(crate) ctx: Context,
        _dir: tempfile::TempDir,
    }

    pub(crate) async fn setup(model: &MockModel, mode: Mode) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let (home, project) = (dir.path().join("home"), dir.path().join("project"));
        std::fs::create_dir_all(&project).unwrap();
        let url = model.url();
        let cli = Cli::parse_from([
            "zot",
            "--provider",
            "anthropic",
            "--api-key",
            "test-key",
            "--base-url",
            url.as_str(),
            "--no-ext",
            "--no-session",
            "--no-skills",
        ]);
        let ctx = Context::at(&cli, home, project).unwrap();
        let running = run::start(&cli.agent, &ctx, mode).await.unwrap();
        Setup {
            running,
            ctx,
            _dir: dir,
        }
    }

    /// Every line sent so far, once the sender side is gone.
    pub(crate) async fn drain<T>(mut rx: tokio::sync::mpsc::UnboundedReceiver<T>) -> Vec<T> {
        let mut out = Vec::new();
        while let Some(item) = rx.recv().await {
            out.push(item);
        }
        out
    }
}
