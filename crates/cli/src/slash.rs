//! A `/command` typed outside the TUI (print, JSON and RPC modes).
//!
//! All three modes share one rule: a line that parses as a command must name
//! an extension or Markdown command, or it fails with "unknown command
//! /name". Outcomes that need the TUI (insert into the editor, open a
//! panel) fail too.

use zot_extensions::CommandOutcome;
use zot_tui::app::parse_command;

use crate::commands::Commands;

/// What a prompt comes to once its command, if any, has run.
#[derive(Debug)]
pub enum Resolved {
    /// Not a command: send the prompt as given.
    Unchanged,
    /// The command asked for this prompt to be sent instead.
    Prompt(String),
    /// The command showed a note; nothing goes to the model.
    Display {
        extension: String,
        command: String,
        text: String,
    },
    /// The command finished with nothing to show or send.
    Done,
}

/// Runs `text` as a command when it is one.
pub async fn resolve(commands: &Commands, text: &str) -> Result<Resolved, String> {
    let Some((name, args)) = parse_command(text) else {
        return Ok(Resolved::Unchanged);
    };
    let reply = commands.invoke(name, args).await?;
    if let Some(error) = &reply.error {
        return Err(format!("/{}: {error}", reply.command));
    }
    let needs_tui = match reply.outcome {
        CommandOutcome::Prompt(p) if !p.trim().is_empty() => return Ok(Resolved::Prompt(p)),
        CommandOutcome::Prompt(_) | CommandOutcome::Noop => return Ok(Resolved::Done),
        CommandOutcome::Display(text) => {
            return Ok(Resolved::Display {
                extension: reply.extension,
                command: reply.command,
                text,
            });
        }
        CommandOutcome::Insert(_) => "insert",
        CommandOutcome::OpenPanel(_) => "open_panel",
    };
    Err(format!(
        "/{}: \"{needs_tui}\" needs the interactive TUI",
        reply.command
    ))
}
