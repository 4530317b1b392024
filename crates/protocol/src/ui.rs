//! Types shared by the extension host and the front ends (TUI, print, JSON,
//! RPC): what extensions make the user see, the built-in command list, and
//! command and reload outcomes. Protocol-neutral: every adapter produces
//! these, and no front end needs to know which protocol an extension speaks.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

use crate::zot::{NotifyLevel, PanelContent, PanelRender};

/// Slash commands built into the front ends, with what they do. An extension
/// command of the same name (case-insensitively) is shadowed.
pub const BUILTIN_COMMANDS: &[(&str, &str)] = &[
    ("help", "show commands and keys"),
    ("model", "show or switch the model: /model <id>"),
    ("clear", "start a fresh conversation"),
    ("compact", "summarise older messages to free context"),
    ("sessions", "resume an earlier session (any directory)"),
    ("tree", "the session's prompts as a tree: go on from one"),
    ("fork", "a new branch before an earlier prompt"),
    ("jump", "scroll the transcript to an earlier prompt"),
    ("undo", "take back the last prompt: files and conversation"),
    (
        "rewind",
        "back to before a prompt: code, conversation or both",
    ),
    ("name", "name this session: /name TITLE"),
    (
        "export",
        "this session as a web page here (/export md: Markdown)",
    ),
    ("copy", "copy the last answer to the clipboard"),
    (
        "btw",
        "a side question, kept out of the conversation: /btw QUESTION",
    ),
    ("skills", "list the skills the agent can load"),
    ("hooks", "list the command hooks and whether they run"),
    ("mcp", "MCP servers and their tools: /mcp off|on <server>"),
    ("reload-ext", "restart every extension"),
    ("yolo", "stop asking before tool calls"),
    ("plan", "plan mode: only read-only tools"),
    ("act", "act mode: every tool"),
    (
        "sandbox",
        "bash sandbox: /sandbox off|read-only|workspace [net]",
    ),
    ("exit", "quit zot"),
];

/// The names of the agent's own tools, in the order the model sees them,
/// then `skill` (added beside them when the agent has skills) and `task`
/// (the subagent tool, after every other built-in): the names no
/// extension tool can take (one taking one is reported as shadowed).
pub const BUILTIN_TOOLS: &[&str] = &[
    "read",
    "write",
    "edit",
    "bash",
    "grep",
    "find",
    "ls",
    "web_fetch",
    "todo_write",
    "skill",
    "task",
];

/// Whether `name` (without `/`) is a built-in command, case-insensitively.
pub fn is_builtin_command(name: &str) -> bool {
    BUILTIN_COMMANDS
        .iter()
        .any(|(b, _)| b.eq_ignore_ascii_case(name))
}

/// `text` without terminal control sequences, for showing extension text
/// on a terminal: escape sequences (CSI such as colours and cursor moves,
/// OSC such as clipboard writes and window titles, DCS, APC, PM, SOS, and
/// two-byte escapes) are removed whole, other C0 and C1 controls and
/// bidirectional overrides dropped; newlines and tabs stay. An extension
/// cannot clear the screen, set the title or write the clipboard through zot.
pub fn strip_controls(text: &str) -> std::borrow::Cow<'_, str> {
    let needs = text
        .chars()
        .any(|c| is_control(c) && c != '\n' && c != '\t');
    if !needs {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' | '\t' => out.push(c),
            // ESC: a sequence; CSI (ESC [ or U+009B) ends at a final byte 0x40..=0x7E;
            // OSC, DCS, SOS, PM, APC (ESC ] P X ^ _, or their C1 forms) end at BEL or ST.
            '\u{1b}' => match chars.next() {
                Some('[') => skip_csi(&mut chars),
                Some(']' | 'P' | 'X' | '^' | '_') => skip_string(&mut chars),
                _ => {}
            },
            '\u{9b}' => skip_csi(&mut chars),
            '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            c if is_control(c) => {}
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

fn is_control(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for c in chars.by_ref() {
        if ('\u{40}'..='\u{7e}').contains(&c) {
            break;
        }
    }
}

/// Skips to the string terminator: BEL, ESC \\ or U+009C.
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => break,
            '\u{1b}' => {
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                break;
            }
            _ => {}
        }
    }
}

