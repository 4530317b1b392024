//! The TUI's state and how it changes: keys, agent events, extension
//! updates, command replies. The transcript, the modal state and the built-in
//! commands have their own types; no terminal I/O here, so tests drive it directly.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use tokio::sync::mpsc;
use zot_core::event::AgentEvent;
use zot_core::message::{Block, Message, Role};
use zot_core::provider::StopReason;
use zot_protocol::events::TodoItem;
use zot_protocol::zot::{NotifyLevel, PanelContent};

use zot_protocol::ui::{
    BUILTIN_COMMANDS as BUILTINS, CommandInfo, CommandOrigin, CommandOutcome, CommandReply,
    FormAnswer, HostEvent, ReloadSummary, is_builtin_command,
};

use crate::bridge::Extensions;
use crate::command::Builtin;
// Where the CLI finds it (`zot_tui::app::parse_command`).
pub use crate::command::parse_command;
use crate::editor::Editor;
use crate::file_picker::FilePicker;
use crate::modal::{
    Confirmation, Dialog, FormDialog, Modal, Panel, PanelStep, PromptAction, Question, Step,
};
use crate::theme::Theme;
use crate::transcript::{Entry, Note, Transcript};
use crate::worker::{Work, WorkerEvent, WorkerHandle};

mod file_picker;
mod history;
mod images;
mod model_picker;
mod rewind;
mod sessions;

/// Two Ctrl+C within this time exit (the TUI issue).
pub const DOUBLE_CTRL_C: Duration = Duration::from_secs(2);
/// How long a status line stays (the reload status: 5 s, spec "Hot reload").
pub const STATUS_TTL: Duration = Duration::from_secs(5);
/// Bytes of a running tool's output kept for display.
pub const LIVE_OUTPUT_BYTES: usize = 4096;
/// Rows the popup shows at most.
pub const POPUP_ROWS: usize = 16;
/// Most bytes `/copy` puts on the clipboard: terminals drop longer OSC 52
/// writes (xterm's default limit is about 1 MB of base64; tmux's input
/// buffer is smaller), so a longer answer is refused with a note.
pub const MAX_COPY_BYTES: usize = 512 * 1024;

/// Where a popup row's command comes from: the popup groups them so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Group {
    Builtin,
    Extension,
    /// A Markdown command (`.claude/commands`).
    Markdown,
}

/// One popup row: the command's name, what it shows beside it, its group.
pub type PopupRow = (String, String, Group);

/// Facts about the session the app shows.
#[derive(Debug, Clone, Default)]
pub struct AppConfig {
    pub provider: String,
    pub model: String,
    pub cwd: String,
    pub context_window: u32,
    pub models: Vec<String>,
    pub skills: Vec<(String, String)>,
    /// Where sessions are kept (`$ZOT_HOME`), for the session picker.
    pub zot_home: Option<PathBuf>,
    /// Open the session picker at start (`zot -r`).
    pub resume_picker: bool,
    /// Set when there is no provider: what to tell the user.
    pub missing_credentials: Option<String>,
    /// Extension load errors from start-up.
    pub startup_errors: Vec<String>,
    /// What the project ships that waits for the user's trust (the gated
    /// inputs of docs/trust.md: extensions, MCP servers, hooks, Markdown
    /// commands, skills), one line each; empty when there is none or the
    /// project is trusted.
    pub untrusted_inputs: Vec<String>,
    /// Started in plan mode (`--plan`).
    pub plan: bool,
    /// The bash tool's sandbox at start (`--sandbox`, config `sandbox`).
    pub sandbox: zot_core::tools::BashSandbox,
    pub theme: Theme,
    /// Config warnings (unknown keys, refused project keys), shown first.
    pub warnings: Vec<String>,
    /// Who overrides a model saved with `/model` (`env ZOT_MODEL`,
    /// `project <file>`), for the status line.
    pub model_override: Option<String>,
    /// A prompt to send once the TUI is up (`zot "prompt"`).
    pub prompt: Option<String>,
    /// Images to attach at start-up (`zot -i FILE`): with the start-up
    /// prompt, else as chips in the editor.
    pub images: Vec<Block>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusKind {
    Info,
    Error,
}

#[derive(Debug, Clone)]
pub struct Status {
    pub text: String,
    pub kind: StatusKind,
    pub until: Instant,
}

/// Results of async work the app started.
#[derive(Debug)]
pub enum AppMsg {
    Command {
        name: String,
        result: Result<CommandReply, String>,
    },
    Reloaded(ReloadSummary),
    /// Background starts (MCP servers) are over, or their time is up.
    Started,
    /// `/mcp`'s answer.
    Mcp(Result<String, String>),
}

/// The whole state. Its fields are private: changes go through the event
/// handlers, reads through the accessors below, so its shape can change
/// without touching the view, the tests or the benches.
pub struct App {
    config: AppConfig,
    transcript: Transcript,
    status: Option<Status>,
    /// Prompts typed while the agent works, sent in order when it is idle.
    queue: VecDeque<String>,
    /// `!command`s run so far (each one's call id).
    shells: u64,
    /// Images attached (pasted paths, `-i`): `[image N]` is the Nth.
    images: Vec<Block>,
    /// A prompt held back while extensions start in the background, and
    /// their names (shown until they are up; Esc sends it at once).
    waiting: Option<(String, Vec<String>)>,
    editor: Editor,
    /// The `@` file picker, open while the cursor ends an `@word`.
    files: FilePicker,
    modal: Modal,
    /// The agent is working on a prompt or a command.
    busy: bool,
    spinner: usize,
    last_input_tokens: u64,
    /// Plan mode: only read-only tools.
    plan: bool,
    /// The model's plan (`todo_write`), shown above the editor.
    todos: Vec<TodoItem>,
    /// Extension footer texts, in insertion order, keyed `<extension>:<key>`.
    statuses: Vec<(String, String)>,
    /// Extension widgets (lines above the footer), in insertion order.
    widgets: Vec<(String, Vec<String>)>,
    cost: f64,
    /// Text `/copy` put aside for the terminal's clipboard (written by the
    /// run loop, which owns the terminal).
    clipboard: Option<String>,
    /// A `/model` the provider's list lacks: saved once it has answered.
    unsaved_model: Option<String>,
    /// The last turn failed in a way another model may not: Ctrl+P runs it again.
    retry_offered: bool,
    /// The share of the session's prompt tokens read from the cache, once
    /// the cache was used.
    cache_share: Option<f64>,
    quit: bool,
    last_ctrl_c: Option<Instant>,
    commands: Vec<CommandInfo>,
    worker: Option<WorkerHandle>,
    ext: Arc<dyn Extensions>,
    msgs: mpsc::UnboundedSender<AppMsg>,
}

/// Inserts or replaces `key` keeping insertion order; an `empty` value removes it.
fn upsert<T>(items: &mut Vec<(String, T)>, key: String, value: T, empty: impl Fn(&T) -> bool) {
    let position = items.iter().position(|(k, _)| *k == key);
    match (position, empty(&value)) {
        (Some(i), true) => {
            items.remove(i);
        }
        (Some(i), false) => items[i].1 = value,
        (None, false) => items.push((key, value)),
        (None, true) => {}
    }
}

impl App {
    pub fn new(
        config: AppConfig,
        worker: Option<WorkerHandle>,
        ext: Arc<dyn Extensions>,
        msgs: mpsc::UnboundedSender<AppMsg>,
    ) -> Self {
        let mut app = Self {
            transcript: Transcript::default(),
            status: None,
            queue: VecDeque::new(),
            shells: 0,
            images: Vec::new(),
            todos: Vec::new(),
            waiting: None,
            editor: Editor::new(),
            files: FilePicker::new(&config.cwd),
            modal: Modal::default(),
            busy: false,
            spinner: 0,
            last_input_tokens: 0,
            plan: config.plan,
            statuses: Vec::new(),
            widgets: Vec::new(),
            cost: 0.0,
            clipboard: None,
            unsaved_model: None,
            retry_offered: false,
            cache_share: None,
            quit: false,
            last_ctrl_c: None,
            commands: ext.commands(),
            worker,
            ext,
            msgs,
            config,
        };
        for error in app.config.startup_errors.clone() {
            app.transcript.push(Entry::ExtFailure(error));
        }
        for warning in app.config.warnings.clone() {
            app.transcript
                .push(Entry::Info(format!("warning: {warning}")));
        }
        if let Some(missing) = app.config.missing_credentials.clone() {
            app.transcript.push(Entry::Info(missing));
        }
        if !app.config.untrusted_inputs.is_empty() {
            let inputs = app.config.untrusted_inputs.clone();
            app.modal.open_dialog(Dialog::Trust { inputs });
        } else if app.config.resume_picker {
            app.open_sessions(false);
        }
        app
    }

