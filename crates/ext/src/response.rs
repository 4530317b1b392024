//! What a slash command answers ([`Response`]) and the panels it can open
//! ([`Panel`]), mapped onto `command_response` and `panel_render` frames.

use zot_protocol::zot::{CommandAction, CommandResponse, PanelContent, PanelRender};

/// A slash command's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub action: Action,
    /// When set, zot shows it as a red status line, whatever the action.
    pub error: Option<String>,
}

/// What zot does with a command's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Submit as a fresh user message; the agent runs a turn.
    Prompt(String),
    /// Insert into the editor at the cursor without submitting.
    Insert(String),
    /// A one-shot note in the chat: no model call, not in the transcript.
    Display(String),
    /// Open an extension-owned interactive panel.
    OpenPanel(Panel),
    /// The extension handled it itself.
    Noop,
}

impl Response {
    pub fn prompt(text: impl Into<String>) -> Self {
        Self::from(Action::Prompt(text.into()))
    }

    pub fn insert(text: impl Into<String>) -> Self {
        Self::from(Action::Insert(text.into()))
    }

    pub fn display(text: impl Into<String>) -> Self {
        Self::from(Action::Display(text.into()))
    }

    pub fn open_panel(panel: Panel) -> Self {
        Self::from(Action::OpenPanel(panel))
    }

    pub fn noop() -> Self {
        Self::from(Action::Noop)
    }

    /// A failed command: nothing happens but the error line.
    pub fn error(message: impl Into<String>) -> Self {
        Self::noop().with_error(message)
    }

    /// Adds an error line to any action.
    pub fn with_error(mut self, message: impl Into<String>) -> Self {
        self.error = Some(message.into());
        self
    }

    pub(crate) fn into_frame(self, id: String) -> CommandResponse {
        let mut frame = CommandResponse {
            id,
            action: CommandAction::Noop,
            prompt: None,
            insert: None,
            display: None,
            open_panel: None,
            error: self.error,
        };
        match self.action {
            Action::Prompt(text) => {
                frame.action = CommandAction::Prompt;
                frame.prompt = Some(text);
            }
            Action::Insert(text) => {
                frame.action = CommandAction::Insert;
                frame.insert = Some(text);
            }
            Action::Display(text) => {
                frame.action = CommandAction::Display;
                frame.display = Some(text);
            }
            Action::OpenPanel(panel) => {
                frame.action = CommandAction::OpenPanel;
                frame.open_panel = Some(PanelContent {
                    id: panel.id,
                    title: panel.title,
                    lines: panel.lines,
                    footer: panel.footer,
                });
            }
            Action::Noop => {}
        }
        frame
    }
}

impl From<Action> for Response {
    fn from(action: Action) -> Self {
        Self {
            action,
            error: None,
        }
    }
}

/// The content of an extension-owned panel: opened by [`Response::open_panel`],
/// redrawn by [`Host::render_panel`](crate::Host::render_panel).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Panel {
    pub id: String,
    /// On a redraw, `None` keeps the title zot shows.
    pub title: Option<String>,
    pub lines: Vec<String>,
    pub footer: Option<String>,
}

impl Panel {
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            ..Self::default()
        }
    }

    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    pub fn lines<I>(mut self, lines: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        self.lines = lines.into_iter().map(Into::into).collect();
        self
    }

    pub fn footer(mut self, footer: impl Into<String>) -> Self {
        self.footer = Some(footer.into());
        self
    }

    pub(crate) fn to_render(&self) -> PanelRender {
        PanelRender {
            panel_id: self.id.clone(),
            title: self.title.clone(),
            lines: self.lines.clone(),
            footer: self.footer.clone(),
        }
    }
}