/// Something an extension did that the user should see, or a change in
/// what the host offers. Attributed to the extension where there is one.
#[derive(Debug, Clone, PartialEq)]
pub enum HostEvent {
    Notify {
        extension: String,
        level: NotifyLevel,
        message: String,
    },
    ClearNotes {
        extension: String,
    },
    /// Text to submit as a user prompt (empty text never gets here).
    Submit {
        extension: String,
        text: String,
    },
    PanelRender {
        extension: String,
        panel: PanelRender,
    },
    PanelClose {
        extension: String,
        panel_id: String,
    },
    /// The set of model-visible tools changed (late registration, activation, exit, reload).
    ToolsChanged,
    /// The set of extension commands changed.
    CommandsChanged,
    /// Something went wrong that the user should see (intercept timeouts, bad replies…).
    Warning {
        extension: String,
        message: String,
    },
    /// An extension that started in the background (an MCP server while
    /// the TUI runs) failed to load; `error` says why.
    LoadFailed {
        extension: String,
        error: String,
    },
    /// An extension went away on its own. Front ends show the
    /// [`HostEvent::Warning`] the host sends with it (the reason, what is
    /// lost, the log), so an exit is reported once.
    Exited {
        extension: String,
        reason: String,
    },
    /// Footer text, keyed `<extension>:<key>`; empty text removes it.
    Status {
        extension: String,
        key: String,
        text: String,
    },
    /// Lines above the footer, keyed `<extension>:<key>`; no lines removes it.
    Widget {
        extension: String,
        key: String,
        lines: Vec<String>,
    },
    /// Durable session data: stored in the session, never sent to the model.
    Entry {
        extension: String,
        data: Value,
    },
    /// A multiple-choice question. Answer through `reply`; dropping every
    /// copy unanswered means "cancelled".
    Question {
        extension: String,
        prompt: String,
        options: Vec<String>,
        reply: QuestionReply,
    },
    /// A form to fill in. Answer through `reply`; dropping every copy
    /// unanswered means nobody could be asked.
    Form {
        extension: String,
        form: Form,
        reply: FormReply,
    },
    /// Files a trusted project runs (pinned by trust) changed while zot
    /// ran: its hooks, extensions and servers no longer start until the user
    /// trusts it again. `changes` name them, one `changed <path>` each.
    TrustChanged {
        changes: Vec<String>,
    },
}

fn clean(text: String) -> String {
    match strip_controls(&text) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(clean) => clean,
    }
}

fn clean_all(lines: Vec<String>) -> Vec<String> {
    lines.into_iter().map(clean).collect()
}

impl HostEvent {
    /// The event with [`strip_controls`] applied to every text a terminal
    /// would show (a front end calls this before rendering).
    pub fn without_controls(self) -> Self {
        match self {
            Self::Notify {
                extension,
                level,
                message,
            } => Self::Notify {
                extension,
                level,
                message: clean(message),
            },
            Self::Warning { extension, message } => Self::Warning {
                extension,
                message: clean(message),
            },
            Self::Exited { extension, reason } => Self::Exited {
                extension,
                reason: clean(reason),
            },
            Self::LoadFailed { extension, error } => Self::LoadFailed {
                extension,
                error: clean(error),
            },
            Self::PanelRender { extension, panel } => Self::PanelRender {
                extension,
                panel: PanelRender {
                    title: panel.title.map(clean),
                    lines: clean_all(panel.lines),
                    footer: panel.footer.map(clean),
                    ..panel
                },
            },
            Self::Status {
                extension,
                key,
                text,
            } => Self::Status {
                extension,
                key,
                text: clean(text),
            },
            Self::Widget {
                extension,
                key,
                lines,
            } => Self::Widget {
                extension,
                key,
                lines: clean_all(lines),
            },
            Self::Question {
                extension,
                prompt,
                options,
                reply,
            } => Self::Question {
                extension,
                prompt: clean(prompt),
                options: clean_all(options),
                reply,
            },
            Self::Form {
                extension,
                form,
                reply,
            } => Self::Form {
                extension,
                form: Form {
                    schema: form.schema,
                    message: clean(form.message),
                    fields: form
                        .fields
                        .into_iter()
                        .map(|f| FormField {
                            title: clean(f.title),
                            description: f.description.map(clean),
                            kind: match f.kind {
                                FieldKind::Choice { values, labels } => FieldKind::Choice {
                                    values,
                                    labels: clean_all(labels),
                                },
                                FieldKind::MultiChoice { values, labels } => {
                                    FieldKind::MultiChoice {
                                        values,
                                        labels: clean_all(labels),
                                    }
                                }
                                other => other,
                            },
                            ..f
                        })
                        .collect(),
                },
                reply,
            },
            Self::TrustChanged { changes } => Self::TrustChanged {
                changes: clean_all(changes),
            },
            other => other,
        }
    }
}