    // -------------------------------------------------------------- accessors

    pub fn config(&self) -> &AppConfig {
        &self.config
    }

    pub fn theme(&self) -> &Theme {
        &self.config.theme
    }

    /// The transcript's entries, oldest first: a shown conversation's
    /// messages are all made into entries first (the chat makes them only
    /// as it reaches them).
    pub fn entries(&mut self) -> &[Entry] {
        self.transcript.load_all();
        self.transcript.entries()
    }

    /// Makes the newest `messages` of a shown conversation's messages that
    /// the chat has not reached into entries; whether some are left. `run`
    /// calls it between frames, so a resumed session's first frame makes
    /// only its last screen.
    pub fn make_history(&mut self, messages: usize) -> bool {
        self.transcript.make_older(messages);
        self.transcript.has_history()
    }

    /// Whether some of a shown conversation's messages wait to be made into
    /// entries (see [`Self::make_history`]).
    pub fn has_history(&self) -> bool {
        self.transcript.has_history()
    }

    /// The view renders the transcript through its cache and clamps its scroll.
    pub(crate) fn transcript_mut(&mut self) -> &mut Transcript {
        &mut self.transcript
    }

    /// The extensions' notes in the transcript, oldest first (a shown
    /// conversation's messages make none).
    pub fn notes(&self) -> Vec<&Note> {
        self.transcript
            .entries()
            .iter()
            .filter_map(|e| match e {
                Entry::Note(note) => Some(note),
                _ => None,
            })
            .collect()
    }

    /// Shows an extension's note in the transcript, where it happened.
    fn note(&mut self, extension: String, level: NotifyLevel, text: String) {
        self.transcript.push(Entry::Note(Note {
            extension,
            level,
            text,
        }));
    }

    pub fn status(&self) -> Option<&Status> {
        self.status.as_ref()
    }

    pub fn queue(&self) -> &VecDeque<String> {
        &self.queue
    }

    /// The model's plan (`todo_write`).
    pub fn todos(&self) -> &[TodoItem] {
        &self.todos
    }

    /// The extensions a held-back prompt waits for, while it waits.
    pub fn waiting_for(&self) -> Option<&[String]> {
        self.waiting.as_ref().map(|(_, names)| names.as_slice())
    }

    pub fn editor(&self) -> &Editor {
        &self.editor
    }

    pub(crate) fn modal(&self) -> &Modal {
        &self.modal
    }

    /// The open dialog, if any.
    pub fn dialog(&self) -> Option<&Dialog> {
        self.modal.dialog()
    }

    /// The open extension panel, if any (a dialog may cover it).
    pub fn panel(&self) -> Option<&Panel> {
        self.modal.panel()
    }

    /// The view clamps the panel's scroll to what it shows.
    pub(crate) fn panel_mut(&mut self) -> Option<&mut Panel> {
        self.modal.panel_mut()
    }

    pub fn is_busy(&self) -> bool {
        self.busy
    }

    /// Whether the agent is working. The worker's events set it; this is for
    /// driving the app without a worker (tests, benchmarks).
    pub fn set_busy(&mut self, busy: bool) {
        self.busy = busy;
    }

    /// Ticks so far: the spinner's frame.
    pub fn spinner(&self) -> usize {
        self.spinner
    }

