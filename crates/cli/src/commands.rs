//! The slash commands beside the built-ins, as every mode sees them: the
//! extension host's winners first, then Markdown commands (`.claude/commands`,
//! the project's before the user's) whose names no built-in or extension
//! holds. Lists them, runs one, and re-reads the Markdown files on reload.
//! Another kind of command (an MCP server's prompts) is one more source here.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use zot_core::markdown_commands::{self, Expansion, MarkdownCommand};
use zot_extensions::zot_protocol::ui::{CommandOrigin, is_builtin_command};
use zot_extensions::{CommandInfo, CommandOutcome, CommandReply, DispatchError, ExtensionHost};

/// Every command source of a run; cheap to clone.
#[derive(Clone)]
pub struct Commands {
    inner: Arc<Inner>,
}

struct Inner {
    host: ExtensionHost,
    project: PathBuf,
    home: Option<PathBuf>,
    markdown: Mutex<Vec<MarkdownCommand>>,
    project_trusted: AtomicBool,
}

impl Commands {
    /// Reads the Markdown commands; the second value says which files were
    /// skipped and why (each once per run: see [`Commands::reload_markdown`]).
    pub fn new(
        host: ExtensionHost,
        project: PathBuf,
        home: Option<PathBuf>,
        project_trusted: bool,
    ) -> (Self, Vec<String>) {
        let (markdown, skipped) = markdown_commands::discover(&project, home.as_deref());
        let skipped = first_warnings(&host, skipped);
        let commands = Self {
            inner: Arc::new(Inner {
                host,
                project,
                home,
                markdown: Mutex::new(markdown),
                project_trusted: AtomicBool::new(project_trusted),
            }),
        };
        (commands, skipped)
    }

    pub fn host(&self) -> &ExtensionHost {
        &self.inner.host
    }

    /// Re-reads the Markdown commands (with the extensions' reload); returns
    /// the files skipped that were not already reported in this run.
    pub fn reload_markdown(&self) -> Vec<String> {
        let inner = &self.inner;
        let (markdown, skipped) =
            markdown_commands::discover(&inner.project, inner.home.as_deref());
        *self.markdown() = markdown;
        first_warnings(&inner.host, skipped)
    }

    /// The project was trusted: its commands may run `` !`cmd` `` from now on.
    pub fn set_project_trusted(&self, trusted: bool) {
        self.inner.project_trusted.store(trusted, Ordering::SeqCst);
    }

    fn markdown(&self) -> std::sync::MutexGuard<'_, Vec<MarkdownCommand>> {
        self.inner
            .markdown
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Extension commands, then the Markdown commands no built-in or
    /// extension command shadows.
    pub fn list(&self) -> Vec<CommandInfo> {
        let mut out = self.inner.host.commands();
        let taken = |name: &str, out: &[CommandInfo]| {
            is_builtin_command(name) || out.iter().any(|c| c.name.eq_ignore_ascii_case(name))
        };
        for cmd in self.markdown().iter() {
            if !taken(&cmd.name, &out) {
                out.push(CommandInfo {
                    name: cmd.name.clone(),
                    description: cmd.description.clone(),
                    argument_hint: cmd.argument_hint.clone(),
                    extension: cmd.scope.label().to_owned(),
                    origin: CommandOrigin::Markdown {
                        path: cmd.path.clone(),
                    },
                });
            }
        }
        out
    }

    /// Runs the command `name` (case-insensitively, with or without `/`):
    /// an extension's when one holds the name, else a Markdown command's,
    /// whose expanded text comes back as a prompt.
    pub async fn invoke(&self, name: &str, args: &str) -> Result<CommandReply, String> {
        let name = name.strip_prefix('/').unwrap_or(name);
        match self.inner.host.invoke_command(name, args).await {
            Err(DispatchError::UnknownCommand(_)) => {}
            other => return other.map_err(|e| e.to_string()),
        }
        let found = (!is_builtin_command(name))
            .then(|| {
                self.markdown()
                    .iter()
                    .find(|c| c.name.eq_ignore_ascii_case(name))
                    .cloned()
            })
            .flatten();
        let Some(cmd) = found else {
            return Err(DispatchError::UnknownCommand(name.to_owned()).to_string());
        };
        let inner = &self.inner;
        let expansion = Expansion {
            cwd: &inner.project,
            home: inner.home.as_deref(),
            project_trusted: inner.project_trusted.load(Ordering::SeqCst),
        };
        let (outcome, error) = match cmd.expand(args, expansion).await {
            Ok(text) => (CommandOutcome::Prompt(text), None),
            Err(e) => (CommandOutcome::Noop, Some(e)),
        };
        Ok(CommandReply {
            extension: cmd.scope.label().to_owned(),
            command: cmd.name,
            outcome,
            error,
        })
    }
}

/// Of the skipped files in `skipped`, those the user has not heard of yet
/// in this run.
fn first_warnings(host: &ExtensionHost, skipped: Vec<String>) -> Vec<String> {
    skipped
        .into_iter()
        .filter(|s| host.first_warning(MARKDOWN_SOURCE, s))
        .collect()
}

/// The source the host's once-per-run record files Markdown warnings under.
const MARKDOWN_SOURCE: &str = "markdown-commands";