impl HostEvent {
    /// What [`HostEvent::TrustChanged`] tells a user who cannot answer a
    /// dialog (print and JSON modes, RPC clients).
    pub fn trust_changed_message(changes: &[String]) -> String {
        format!(
            "files this project runs changed since you trusted it: {}; its hooks, extensions and servers stay off until you trust it again (`zot trust`)",
            changes.join(", ")
        )
    }
}

impl CommandReply {
    /// The reply with [`strip_controls`] applied to what a terminal would show.
    pub fn without_controls(self) -> Self {
        let outcome = match self.outcome {
            CommandOutcome::Display(text) => CommandOutcome::Display(clean(text)),
            CommandOutcome::Insert(text) => CommandOutcome::Insert(clean(text)),
            CommandOutcome::OpenPanel(panel) => CommandOutcome::OpenPanel(PanelContent {
                title: panel.title.map(clean),
                lines: clean_all(panel.lines),
                footer: panel.footer.map(clean),
                ..panel
            }),
            other => other,
        };
        Self {
            outcome,
            error: self.error.map(clean),
            ..self
        }
    }
}

/// Delivers an answer once.
type Respond<T> = Box<dyn FnOnce(Option<T>) + Send>;

/// Holds the answer's way back; dropped unanswered, it answers `None`.
struct Responder<T>(Option<Respond<T>>);

impl<T> Drop for Responder<T> {
    fn drop(&mut self) {
        if let Some(respond) = self.0.take() {
            respond(None);
        }
    }
}

/// One answer's way back, shared by every copy: the first answer goes
/// through, later ones (and drops) do nothing; when every copy is dropped
/// unanswered, the asker hears `None`.
struct Once<T>(Arc<Mutex<Responder<T>>>);

impl<T> Once<T> {
    fn new(respond: impl FnOnce(Option<T>) + Send + 'static) -> Self {
        Self(Arc::new(Mutex::new(Responder(Some(Box::new(respond))))))
    }

    fn send(&self, answer: Option<T>) {
        let respond = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .0
            .take();
        if let Some(respond) = respond {
            respond(answer);
        }
    }
}

impl<T> Clone for Once<T> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<T> PartialEq for Once<T> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// The way back for a question's answer: `Some(option)`, or `None` when
/// dismissed. Answering twice, or from a second copy, does nothing; when
/// every copy is dropped unanswered, the question counts as dismissed.
#[derive(Clone, PartialEq)]
pub struct QuestionReply(Once<String>);

impl QuestionReply {
    pub fn new(respond: impl FnOnce(Option<String>) + Send + 'static) -> Self {
        Self(Once::new(respond))
    }

    /// Answers with one of the options.
    pub fn answer(&self, answer: impl Into<String>) {
        self.send(Some(answer.into()));
    }

    /// Dismisses the question (no front end to ask, or the user declined).
    pub fn cancel(&self) {
        self.send(None);
    }

    pub fn send(&self, answer: Option<String>) {
        self.0.send(answer);
    }
}

impl std::fmt::Debug for QuestionReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("QuestionReply")
    }
}

/// A form an extension asks the user to fill in (an MCP server's
/// `elicitation/create`): a message, then one field per value it wants.
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    pub message: String,
    pub fields: Vec<FormField>,
    /// The JSON Schema the answer must satisfy (MCP's `requestedSchema`:
    /// lengths, ranges, formats, item counts beyond what `fields` says), or
    /// `Value::Null` for none.
    pub schema: Value,
}

/// One field of a [`Form`].
#[derive(Debug, Clone, PartialEq)]
pub struct FormField {
    /// The key of its value in the answer.
    pub name: String,
    /// What the user sees (the schema's `title`, else the name).
    pub title: String,
    pub description: Option<String>,
    pub kind: FieldKind,
    pub required: bool,
    /// The value the field starts with (the schema's `default`).
    pub default: Option<Value>,
}

/// What a [`FormField`] holds.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    Text,
    Number,
    Integer,
    Boolean,
    /// One of `values`, shown as `labels` (same length).
    Choice {
        values: Vec<String>,
        labels: Vec<String>,
    },
    /// Any number of `values`, shown as `labels` (same length).
    MultiChoice {
        values: Vec<String>,
        labels: Vec<String>,
    },
}