    /// Plan mode: only read-only tools.
    pub fn is_plan(&self) -> bool {
        self.plan
    }

    /// Extension footer texts, in insertion order, keyed `<extension>:<key>`.
    pub fn statuses(&self) -> &[(String, String)] {
        &self.statuses
    }

    /// Extension widgets (lines above the footer), in insertion order.
    pub fn widgets(&self) -> &[(String, Vec<String>)] {
        &self.widgets
    }

    /// The share of the session's prompt read from the prompt cache, once
    /// the provider reported cache use.
    pub fn cache_share(&self) -> Option<f64> {
        self.cache_share
    }

    /// What the session cost so far, in US dollars.
    pub fn cost(&self) -> f64 {
        self.cost
    }

    /// Text for the clipboard, once: the run loop writes it (OSC 52).
    pub fn take_clipboard(&mut self) -> Option<String> {
        self.clipboard.take()
    }

    /// `/copy`: the last answer, for the clipboard.
    fn copy_last_answer(&mut self) {
        let answer = |e: &Entry| matches!(e, Entry::Assistant(text) if !text.trim().is_empty());
        let last = match self.transcript.find_last(answer) {
            Some(Entry::Assistant(text)) => Some(text.clone()),
            _ => None,
        };
        match last {
            None => self.set_status("/copy: no answer to copy yet", StatusKind::Error),
            Some(text) if text.len() > MAX_COPY_BYTES => self.set_status(
                format!(
                    "/copy: the answer is {} bytes; the clipboard escape takes at most {MAX_COPY_BYTES}",
                    text.len()
                ),
                StatusKind::Error,
            ),
            Some(text) => {
                self.set_status(
                    format!("copied the last answer ({} bytes)", text.len()),
                    StatusKind::Info,
                );
                self.clipboard = Some(text);
            }
        }
    }

    /// The user asked to exit.
    pub fn should_quit(&self) -> bool {
        self.quit
    }

    /// Shows an error unless it is the last thing shown already.
    fn push_error_once(&mut self, text: String) {
        if !matches!(self.transcript.last(), Some(Entry::Error(last)) if *last == text) {
            self.transcript.push(Entry::Error(text));
        }
    }

    fn set_status(&mut self, text: impl Into<String>, kind: StatusKind) {
        self.status = Some(Status {
            text: text.into(),
            kind,
            until: Instant::now() + STATUS_TTL,
        });
    }

    /// Refreshes the list of extension commands (after a change).
    pub fn refresh_commands(&mut self) {
        self.commands = self.ext.commands();
    }

    /// Popup rows for the editor's `/prefix`: built-ins, then extension
    /// commands, then Markdown commands, each group sorted. A row shows the
    /// command's argument hint before its description.
    pub fn popup(&self) -> Option<Vec<PopupRow>> {
        let text = self.editor.text();
        let typed = text.strip_prefix('/')?;
        if self.modal.panel().is_some() {
            return None;
        }
        if let Some(argument) = typed.strip_prefix("mcp ").filter(|a| !a.trim().is_empty()) {
            return self.mcp_popup(argument);
        }
        if typed.contains(char::is_whitespace) {
            return None;
        }
        let typed = typed.to_lowercase();
        let mut rows: Vec<PopupRow> = BUILTINS
            .iter()
            .filter(|(name, _)| name.starts_with(&typed))
            .map(|(name, desc)| ((*name).to_owned(), (*desc).to_owned(), Group::Builtin))
            .collect();
        let mut others: Vec<(Group, &CommandInfo)> = self
            .commands
            .iter()
            .filter(|c| c.name.to_lowercase().starts_with(&typed))
            .filter(|c| !is_builtin_command(&c.name))
            .map(|c| match c.origin {
                CommandOrigin::Extension => (Group::Extension, c),
                CommandOrigin::Markdown { .. } => (Group::Markdown, c),
            })
            .collect();
        others.sort_by_key(|(group, c)| (*group, c.name.to_lowercase()));
        rows.extend(others.into_iter().map(|(group, c)| {
            let desc = c
                .description
                .clone()
                .filter(|d| !d.is_empty())
                .unwrap_or_else(|| format!("({})", c.extension));
            let desc = match c.argument_hint.as_deref().filter(|h| !h.is_empty()) {
                Some(hint) => format!("{hint}  {desc}"),
                None => desc,
            };
            (c.name.clone(), desc, group)
        }));
        (!rows.is_empty()).then_some(rows)
    }

    /// Completions of `/mcp <argument>`: `off <server>` for each running
    /// MCP server and `on <server>` for each stopped one, those that start
    /// with what is typed. (Only once something is typed: `/mcp ` and Enter
    /// still lists the servers.)
    fn mcp_popup(&self, argument: &str) -> Option<Vec<PopupRow>> {
        let typed = argument.trim_start().to_lowercase();
        let rows: Vec<PopupRow> = self
            .ext
            .extension_states(Builtin::Mcp.name())
            .into_iter()
            .map(|(server, running)| {
                let (verb, what) = if running {
                    ("off", "stop it for this session")
                } else {
                    ("on", "start it for this session")
                };
                (format!("{verb} {server}"), what)
            })
            .filter(|(completion, _)| completion.to_lowercase().starts_with(&typed))
            .map(|(completion, what)| {
                (format!("mcp {completion}"), what.to_owned(), Group::Builtin)
            })
            .collect();
        (!rows.is_empty()).then_some(rows)
    }

    // ------------------------------------------------------------------ input

    pub fn on_key(&mut self, key: KeyEvent) {
        if key.kind == KeyEventKind::Release {
            return;
        }
        match self.modal {
            Modal::Editor { .. } => {
                self.editor_key(key);
                self.follow_editor(key);
            }
            Modal::Panel { .. } => self.panel_key(key),
            Modal::Dialog { .. } => self.dialog_key(key),
        }
    }

