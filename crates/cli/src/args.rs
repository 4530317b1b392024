//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "zot",
    version,
    about = "A terminal coding agent whose heart is its extension system.",
    arg_required_else_help = true
)]
pub struct Cli {
    /// Load an extension directory for this run only (repeatable); wins over an
    /// installed extension of the same name.
    #[arg(short = 'e', long = "ext", value_name = "DIR", global = true)]
    pub ext: Vec<PathBuf>,

    /// Skip discovery of installed extensions (--ext still loads).
    #[arg(long, global = true)]
    pub no_ext: bool,

    /// Trust this project's extensions for this run without saving.
    #[arg(long, global = true)]
    pub trust: bool,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Manage, diagnose and inspect extensions.
    #[command(subcommand_required = true, arg_required_else_help = true)]
    Ext {
        #[command(subcommand)]
        command: ExtCommand,
    },
    /// Trust this project's extensions (./.zot/extensions) so they may run.
    Trust(TrustArgs),
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
