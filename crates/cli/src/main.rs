//! The `zot` binary: parses the arguments and hands them to the library
//! (`zot_cli`), which holds every mode and subcommand.

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};
use zot_cli::args::Cli;

fn main() -> ExitCode {
    // Before anything else: no process zot starts may read its memory or
    // environment (API keys, the RPC token).
    zot_sandbox::make_undumpable();
    let mut matches = Cli::command().get_matches_from(zot_cli::rewrite_mcp_env(
        zot_cli::rewrite_rpc(std::env::args_os().collect()),
    ));
    // Read before the arguments take the matches apart.
    let command = matches.subcommand_name().map(str::to_owned);
    let cli = Cli::from_arg_matches_mut(&mut matches).unwrap_or_else(|e| e.exit());
    // `zot -p trust`: a prompt that begins with a command's name would run
    // the command (here: trust the project), not ask the model.
    if let Some(name) = command
        && cli.agent.runs_a_prompt()
    {
        Cli::command()
            .error(
                clap::error::ErrorKind::ArgumentConflict,
                format!(
                    "`{name}` is a zot command, and -p, --json and --mode run a prompt: \
                     put `--` before a prompt that starts with a command's name \
                     (zot -p -- {name} ...), or leave the flag out to run the command"
                ),
            )
            .exit();
    }
    let code = match zot_cli::run(cli) {
        Ok(code) => code,
        Err(err) => {
            zot_cli::term::write(false, format_args!("zot: {err:#}"), true);
            ExitCode::FAILURE
        }
    };
    // The sandboxed bash commands' temporary directory goes with the session.
    zot_sandbox::remove_private_tmp();
    code
}