    fn editor_key(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            return self.ctrl_c();
        }
        if self.file_key(key) {
            return;
        }
        if let Some(rows) = self.popup()
            && self.popup_key(key, &rows)
        {
            return;
        }
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        match key.code {
            KeyCode::Enter if shift || alt => self.editor.newline(),
            KeyCode::Char('j') if ctrl => self.editor.newline(),
            KeyCode::Enter => {
                // A typed `!` runs a command; a pasted one is text.
                let typed = !self.editor.lead_pasted();
                let text = self.editor.take();
                self.modal.select_popup(0);
                match text.strip_prefix('!') {
                    Some(command) if typed => self.shell(command),
                    _ => self.submit(&text),
                }
            }
            KeyCode::Esc => self.escape(),
            KeyCode::Backspace if alt => self.editor.delete_word(),
            KeyCode::Backspace => self.editor.backspace(),
            KeyCode::Delete => self.editor.delete(),
            KeyCode::Left if ctrl || alt => self.editor.word_left(),
            KeyCode::Right if ctrl || alt => self.editor.word_right(),
            KeyCode::Left => self.editor.left(),
            KeyCode::Right => self.editor.right(),
            KeyCode::Up => self.editor.up(),
            KeyCode::Down => self.editor.down(),
            KeyCode::Home => self.editor.home(),
            KeyCode::End => self.editor.end(),
            KeyCode::PageUp => self.transcript.scroll_up(10),
            KeyCode::PageDown => self.transcript.scroll_down(10),
            KeyCode::Char('a') if ctrl => self.editor.home(),
            KeyCode::Char('e') if ctrl => self.editor.end(),
            KeyCode::Char('w') if ctrl => self.editor.delete_word(),
            KeyCode::Char('u') if ctrl => self.editor.kill_line(),
            KeyCode::Char('x') if ctrl => self.editor.expand_pastes(),
            KeyCode::Char('o') if ctrl => self.toggle_last_expandable(),
            KeyCode::Char('p') if ctrl => self.open_model_picker(self.retry_offered),
            KeyCode::Char('b') if alt => self.editor.word_left(),
            KeyCode::Char('f') if alt => self.editor.word_right(),
            KeyCode::Char(c) if !ctrl => {
                self.editor.insert_char(c);
                self.modal.select_popup(0);
            }
            _ => {}
        }
    }

    /// The command popup's keys: true when the key was the popup's alone.
    fn popup_key(&mut self, key: KeyEvent, rows: &[PopupRow]) -> bool {
        let selected = self.modal.popup_selected();
        match key.code {
            KeyCode::Up => {
                let row = selected.checked_sub(1).unwrap_or(rows.len() - 1);
                self.modal.select_popup(row);
                true
            }
            KeyCode::Down => {
                self.modal.select_popup((selected + 1) % rows.len());
                true
            }
            KeyCode::Tab | KeyCode::Enter => {
                let (name, _, _) = &rows[selected.min(rows.len() - 1)];
                self.editor.set_text(&format!("/{name}"));
                self.modal.select_popup(0);
                // Tab waits for arguments; Enter goes on to submit the command.
                let tab = key.code == KeyCode::Tab;
                if tab {
                    self.editor.insert_char(' ');
                }
                tab
            }
            _ => false,
        }
    }

    pub fn on_paste(&mut self, text: &str) {
        if matches!(self.modal, Modal::Editor { .. }) && !self.paste_image(text) {
            self.editor.paste(text);
            self.files.sync(&self.editor);
        }
    }

    fn ctrl_c(&mut self) {
        let now = Instant::now();
        if self
            .last_ctrl_c
            .is_some_and(|at| now.duration_since(at) <= DOUBLE_CTRL_C)
        {
            self.quit = true;
            return;
        }
        self.last_ctrl_c = Some(now);
        if self.busy {
            self.abort();
        }
        self.editor.clear();
        self.set_status("press Ctrl+C again to exit", StatusKind::Info);
    }

    fn escape(&mut self) {
        if self.editor.text().starts_with('/') && self.popup().is_some() {
            self.editor.clear();
            return;
        }
        // Esc skips the wait for starting extensions: the prompt goes now.
        if let Some((text, _)) = self.waiting.take() {
            self.send_prompt(text);
            return;
        }
        if self.busy {
            self.abort();
        }
        self.unqueue();
    }

    /// Queued prompts go back into the editor, before what is typed there:
    /// a cancel never throws away what the user wrote.
    fn unqueue(&mut self) {
        if self.queue.is_empty() {
            return;
        }
        let mut parts: Vec<String> = self.queue.drain(..).collect();
        let typed = self.editor.full_text();
        if !typed.is_empty() {
            parts.push(typed);
        }
        self.editor.set_text(&parts.join("\n"));
    }

    fn abort(&mut self) {
        if self.waiting.take().is_some() {
            self.busy = false;
            self.transcript.push(Entry::Info("aborted".into()));
        }
        if let Some(worker) = &self.worker {
            worker.abort();
        }
    }

    /// Ctrl+O: the last tool result or compaction summary, whole or folded.
    fn toggle_last_expandable(&mut self) {
        self.transcript
            .update_last(Entry::is_expandable, Entry::toggle_expanded);
    }

    fn dialog_key(&mut self, key: KeyEvent) {
        let Modal::Dialog { dialog, .. } = &mut self.modal else {
            return;
        };
        let step = dialog.key(key);
        // Closed before the step runs, which may open the next dialog.
        if !matches!(step, Step::Stay) {
            self.modal.close_dialog();
        }
        match step {
            Step::Stay | Step::Close => {}
            Step::Resume(path) => {
                if let Some(worker) = &self.worker {
                    worker.abort();
                    worker.send(Work::OpenSession(path));
                    self.busy = true;
                }
            }
            Step::DeleteSession(summary, all) => self.delete_session(summary, all),
            Step::WidenSessions(all) => self.open_sessions(all),
            Step::Prompt(action, entry_id, back) => self.prompt_picked(action, entry_id, back),
            Step::PickModel(choice, retry) => self.model_picked(choice, retry),
            Step::Trust(true) => match self.ext.trust_project() {
                Ok(()) => self.reload(),
                Err(e) => self.set_status(format!("trust: {e}"), StatusKind::Error),
            },
            Step::Rewind {
                entry_id,
                code,
                conversation,
            } => self.rewind(entry_id, code, conversation),
            Step::Trust(false) => self.set_status(
                "the project's extensions, servers and hooks stay off (run `zot trust` to allow them)",
                StatusKind::Info,
            ),
        }
    }

