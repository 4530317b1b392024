//! The `zot` binary: arguments, `$ZOT_HOME`, project trust, and the
//! subcommands. The logic lives in the library crates; this stays thin.

mod args;
mod context;
mod ext_cmd;
mod trust_cmd;

use std::process::ExitCode;

use clap::Parser;

use crate::args::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
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
        // clap's arg_required_else_help prints the help for a bare `zot`.
        return Ok(ExitCode::SUCCESS);
    };
    match command {
        Command::Ext { command } => {
            let ctx = context::Context::new(&cli)?;
            ext_cmd::run(&ctx, command)
        }
        Command::Trust(args) => {
            let ctx = context::Context::new(&cli)?;
            trust_cmd::run(&ctx, args)
        }
    }
}
