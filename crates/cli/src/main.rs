//! The `zot` binary: parses the arguments and hands them to the library
//! (`zot_cli`), which holds every mode and subcommand.

use std::process::ExitCode;

use clap::Parser;
use zot_cli::args::Cli;

fn main() -> ExitCode {
    // Before anything else: no process zot starts may read its memory or
    // environment (API keys, the RPC token).
    zot_sandbox::make_undumpable();
    let cli = Cli::parse_from(zot_cli::rewrite_mcp_env(zot_cli::rewrite_rpc(
        std::env::args_os().collect(),
    )));
    let code = match zot_cli::run(cli) {
        Ok(code) => code,
        Err(err) => {
            zot_cli::term::write(
                false,
                &format!("zot: {}\n", zot_cli::term::for_stderr(&format!("{err:#}"))),
            );
            ExitCode::FAILURE
        }
    };
    // The sandboxed bash commands' temporary directory goes with the session.
    zot_sandbox::remove_private_tmp();
    code
}