    fn panel_key(&mut self, key: KeyEvent) {
        let Modal::Panel { panel, .. } = &mut self.modal else {
            return;
        };
        match panel.key(key) {
            PanelStep::Stay => {}
            PanelStep::Close => self.close_panel(true),
            // The TUI's own panel (`/btw`) has no owner to tell.
            PanelStep::Send(..) if panel.extension.is_empty() => {}
            PanelStep::Send(name, text) => {
                self.ext.panel_key(&panel.extension, &panel.id, name, text);
            }
        }
    }

    fn close_panel(&mut self, tell_owner: bool) {
        if let Some(panel) = self.modal.take_panel()
            && tell_owner
            && !panel.extension.is_empty()
        {
            self.ext.panel_close(&panel.extension, &panel.id);
        }
    }

    fn open_panel(&mut self, extension: &str, content: PanelContent) {
        // One panel at a time: the previous owner learns its panel closed.
        self.close_panel(true);
        self.modal.put_panel(Panel {
            extension: extension.to_owned(),
            id: content.id,
            title: content.title.unwrap_or_default(),
            lines: content.lines,
            footer: content.footer.unwrap_or_default(),
            scroll: 0,
        });
    }

    // ------------------------------------------------------------- submitting

    /// Handles a line as typed: a built-in or extension command, or a prompt.
    pub fn submit(&mut self, text: &str) {
        if text.trim().is_empty() {
            return;
        }
        if let Some((name, args)) = parse_command(text) {
            if let Some(builtin) = Builtin::parse(name) {
                return self.builtin(builtin, args);
            }
            if let Some(cmd) = self
                .commands
                .iter()
                .find(|c| c.name.eq_ignore_ascii_case(name))
            {
                let name = cmd.name.clone();
                let ext = Arc::clone(&self.ext);
                let msgs = self.msgs.clone();
                let args = args.to_owned();
                tokio::spawn(async move {
                    let result = ext.invoke(&name, &args).await;
                    let _ = msgs.send(AppMsg::Command { name, result });
                });
                return;
            }
            return self.set_status(
                format!("unknown command /{name} (type /help)"),
                StatusKind::Error,
            );
        }
        self.prompt(text.to_owned());
    }

    /// `!command`: the worker runs it under the bash tool's rules and shows
    /// it as a bash call; command and output go with the next prompt.
    fn shell(&mut self, command: &str) {
        let command = command.trim();
        if command.is_empty() {
            return self.set_status(
                "type a command after ! to run it (its output goes with your next prompt)",
                StatusKind::Error,
            );
        }
        let Some(worker) = &self.worker else {
            return self.push_error_once("no agent to run the command".into());
        };
        self.shells += 1;
        worker.send(Work::Shell {
            id: format!("shell-{}", self.shells),
            command: command.to_owned(),
        });
        self.busy = true;
    }

    /// `/btw QUESTION`: the worker asks it apart from the conversation; the
    /// answer opens in a panel.
    fn side_question(&mut self, question: &str) {
        if question.is_empty() {
            return self.set_status("/btw QUESTION asks a side question", StatusKind::Error);
        }
        let Some(worker) = &self.worker else {
            return self.push_error_once("no agent to ask".into());
        };
        worker.send(Work::SideQuestion(question.to_owned()));
        self.busy = true;
        self.set_status("asking aside (Esc closes the answer)", StatusKind::Info);
    }

    /// `/model <id>` is remembered in the user config; the status line
    /// says where it went and who overrides it at the next start.
    fn save_model(&mut self, provider: Option<&str>, model: &str) {
        let shown = provider.map_or_else(|| model.to_owned(), |p| format!("{p}:{model}"));
        match self.ext.save_model(provider, model) {
            Ok(file) => {
                let text = match &self.config.model_override {
                    Some(by) => format!(
                        "model: {shown} (saved to {file}, but {by} overrides it at start-up)"
                    ),
                    None => format!("model: {shown} (saved to {file})"),
                };
                // In the transcript, where the switch happened.
                self.transcript.push(Entry::Info(text));
            }
            Err(e) => self
                .transcript
                .push(Entry::Error(format!("model: {shown} (not saved: {e})"))),
        }
    }

    fn prompt(&mut self, text: String) {
        if self.worker.is_none() || self.config.missing_credentials.is_some() {
            let why = self
                .config
                .missing_credentials
                .clone()
                .unwrap_or_else(|| "no model configured".into());
            // What was typed stays on screen, with why it went nowhere (in
            // full: the transcript wraps, the status line cuts).
            self.transcript.push(Entry::User(text));
            self.transcript.push(Entry::Error(why));
            return;
        }
        if self.busy {
            self.queue.push_back(text);
            return;
        }
        self.start(text);
    }

    fn start(&mut self, text: String) {
        self.transcript.push(Entry::User(text.clone()));
        let starting = self.ext.starting();
        if starting.is_empty() || self.worker.is_none() {
            return self.send_prompt(text);
        }
        // Held back until the extensions starting in the background (MCP
        // servers) are up, so their tools are in the first request.
        self.waiting = Some((text, starting));
        self.busy = true;
        let ext = Arc::clone(&self.ext);
        let msgs = self.msgs.clone();
        tokio::spawn(async move {
            ext.wait_started().await;
            let _ = msgs.send(AppMsg::Started);
        });
    }

    fn send_prompt(&mut self, text: String) {
        // A new prompt: the failed turn is no longer the one to run again.
        self.retry_offered = false;
        if let Some(worker) = &self.worker {
            let images = self.images_in(&text);
            worker.send(Work::Prompt { text, images });
            self.busy = true;
        }
    }

