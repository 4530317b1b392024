//! The `zot` binary: arguments, `$ZOT_HOME`, project trust, and the
//! subcommands. The logic lives in the library crates; this stays thin.

mod args;
mod context;
mod credentials;
mod ext_cmd;
mod ext_hooks;
mod interactive;
mod oneshot;
mod rpc;
mod run;
mod scaffold;
mod slash;
mod trust_cmd;

use std::process::ExitCode;

use clap::Parser;

use crate::args::{Cli, Command, Mode};

fn main() -> ExitCode {
    let cli = Cli::parse_from(rewrite_rpc(std::env::args_os().collect()));
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("zot: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let Some(command) = &cli.command else {
        return agent_mode(&cli, cli.agent.mode());
    };
    match command {
        Command::Ext { command } => {
            let ctx = context::Context::new(&cli)?;
            ext_cmd::run(&ctx, command)
        }
        Command::Auth { command } => {
            let ctx = context::Context::new(&cli)?;
            credentials::auth_command(&ctx.zot_home, command)
        }
        Command::Trust(args) => {
            let ctx = context::Context::new(&cli)?;
            trust_cmd::run(&ctx, args)
        }
    }
}

fn agent_mode(cli: &Cli, mode: Mode) -> anyhow::Result<ExitCode> {
    if cli.agent.list_models {
        run::list_models(&cli.agent)?;
        return Ok(ExitCode::SUCCESS);
    }
    let ctx = context::Context::new(cli)?;
    match mode {
        Mode::Print | Mode::Json => oneshot::run(&cli.agent, &cli.prompt, &ctx, mode),
        Mode::Rpc => rpc::run(&cli.agent, &ctx),
        Mode::Interactive => interactive::run(&cli.agent, &ctx),
    }
}

/// `zot rpc …` is `zot --mode rpc …`, so every agent option works after it.
fn rewrite_rpc(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    if args.get(1).is_some_and(|a| a == "rpc") {
        args.splice(1..2, ["--mode".into(), "rpc".into()]);
    }
    args
}