/// The user's answer to a [`Form`].
#[derive(Debug, Clone, PartialEq)]
pub enum FormAnswer {
    /// Submitted, with a value per filled-in field (by name).
    Accept(serde_json::Map<String, Value>),
    /// Refused on purpose.
    Decline,
    /// Dismissed without choosing.
    Cancel,
}

/// The way back for a form's answer; `None` when nobody could be asked
/// (every copy dropped unanswered: print, JSON and RPC modes).
#[derive(Clone, PartialEq)]
pub struct FormReply(Once<FormAnswer>);

impl FormReply {
    pub fn new(respond: impl FnOnce(Option<FormAnswer>) + Send + 'static) -> Self {
        Self(Once::new(respond))
    }

    pub fn send(&self, answer: FormAnswer) {
        self.0.send(Some(answer));
    }
}

impl std::fmt::Debug for FormReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FormReply")
    }
}

/// A slash command beside the built-ins: an extension's, or a Markdown
/// command's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandInfo {
    /// The spelling the extension registered (or the file's name).
    pub name: String,
    pub description: Option<String>,
    /// What arguments it takes, shown after the name (`[pr-number]`).
    pub argument_hint: Option<String>,
    /// Who provides it: the extension's name, or a Markdown command's
    /// scope (`project`, `user`).
    pub extension: String,
    pub origin: CommandOrigin,
}

/// Where a command comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandOrigin {
    /// An extension registered it.
    Extension,
    /// A Markdown file (`.claude/commands/…`) whose text becomes the prompt.
    Markdown { path: std::path::PathBuf },
}

/// What an extension command asks the front end to do.
#[derive(Debug, Clone, PartialEq)]
pub enum CommandOutcome {
    /// Submit as a user prompt (queued if a turn is running).
    Prompt(String),
    /// Insert into the editor at the cursor.
    Insert(String),
    /// A one-shot note: not in the transcript, never sent to the model.
    Display(String),
    OpenPanel(PanelContent),
    Noop,
}

/// An extension's answer to a slash command.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandReply {
    pub extension: String,
    /// The command's registered spelling.
    pub command: String,
    pub outcome: CommandOutcome,
    /// When set, shown as an error line whatever the outcome.
    pub error: Option<String>,
}

/// What a reload did, as the front ends report it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReloadSummary {
    pub stopped: usize,
    pub loaded: usize,
    /// Loaded extensions that sent `ready` or went quiet (auto-ready).
    pub ready: usize,
    /// Each load error, with the extension, the reason and the log path.
    pub errors: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_is_answered_once() {
        let (tx, rx) = std::sync::mpsc::channel();
        let reply = QuestionReply::new(move |a| tx.send(a).unwrap());
        let copy = reply.clone();
        reply.answer("yes");
        copy.cancel();
        assert_eq!(rx.recv().unwrap(), Some("yes".to_owned()));
        assert!(rx.try_recv().is_err());
        assert_eq!(reply, copy);
    }

    #[test]
    fn a_question_dropped_unanswered_is_dismissed() {
        let (tx, rx) = std::sync::mpsc::channel();
        let reply = QuestionReply::new(move |a| tx.send(a).unwrap());
        let copy = reply.clone();
        drop(reply);
        assert!(rx.try_recv().is_err(), "a copy is still alive");
        drop(copy);
        assert_eq!(rx.recv().unwrap(), None);
    }

    #[test]
    fn terminal_controls_are_stripped_whole() {
        assert!(matches!(
            strip_controls("plain\ttext\n"),
            std::borrow::Cow::Borrowed(_)
        ));
        let cases = [
            ("\u{1b}[2J\u{1b}[Hcleared", "cleared"),
            ("\u{1b}[1;31mred\u{1b}[0m", "red"),
            ("copy\u{1b}]52;c;ZXZpbA==\u{7}done", "copydone"),
            ("\u{1b}]0;title\u{1b}\\t", "t"),
            ("bell\u{7} back\u{8}", "bell back"),
            ("\u{202e}gnp.exe", "gnp.exe"),
            ("\u{9b}31mc1", "c1"),
            ("unterminated\u{1b}]0;forever", "unterminated"),
        ];
        for (input, want) in cases {
            assert_eq!(strip_controls(input), want, "{input:?}");
        }
    }

    #[test]
    fn builtins_match_case_insensitively() {
        assert!(is_builtin_command("Reload-Ext"));
        assert!(!is_builtin_command("greet"));
    }
}