    fn builtin(&mut self, builtin: Builtin, args: &str) {
        match builtin {
            Builtin::Help => {
                let text = self.help();
                self.transcript.push(Entry::Info(text));
            }
            Builtin::Model => {
                if args.is_empty() {
                    self.open_model_picker(false);
                } else if !self.switch_by_name(args) {
                    if let Some(worker) = &self.worker {
                        worker.abort();
                        let model = args.to_owned();
                        worker.send(Work::SetModel {
                            provider: None,
                            model,
                        });
                    }
                    self.config.model = args.to_owned();
                    let listed = self.config.models.iter().any(|m| m == args);
                    if listed || self.config.models.is_empty() {
                        self.unsaved_model = None;
                        self.save_model(None, args);
                    } else {
                        // A typo must not become every later start-up's model.
                        self.unsaved_model = Some(args.to_owned());
                        self.set_status(
                            format!(
                                "model: {args} is not a {} model zot knows; it is saved once it answers",
                                self.config.provider
                            ),
                            StatusKind::Error,
                        );
                    }
                }
            }
            Builtin::Clear => {
                self.abort();
                self.transcript.clear();
                self.unqueue();
                if let Some(worker) = &self.worker {
                    worker.send(Work::Clear);
                }
            }
            Builtin::Compact => {
                if let Some(worker) = &self.worker {
                    worker.abort();
                    worker.send(Work::Compact);
                    self.busy = true;
                    self.set_status("compacting…", StatusKind::Info);
                }
            }
            Builtin::Sessions => self.open_sessions(false),
            Builtin::Tree => self.ask_tree(PromptAction::Tree),
            Builtin::Fork => self.ask_tree(PromptAction::Fork),
            Builtin::Jump => self.ask_tree(PromptAction::Jump),
            Builtin::Undo => self.plan_rewind(None),
            Builtin::Rewind => self.ask_tree(PromptAction::Rewind),
            Builtin::Name => self.name_session(args),
            Builtin::Export => self.export_session(args),
            Builtin::Skills => {
                let text = if self.config.skills.is_empty() {
                    "no skills (add SKILL.md files under ./.zot/skills or $ZOT_HOME/skills)"
                        .to_owned()
                } else {
                    self.config
                        .skills
                        .iter()
                        .map(|(n, d)| format!("  {n}: {d}"))
                        .collect::<Vec<_>>()
                        .join("\n")
                };
                self.transcript.push(Entry::Info(text));
            }
            Builtin::Hooks => {
                let lines = self.ext.hooks();
                let text = if lines.is_empty() {
                    "no command hooks (see docs/hooks.md: ~/.claude/settings.json, $ZOT_HOME/hooks.json, ./.claude/settings.json…)".to_owned()
                } else {
                    lines.join("\n")
                };
                self.transcript.push(Entry::Info(text));
            }
            Builtin::Mcp => {
                let ext = Arc::clone(&self.ext);
                let msgs = self.msgs.clone();
                let args = args.to_owned();
                tokio::spawn(async move {
                    let result = ext.extensions_view(Builtin::Mcp.name(), &args).await;
                    let _ = msgs.send(AppMsg::Mcp(result));
                });
            }
            Builtin::ReloadExt => {
                self.abort();
                self.reload();
            }
            Builtin::Yolo => {
                if let Some(worker) = &self.worker {
                    worker
                        .confirm
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .ask = false;
                }
                self.set_status("yolo: tools run without asking", StatusKind::Info);
            }
            Builtin::Plan | Builtin::Act => {
                let plan = builtin == Builtin::Plan;
                self.plan = plan;
                if let Some(worker) = &self.worker {
                    worker.send(Work::SetPlan(plan));
                }
            }
            Builtin::Sandbox => self.sandbox(args),
            Builtin::Copy => self.copy_last_answer(),
            Builtin::Btw => self.side_question(args),
            Builtin::Exit => self.quit = true,
        }
    }

    /// `/sandbox [off|read-only|workspace] [net]`: shows the bash tool's
    /// sandbox, or switches it from the next command on.
    fn sandbox(&mut self, args: &str) {
        use zot_core::tools::{BashSandbox, SandboxMode};
        let mut words = args.split_whitespace();
        let Some(mode) = words.next() else {
            self.transcript.push(Entry::Info(format!(
                "bash sandbox: {} (switch with /sandbox off|read-only|workspace [net])",
                self.config.sandbox.describe()
            )));
            return;
        };
        let net = match words.next() {
            None => false,
            Some("net") => true,
            Some(other) => {
                self.set_status(
                    format!("/sandbox: unknown option {other:?} (only \"net\")"),
                    StatusKind::Error,
                );
                return;
            }
        };
        let Some(mode) = SandboxMode::parse(mode) else {
            self.set_status(
                format!("/sandbox: unknown mode {mode:?} (off, read-only or workspace)"),
                StatusKind::Error,
            );
            return;
        };
        let sandbox = BashSandbox { mode, net };
        self.config.sandbox = sandbox;
        if let Some(worker) = &self.worker {
            worker.send(Work::SetSandbox(sandbox));
        }
        self.set_status(
            format!("bash sandbox: {}", sandbox.describe()),
            StatusKind::Info,
        );
    }

    /// `/help`: every command, then the keys.
    fn help(&self) -> String {
        let mut text = String::from("Commands:\n");
        for (name, desc) in BUILTINS {
            text.push_str(&format!("  /{name:<12} {desc}\n"));
        }
        for cmd in &self.commands {
            let desc = cmd.description.clone().unwrap_or_default();
            let hint = cmd
                .argument_hint
                .as_deref()
                .map(|h| format!("{h} "))
                .unwrap_or_default();
            text.push_str(&format!(
                "  /{:<12} {hint}{desc} [{}]\n",
                cmd.name, cmd.extension
            ));
        }
        text.push_str(
            "Keys: Enter send (queued while busy) · Shift+Enter newline · Esc cancel · \
             Ctrl+C twice exit · PgUp/PgDn scroll · Ctrl+O expand the last tool result or summary · Ctrl+P pick a model · \
             Ctrl+X show a folded paste whole · !command run it (output goes with the next prompt) · \
             @ pick a file to attach",
        );
        text
    }

    fn reload(&mut self) {
        self.set_status("reloading extensions…", StatusKind::Info);
        let ext = Arc::clone(&self.ext);
        let msgs = self.msgs.clone();
        tokio::spawn(async move {
            let summary = ext.reload().await;
            let _ = msgs.send(AppMsg::Reloaded(summary));
        });
    }

    // ---------------------------------------------------------------- updates

    pub fn on_app(&mut self, msg: AppMsg) {
        match msg {
            AppMsg::Command { name, result } => match result {
                Err(e) => self.set_status(format!("extension /{name}: {e}"), StatusKind::Error),
                Ok(reply) => self.command_reply(reply),
            },
            AppMsg::Started => {
                if let Some((text, _)) = self.waiting.take() {
                    self.send_prompt(text);
                }
            }
            AppMsg::Mcp(Ok(text)) => self.transcript.push(Entry::Info(text)),
            AppMsg::Mcp(Err(e)) => self.set_status(format!("/mcp: {e}"), StatusKind::Error),
            AppMsg::Reloaded(summary) => {
                self.refresh_commands();
                let mut text = format!(
                    "reloaded: {} stopped, {} loaded ({} ready)",
                    summary.stopped, summary.loaded, summary.ready
                );
                let failed = !summary.errors.is_empty();
                if failed {
                    text.push_str(&format!(", {} error(s)", summary.errors.len()));
                }
                self.set_status(
                    text,
                    if failed {
                        StatusKind::Error
                    } else {
                        StatusKind::Info
                    },
                );
                self.transcript.retain(|e| !e.is_ext_failure());
                for error in summary.errors {
                    self.transcript.push(Entry::ExtFailure(error));
                }
                if let Some(worker) = &self.worker {
                    worker.send(Work::ResetPrompt);
                }
            }
        }
    }

    fn command_reply(&mut self, reply: CommandReply) {
        let reply = reply.without_controls();
        if let Some(error) = &reply.error {
            self.set_status(
                format!("extension /{}: {error}", reply.command),
                StatusKind::Error,
            );
        }
        match reply.outcome {
            CommandOutcome::Prompt(text) if !text.trim().is_empty() => self.prompt(text),
            CommandOutcome::Insert(text) => self.editor.insert_str(&text),
            CommandOutcome::Display(text) if !text.is_empty() => {
                self.note(reply.extension, NotifyLevel::Info, text);
            }
            CommandOutcome::OpenPanel(content) => self.open_panel(&reply.extension, content),
            _ => {}
        }
    }

    pub fn on_host(&mut self, event: HostEvent) {
        // Extension text never drives the terminal (no clear screen, title or clipboard writes).
        match event.without_controls() {
            HostEvent::Notify {
                extension,
                level,
                message,
            } => self.note(extension, level, message),
            HostEvent::ClearNotes { extension } => self
                .transcript
                .retain(|e| !matches!(e, Entry::Note(n) if n.extension == extension)),
            HostEvent::Submit { text, .. } => self.submit(&text),
            HostEvent::PanelRender {
                extension,
                panel: render,
            } => {
                if let Some(panel) = self
                    .modal
                    .panel_mut()
                    .filter(|p| p.extension == extension && p.id == render.panel_id)
                {
                    if let Some(title) = render.title.filter(|t| !t.is_empty()) {
                        panel.title = title;
                    }
                    panel.lines = render.lines;
                    if let Some(footer) = render.footer {
                        panel.footer = footer;
                    }
                }
            }
            HostEvent::PanelClose {
                extension,
                panel_id,
            } => {
                if self
                    .modal
                    .panel()
                    .is_some_and(|p| p.extension == extension && p.id == panel_id)
                {
                    self.modal.take_panel();
                }
            }
            HostEvent::Warning { extension, message } => {
                self.note(extension, NotifyLevel::Warn, message);
            }
            HostEvent::LoadFailed { error, .. } => self.transcript.push(Entry::ExtFailure(error)),
            HostEvent::TrustChanged { changes } => {
                self.transcript.push(Entry::Info(format!(
                    "warning: {}",
                    HostEvent::trust_changed_message(&changes)
                )));
                self.modal.stack_dialog(Dialog::Retrust { changes });
            }
            HostEvent::CommandsChanged => {
                self.refresh_commands();
                // A server that came up no longer holds the prompt back.
                if let Some((_, names)) = &mut self.waiting {
                    let starting = self.ext.starting();
                    names.retain(|n| starting.contains(n));
                }
            }
            HostEvent::Status { key, text, .. } => {
                upsert(&mut self.statuses, key, text, String::is_empty)
            }
            HostEvent::Widget { key, lines, .. } => {
                upsert(&mut self.widgets, key, lines, Vec::is_empty)
            }
            // The agent's tool list and session file take these through its
            // hooks; an exit is shown as the warning that comes with it.
            HostEvent::ToolsChanged | HostEvent::Entry { .. } | HostEvent::Exited { .. } => {}
            HostEvent::Question {
                extension,
                prompt,
                options,
                reply: answer,
            } => {
                // One dialog at a time: a question arriving over another is dismissed.
                if self.modal.dialog().is_some() {
                    answer.send(None);
                } else {
                    let question = Question::new(extension, prompt, options, answer);
                    self.modal.open_dialog(Dialog::Question(question));
                }
            }
            HostEvent::Form {
                extension,
                form,
                reply,
            } => {
                if self.modal.dialog().is_some() {
                    reply.send(FormAnswer::Cancel);
                } else {
                    let form = FormDialog::new(extension, form, reply);
                    self.modal.open_dialog(Dialog::Form(form));
                }
            }
        }
    }

    pub fn on_worker(&mut self, event: WorkerEvent) {
        match event {
            WorkerEvent::Agent(event) => self.on_agent(event),
            WorkerEvent::Idle => {
                self.busy = false;
                if let Some(next) = self.queue.pop_front() {
                    self.start(next);
                }
            }
            WorkerEvent::Status(text) => self.set_status(text, StatusKind::Info),
            WorkerEvent::Error(text) => self.push_error_once(text),
            WorkerEvent::Retryable => self.offer_retry(),
            WorkerEvent::Transcript(messages) => self.load_transcript(messages),
            WorkerEvent::Confirm(request) => {
                // Replaces any other dialog: the agent waits on this one.
                self.modal
                    .open_dialog(Dialog::Confirm(Confirmation::new(request)));
            }
            WorkerEvent::Tree(action, rows) => self.open_prompts(action, rows),
            WorkerEvent::EditorText(text) => self.editor.set_text(&text),
            WorkerEvent::RewindOffer(offer) => self.offer_rewind(*offer),
            WorkerEvent::Sessions(all) => self.open_sessions(all),
            WorkerEvent::SideAnswer { question, answer } => {
                self.close_panel(true);
                self.modal.put_panel(Panel {
                    extension: String::new(),
                    id: "btw".to_owned(),
                    title: format!("btw: {}", zot_core::agent::preview(&question.into())),
                    lines: answer.lines().map(str::to_owned).collect(),
                    footer: "Esc closes · not kept in the conversation".to_owned(),
                    scroll: 0,
                });
            }
        }
    }

    fn on_agent(&mut self, event: AgentEvent) {
        match event {
            AgentEvent::AssistantStart => self.transcript.push(Entry::Assistant(String::new())),
            AgentEvent::TextDelta { delta } => {
                self.transcript.update_last(Entry::is_assistant, |e| {
                    if let Entry::Assistant(text) = e {
                        text.push_str(&delta);
                    }
                });
            }
            AgentEvent::AssistantMessage { content, .. } => {
                let text = Message {
                    role: Role::Assistant,
                    content,
                    time: None,
                }
                .text();
                if text.is_empty() {
                    self.transcript.remove_last(Entry::is_assistant);
                } else {
                    self.transcript
                        .update_last(Entry::is_assistant, |e| *e = Entry::Assistant(text));
                }
            }
            AgentEvent::AssistantBlocked { extension, reason } => {
                self.transcript.remove_last(Entry::is_assistant);
                self.transcript.push(Entry::Info(format!(
                    "[{extension}] hid the answer: {reason}"
                )));
            }
            AgentEvent::PromptBlocked { source, reason } => {
                self.transcript.push(Entry::Info(format!(
                    "[{source}] blocked the prompt: {reason}"
                )));
            }
            AgentEvent::ToolCall { id, name, args } => {
                let preview = zot_core::agent::preview(&args);
                self.transcript.push(Entry::tool(id, name, preview));
            }
            AgentEvent::ToolProgress { id, text, .. } => {
                self.transcript.update_last(
                    |e| e.is_tool_call(&id),
                    |e| {
                        if let Entry::Tool { live, .. } = e {
                            live.push_str(&text);
                            // Only the tail is shown; keep memory bounded on chatty commands.
                            if live.len() > LIVE_OUTPUT_BYTES {
                                let cut = live.len() - LIVE_OUTPUT_BYTES;
                                let boundary = (cut..live.len())
                                    .find(|i| live.is_char_boundary(*i))
                                    .unwrap_or(live.len());
                                live.replace_range(..boundary, "");
                            }
                        }
                    },
                );
            }
            AgentEvent::ToolResult {
                id,
                is_error,
                content,
            } => self.tool_result(&id, is_error, content),
            AgentEvent::Usage { usage, cumulative } => {
                self.last_input_tokens = usage.input + usage.cache_read + usage.cache_write;
                self.cost = cumulative.cost_usd;
                if let Some(model) = self.unsaved_model.take() {
                    self.save_model(None, &model);
                }
                if cumulative.cache_read + cumulative.cache_write > 0 {
                    self.cache_share = Some(cumulative.cache_share());
                }
            }
            AgentEvent::TurnEnd {
                stop: StopReason::Refusal,
                error,
            } => {
                let why = error.unwrap_or_else(|| "no reason given".into());
                self.transcript
                    .push(Entry::Error(format!("the model refused: {why}")));
            }
            AgentEvent::TurnEnd {
                stop: StopReason::Length,
                error: Some(note),
            } => self.transcript.push(Entry::Info(note)),
            AgentEvent::TurnEnd {
                stop: StopReason::Error,
                error: Some(error),
            } => self.transcript.push(Entry::Error(error)),
            AgentEvent::TurnEnd {
                stop: StopReason::Aborted,
                error,
            } => {
                let text = error.unwrap_or_else(|| "aborted".into());
                self.transcript.push(Entry::Info(text));
            }
            AgentEvent::CompactDone { summary, automatic } => {
                self.transcript.push(Entry::Compaction {
                    summary,
                    automatic,
                    expanded: false,
                });
            }
            AgentEvent::Error { message } => self.push_error_once(message),
            AgentEvent::Todo { items } => self.todos = items,
            AgentEvent::Checkpoint { files, notes, .. } => self.on_checkpoint(files.len(), notes),
            AgentEvent::Subagent {
                parent_tool_call_id,
                event,
            } => match *event {
                AgentEvent::Usage { cumulative, .. } => self.cost = cumulative.cost_usd,
                event => crate::subagent::show(&mut self.transcript, &parent_tool_call_id, event),
            },
            _ => {}
        }
    }

    /// Spinner, status expiry.
    pub fn tick(&mut self) {
        self.spinner = self.spinner.wrapping_add(1);
        self.files.poll();
        crate::subagent::tick(&mut self.transcript, self.spinner);
        if self
            .status
            .as_ref()
            .is_some_and(|s| Instant::now() >= s.until)
        {
            self.status = None;
        }
    }

    /// Context use as a percentage of the window.
    pub fn context_percent(&self) -> u64 {
        if self.config.context_window == 0 {
            return 0;
        }
        self.last_input_tokens * 100 / u64::from(self.config.context_window)
    }
}
