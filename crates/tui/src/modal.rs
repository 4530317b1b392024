//! What has the keyboard: the editor (with the command popup's row), an
//! extension's panel, or a dialog (question, tool confirmation, sessions,
//! trust), as one [`Modal`]; panels and dialogs turn keys into steps.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::{Map, Value};
use tokio::sync::oneshot;
use zot_protocol::ui::{FieldKind, Form, FormAnswer, FormReply, QuestionReply};
use zot_protocol::zot::Key;

pub use crate::picker::{PromptPicker, SessionPicker};
pub use crate::step::PromptAction;
pub(crate) use crate::step::Step;
use crate::worker::{ConfirmRequest, Decision};

/// Exactly one of these has the keyboard.
pub enum Modal {
    /// Nothing modal: the editor has the keys. While it holds `/name` the
    /// command popup takes the arrows, Tab and Enter; `popup` is its selected row.
    Editor { popup: usize },
    /// An extension's panel (one at a time), and the editor's popup row
    /// for when it closes.
    Panel { panel: Panel, popup: usize },
    /// A dialog (one at a time) over what it `covers`, which gets the keys
    /// back when it closes. A dialog covers a panel rather than closing it:
    /// closing would tell the extension, and a tool confirmation cannot wait.
    /// `covers` is never another dialog: a new dialog replaces the old one.
    Dialog { dialog: Dialog, covers: Box<Modal> },
}

impl Default for Modal {
    fn default() -> Self {
        Self::Editor { popup: 0 }
    }
}

impl Modal {
    pub fn dialog(&self) -> Option<&Dialog> {
        match self {
            Self::Dialog { dialog, .. } => Some(dialog),
            _ => None,
        }
    }

    /// The open panel, whether or not a dialog covers it.
    pub fn panel(&self) -> Option<&Panel> {
        match self {
            Self::Panel { panel, .. } => Some(panel),
            Self::Dialog { covers, .. } => covers.panel(),
            Self::Editor { .. } => None,
        }
    }

    pub(crate) fn panel_mut(&mut self) -> Option<&mut Panel> {
        match self {
            Self::Panel { panel, .. } => Some(panel),
            Self::Dialog { covers, .. } => covers.panel_mut(),
            Self::Editor { .. } => None,
        }
    }

    /// The command popup's selected row (kept while something covers the editor).
    pub fn popup_selected(&self) -> usize {
        match self {
            Self::Editor { popup } | Self::Panel { popup, .. } => *popup,
            Self::Dialog { covers, .. } => covers.popup_selected(),
        }
    }

    /// Selects a popup row; only the editor's popup has one.
    pub(crate) fn select_popup(&mut self, row: usize) {
        if let Self::Editor { popup } = self {
            *popup = row;
        }
    }

    /// Opens `dialog` over what has the keyboard. A dialog already open is
    /// replaced: dropped unanswered, its asker hears "dismissed" or "no".
    pub(crate) fn open_dialog(&mut self, dialog: Dialog) {
        let covers = match std::mem::take(self) {
            Self::Dialog { covers, .. } => covers,
            other => Box::new(other),
        };
        *self = Self::Dialog { dialog, covers };
    }

    /// Opens `dialog` above whatever is open, a dialog included, which
    /// gets the keyboard back when this one closes.
    pub(crate) fn stack_dialog(&mut self, dialog: Dialog) {
        let covers = Box::new(std::mem::take(self));
        *self = Self::Dialog { dialog, covers };
    }

    /// Closes the dialog; what it covered gets the keyboard back.
    pub(crate) fn close_dialog(&mut self) {
        if let Self::Dialog { covers, .. } = self {
            let covered = std::mem::take(covers.as_mut());
            *self = covered;
        }
    }

    /// Opens `panel` in place of the open one (see [`Modal::take_panel`]),
    /// under the dialog if one is open.
    pub(crate) fn put_panel(&mut self, panel: Panel) {
        match self {
            Self::Dialog { covers, .. } => covers.put_panel(panel),
            _ => {
                let popup = self.popup_selected();
                *self = Self::Panel { panel, popup };
            }
        }
    }

    /// Takes the open panel out, wherever it is; the editor gets its place.
    pub(crate) fn take_panel(&mut self) -> Option<Panel> {
        match self {
            Self::Dialog { covers, .. } => covers.take_panel(),
            Self::Panel { popup, .. } => {
                let editor = Self::Editor { popup: *popup };
                match std::mem::replace(self, editor) {
                    Self::Panel { panel, .. } => Some(panel),
                    _ => None,
                }
            }
            Self::Editor { .. } => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    pub extension: String,
    pub id: String,
    pub title: String,
    pub lines: Vec<String>,
    pub footer: String,
    pub scroll: usize,
}

/// What a key did in a panel.
pub(crate) enum PanelStep {
    Stay,
    Close,
    /// The key belongs to the extension.
    Send(Key, Option<String>),
}

impl Panel {
    pub(crate) fn key(&mut self, key: KeyEvent) -> PanelStep {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        let (name, text) = match key.code {
            KeyCode::Esc => return PanelStep::Close,
            KeyCode::Char('c') if ctrl => return PanelStep::Close,
            // Shift+arrows scroll a long panel locally.
            KeyCode::Up if shift => {
                self.scroll = self.scroll.saturating_sub(1);
                return PanelStep::Stay;
            }
            KeyCode::Down if shift => {
                self.scroll += 1;
                return PanelStep::Stay;
            }
            KeyCode::Up => (Key::Up, None),
            KeyCode::Down => (Key::Down, None),
            KeyCode::Left => (Key::Left, None),
            KeyCode::Right => (Key::Right, None),
            KeyCode::Enter => (Key::Enter, None),
            KeyCode::Tab => (Key::Tab, None),
            KeyCode::PageUp => (Key::PageUp, None),
            KeyCode::PageDown => (Key::PageDown, None),
            KeyCode::Home => (Key::Home, None),
            KeyCode::End => (Key::End, None),
            KeyCode::Backspace => (Key::Backspace, None),
            KeyCode::Delete => (Key::Delete, None),
            KeyCode::Char(c) if !ctrl => (Key::Rune, Some(c.to_string())),
            _ => return PanelStep::Stay,
        };
        PanelStep::Send(name, text)
    }
}

pub enum Dialog {
    /// An extension asks the user to pick one of its options.
    Question(Question),
    /// An extension asks the user to fill in a form (an MCP elicitation).
    Form(FormDialog),
    /// May this tool call run? (`--no-yolo`)
    Confirm(Confirmation),
    /// `zot -r`, `/sessions`: an earlier session to resume.
    Sessions(SessionPicker),
    /// `/tree`, `/fork`, `/jump`: a prompt of this session.
    Prompts(PromptPicker),
    /// `/model`, Ctrl+P: a model of any provider that has a key.
    Models(crate::model_picker::ModelPicker),
    /// The project ships what waits for the user's trust: one line per
    /// gated input it has (extensions, MCP servers, hooks, commands, skills).
    Trust { inputs: Vec<String> },
    /// Files a trusted project runs changed while zot ran (one
    /// `changed <path>` line each): trust them again?
    Retrust { changes: Vec<String> },
    /// `/undo`, `/rewind`: what going back would change, and how far.
    Rewind(crate::rewind::RewindOffer),
}

impl Dialog {
    pub(crate) fn key(&mut self, key: KeyEvent) -> Step {
        match self {
            Self::Question(question) => question.key(key),
            Self::Form(form) => form.key(key),
            Self::Confirm(confirmation) => confirmation.key(key),
            Self::Sessions(picker) => picker.key(key),
            Self::Prompts(picker) => picker.key(key),
            Self::Rewind(offer) => offer.key(key),
            Self::Models(picker) => picker.key(key),
            Self::Trust { .. } | Self::Retrust { .. } => match key.code {
                KeyCode::Char('y' | 'Y') => Step::Trust(true),
                KeyCode::Char('n' | 'N') | KeyCode::Esc => Step::Trust(false),
                _ => Step::Stay,
            },
        }
    }
}

fn ctrl_c(key: KeyEvent) -> bool {
    key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL)
}

pub struct Question {
    pub(crate) extension: String,
    pub(crate) prompt: String,
    pub(crate) options: Vec<String>,
    pub(crate) selected: usize,
    reply: QuestionReply,
}

impl Question {
    pub(crate) fn new(
        extension: String,
        prompt: String,
        options: Vec<String>,
        reply: QuestionReply,
    ) -> Self {
        Self {
            extension,
            prompt,
            options,
            selected: 0,
            reply,
        }
    }

    fn key(&mut self, key: KeyEvent) -> Step {
        let answer = match key.code {
            KeyCode::Up | KeyCode::Left => {
                self.selected = self.selected.saturating_sub(1);
                return Step::Stay;
            }
            KeyCode::Down | KeyCode::Right | KeyCode::Tab => {
                self.selected = (self.selected + 1).min(self.options.len().saturating_sub(1));
                return Step::Stay;
            }
            KeyCode::Enter => self.options.get(self.selected).cloned(),
            KeyCode::Esc => None,
            _ if ctrl_c(key) => None,
            // Digits pick by number ('0' as '1'); one without an option does nothing.
            KeyCode::Char(c) if c.is_ascii_digit() => {
                let index = c.to_digit(10).map_or(0, |d| d as usize).saturating_sub(1);
                match self.options.get(index) {
                    Some(option) => Some(option.clone()),
                    None => return Step::Stay,
                }
            }
            _ => return Step::Stay,
        };
        self.reply.send(answer);
        Step::Close
    }
}

/// A form's field value as the user has it so far.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldValue {
    /// Text, number and integer fields: what was typed.
    Text(String),
    /// A choice field: the index of the chosen value, if any.
    Choice(Option<usize>),
    Bool(Option<bool>),
    /// A multiple-choice field: which values are chosen, and the one ←/→
    /// points at (Space toggles it).
    Many {
        chosen: Vec<bool>,
        at: usize,
    },
}

/// The buttons under a form's fields, in order.
pub(crate) const FORM_BUTTONS: [&str; 3] = ["Accept", "Decline", "Cancel"];

pub struct FormDialog {
    pub(crate) extension: String,
    pub(crate) form: Form,
    /// One per field, in the form's order.
    pub(crate) values: Vec<FieldValue>,
    /// The fields come first, then the buttons.
    pub(crate) focus: usize,
    /// Why the last Accept was refused.
    pub(crate) error: Option<String>,
    reply: FormReply,
}

impl FormDialog {
    /// The form with every field at its default.
    pub(crate) fn new(extension: String, form: Form, reply: FormReply) -> Self {
        let values = form
            .fields
            .iter()
            .map(|field| {
                let default = field.default.as_ref();
                match &field.kind {
                    FieldKind::Boolean => FieldValue::Bool(default.and_then(Value::as_bool)),
                    FieldKind::Choice { values, .. } => FieldValue::Choice(
                        default
                            .and_then(Value::as_str)
                            .and_then(|d| values.iter().position(|v| v == d)),
                    ),
                    FieldKind::MultiChoice { values, .. } => {
                        let defaults: Vec<&str> = default
                            .and_then(Value::as_array)
                            .map(|d| d.iter().filter_map(Value::as_str).collect())
                            .unwrap_or_default();
                        FieldValue::Many {
                            chosen: values
                                .iter()
                                .map(|v| defaults.contains(&v.as_str()))
                                .collect(),
                            at: 0,
                        }
                    }
                    FieldKind::Text | FieldKind::Number | FieldKind::Integer => {
                        FieldValue::Text(match default {
                            Some(Value::String(s)) => s.clone(),
                            Some(other) => other.to_string(),
                            None => String::new(),
                        })
                    }
                }
            })
            .collect();
        Self {
            extension,
            form,
            values,
            focus: 0,
            error: None,
            reply,
        }
    }

    fn stops(&self) -> usize {
        self.values.len() + FORM_BUTTONS.len()
    }

    fn key(&mut self, key: KeyEvent) -> Step {
        if ctrl_c(key) || key.code == KeyCode::Esc {
            return self.answer(FormAnswer::Cancel);
        }
        let stops = self.stops();
        match key.code {
            KeyCode::Up | KeyCode::BackTab => {
                self.focus = self.focus.checked_sub(1).unwrap_or(stops - 1);
                return Step::Stay;
            }
            KeyCode::Down | KeyCode::Tab => {
                self.focus = (self.focus + 1) % stops;
                return Step::Stay;
            }
            _ => {}
        }
        let count = match self.form.fields.get(self.focus).map(|f| &f.kind) {
            Some(FieldKind::Choice { values, .. }) => values.len(),
            _ => 2,
        };
        let Some(value) = self.values.get_mut(self.focus) else {
            // A button.
            return match (key.code, self.focus - self.values.len()) {
                (KeyCode::Enter, 0) => match self.content() {
                    Ok(content) => self.answer(FormAnswer::Accept(content)),
                    Err((field, why)) => {
                        self.error = Some(why);
                        self.focus = field;
                        Step::Stay
                    }
                },
                (KeyCode::Enter, 1) => self.answer(FormAnswer::Decline),
                (KeyCode::Enter, _) => self.answer(FormAnswer::Cancel),
                (KeyCode::Left, _) => {
                    self.focus = self.focus.saturating_sub(1).max(self.values.len());
                    Step::Stay
                }
                (KeyCode::Right, _) => {
                    self.focus = (self.focus + 1).min(stops - 1);
                    Step::Stay
                }
                _ => Step::Stay,
            };
        };
        match (value, key.code) {
            (_, KeyCode::Enter) => self.focus += 1,
            (FieldValue::Text(text), KeyCode::Char(c))
                if !key.modifiers.contains(KeyModifiers::CONTROL) =>
            {
                text.push(c);
            }
            (FieldValue::Text(text), KeyCode::Backspace) => {
                text.pop();
            }
            (FieldValue::Choice(chosen), KeyCode::Right | KeyCode::Char(' ')) => {
                *chosen = Some(chosen.map_or(0, |i| (i + 1) % count.max(1)));
            }
            (FieldValue::Choice(chosen), KeyCode::Left) => {
                *chosen = Some(chosen.map_or(count.saturating_sub(1), |i| {
                    i.checked_sub(1).unwrap_or(count.saturating_sub(1))
                }));
            }
            (FieldValue::Bool(on), KeyCode::Left | KeyCode::Right | KeyCode::Char(' ')) => {
                *on = Some(!on.unwrap_or(false));
            }
            (FieldValue::Many { at, .. }, KeyCode::Left) => *at = at.saturating_sub(1),
            (FieldValue::Many { chosen, at }, KeyCode::Right) => {
                *at = (*at + 1).min(chosen.len().saturating_sub(1));
            }
            (FieldValue::Many { chosen, at }, KeyCode::Char(' ')) => {
                if let Some(on) = chosen.get_mut(*at) {
                    *on = !*on;
                }
            }
            _ => {}
        }
        Step::Stay
    }

    fn answer(&mut self, answer: FormAnswer) -> Step {
        self.reply.send(answer);
        Step::Close
    }

    /// The answer's content, or the first field in the way and why.
    fn content(&self) -> Result<Map<String, Value>, (usize, String)> {
        let mut content = Map::new();
        for (i, (field, value)) in self.form.fields.iter().zip(&self.values).enumerate() {
            let missing = || (i, format!("{} is required", field.title));
            let value = match (value, &field.kind) {
                (FieldValue::Text(text), _) if text.trim().is_empty() => {
                    if field.required {
                        return Err(missing());
                    }
                    continue;
                }
                (FieldValue::Text(text), FieldKind::Number) => text
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|n| n.is_finite())
                    .map(Value::from)
                    .ok_or_else(|| (i, format!("{} must be a number", field.title)))?,
                (FieldValue::Text(text), FieldKind::Integer) => text
                    .trim()
                    .parse::<i64>()
                    .map(Value::from)
                    .map_err(|_| (i, format!("{} must be a whole number", field.title)))?,
                (FieldValue::Text(text), _) => Value::String(text.clone()),
                (FieldValue::Bool(Some(on)), _) => Value::Bool(*on),
                (FieldValue::Choice(Some(chosen)), FieldKind::Choice { values, .. }) => {
                    match values.get(*chosen) {
                        Some(v) => Value::String(v.clone()),
                        None => return Err(missing()),
                    }
                }
                (FieldValue::Many { chosen, .. }, FieldKind::MultiChoice { values, .. }) => {
                    let picked: Vec<Value> = values
                        .iter()
                        .zip(chosen)
                        .filter(|(_, on)| **on)
                        .map(|(v, _)| Value::String(v.clone()))
                        .collect();
                    if picked.is_empty() {
                        if field.required {
                            return Err(missing());
                        }
                        continue;
                    }
                    Value::Array(picked)
                }
                (FieldValue::Bool(None) | FieldValue::Choice(_) | FieldValue::Many { .. }, _) => {
                    if field.required {
                        return Err(missing());
                    }
                    continue;
                }
            };
            content.insert(field.name.clone(), value);
        }
        self.check_schema(&content)?;
        Ok(content)
    }

    /// The answer against the form's schema (lengths, ranges, formats such
    /// as `email` or `date`, item counts), so the user fixes it here rather
    /// than the server refusing it: the first problem, on the field it is
    /// about. A schema that does not compile is the server's to enforce.
    fn check_schema(&self, content: &Map<String, Value>) -> Result<(), (usize, String)> {
        if self.form.schema.is_null() {
            return Ok(());
        }
        let Ok(validator) = jsonschema::options()
            .should_validate_formats(true)
            .build(&self.form.schema)
        else {
            return Ok(());
        };
        let answer = Value::Object(content.clone());
        let Some(problem) = validator.iter_errors(&answer).next() else {
            return Ok(());
        };
        let path = problem.instance_path.to_string();
        let name = path.trim_start_matches('/').split('/').next().unwrap_or("");
        match self.form.fields.iter().position(|f| f.name == name) {
            Some(i) => Err((i, format!("{}: {problem}", self.form.fields[i].title))),
            None => Err((0, problem.to_string())),
        }
    }
}

/// One answer to a tool confirmation.
pub(crate) struct Choice {
    pub(crate) decision: Decision,
    /// The key that picks it.
    pub(crate) key: char,
    pub(crate) label: &'static str,
}

/// The confirmation's answers in the order shown: the one list both the
/// keys and the drawing use.
pub(crate) const CHOICES: [Choice; 4] = [
    Choice {
        decision: Decision::Yes,
        key: 'y',
        label: "yes",
    },
    Choice {
        decision: Decision::AlwaysThisTool,
        key: 'a',
        label: "always this tool",
    },
    Choice {
        decision: Decision::Always,
        key: 'A',
        label: "always",
    },
    Choice {
        decision: Decision::No,
        key: 'n',
        label: "no",
    },
];

pub struct Confirmation {
    pub(crate) tool: String,
    pub(crate) preview: String,
    /// An index into [`CHOICES`].
    pub(crate) selected: usize,
    /// Taken by the answer; dropped unanswered, the agent hears "no".
    reply: Option<oneshot::Sender<Decision>>,
}

impl Confirmation {
    pub(crate) fn new(request: ConfirmRequest) -> Self {
        Self {
            tool: request.name,
            preview: request.preview,
            selected: 0,
            reply: Some(request.reply),
        }
    }

    fn key(&mut self, key: KeyEvent) -> Step {
        let decision = match key.code {
            _ if ctrl_c(key) => Decision::No,
            KeyCode::Char(c) => match CHOICES.iter().find(|choice| choice.key == c) {
                Some(choice) => choice.decision,
                None => return Step::Stay,
            },
            KeyCode::Esc => Decision::No,
            KeyCode::Left | KeyCode::Up => {
                self.selected = self.selected.checked_sub(1).unwrap_or(CHOICES.len() - 1);
                return Step::Stay;
            }
            KeyCode::Right | KeyCode::Down | KeyCode::Tab => {
                self.selected = (self.selected + 1) % CHOICES.len();
                return Step::Stay;
            }
            KeyCode::Enter => CHOICES[self.selected.min(CHOICES.len() - 1)].decision,
            _ => return Step::Stay,
        };
        if let Some(reply) = self.reply.take() {
            let _ = reply.send(decision);
        }
        Step::Close
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn panel(id: &str) -> Panel {
        Panel {
            extension: "x".into(),
            id: id.into(),
            title: String::new(),
            lines: Vec::new(),
            footer: String::new(),
            scroll: 0,
        }
    }

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn a_dialog_covers_a_panel_and_gives_it_back() {
        let mut modal = Modal::default();
        modal.select_popup(2);
        modal.put_panel(panel("p1"));
        assert_eq!(modal.popup_selected(), 2);
        modal.open_dialog(Dialog::Trust {
            inputs: vec!["1 extension in .zot/extensions".to_owned()],
        });
        modal.open_dialog(Dialog::Sessions(SessionPicker::new(Vec::new(), false)));
        assert!(matches!(modal.dialog(), Some(Dialog::Sessions(_))));
        assert_eq!(modal.panel().map(|p| p.id.as_str()), Some("p1"));

        // A panel replaced under the dialog stays under it.
        assert_eq!(modal.take_panel().map(|p| p.id), Some("p1".to_owned()));
        modal.put_panel(panel("p2"));
        assert!(modal.dialog().is_some());

        modal.close_dialog();
        assert!(matches!(&modal, Modal::Panel { panel, .. } if panel.id == "p2"));
        modal.take_panel();
        assert!(matches!(modal, Modal::Editor { popup: 2 }));
    }

    #[test]
    fn questions_move_their_selection_in_place_and_answer_once() {
        let answers = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = answers.clone();
        let reply = QuestionReply::new(move |a| {
            sink.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(a)
        });
        let options = vec!["a".to_owned(), "b".to_owned()];
        let mut question = Question::new("x".into(), "?".into(), options, reply);
        assert!(matches!(question.key(key(KeyCode::Down)), Step::Stay));
        assert!(matches!(question.key(key(KeyCode::Down)), Step::Stay));
        assert_eq!(question.selected, 1, "stops at the last option");
        assert!(matches!(question.key(key(KeyCode::Char('7'))), Step::Stay));
        assert!(matches!(question.key(key(KeyCode::Enter)), Step::Close));
        let answers = answers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        assert_eq!(*answers, [Some("b".to_owned())]);
    }

    #[test]
    fn a_form_starts_at_its_defaults_checks_its_fields_and_answers_once() {
        use zot_protocol::ui::{FieldKind, Form, FormAnswer, FormField, FormReply};
        let field =
            |name: &str, kind: FieldKind, required: bool, default: Option<Value>| FormField {
                name: name.into(),
                title: name.into(),
                description: None,
                kind,
                required,
                default,
            };
        let form = Form {
            schema: Value::Null,
            message: "who are you?".into(),
            fields: vec![
                field("name", FieldKind::Text, true, None),
                field("age", FieldKind::Integer, false, Some(Value::from(30))),
                field("score", FieldKind::Number, false, None),
                field("ok", FieldKind::Boolean, false, Some(Value::Bool(true))),
                field(
                    "color",
                    FieldKind::Choice {
                        values: vec!["r".into(), "g".into()],
                        labels: vec!["Red".into(), "Green".into()],
                    },
                    true,
                    Some(Value::from("g")),
                ),
                field(
                    "tags",
                    FieldKind::MultiChoice {
                        values: vec!["a".into(), "b".into(), "c".into()],
                        labels: vec!["A".into(), "B".into(), "C".into()],
                    },
                    false,
                    Some(serde_json::json!(["b"])),
                ),
            ],
        };
        let answers = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = answers.clone();
        let reply = FormReply::new(move |a| {
            sink.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(a)
        });
        let mut dialog = FormDialog::new("x".into(), form, reply);
        assert_eq!(dialog.values[1], FieldValue::Text("30".into()));
        assert_eq!(dialog.values[3], FieldValue::Bool(Some(true)));
        assert_eq!(dialog.values[4], FieldValue::Choice(Some(1)));

        // Accept with the required name empty: refused, the name focused.
        dialog.focus = dialog.values.len();
        assert!(matches!(dialog.key(key(KeyCode::Enter)), Step::Stay));
        assert_eq!(dialog.focus, 0);
        assert_eq!(dialog.error.as_deref(), Some("name is required"));
        for c in "Ada".chars() {
            dialog.key(key(KeyCode::Char(c)));
        }
        dialog.key(key(KeyCode::Enter));
        dialog.key(key(KeyCode::Backspace));
        dialog.key(key(KeyCode::Down));
        // A number that does not parse keeps the form open, on that field.
        dialog.key(key(KeyCode::Char('?')));
        dialog.focus = dialog.values.len();
        assert!(matches!(dialog.key(key(KeyCode::Enter)), Step::Stay));
        assert_eq!(dialog.focus, 2);
        assert_eq!(dialog.error.as_deref(), Some("score must be a number"));
        dialog.key(key(KeyCode::Backspace));
        for c in "2.5".chars() {
            dialog.key(key(KeyCode::Char(c)));
        }
        dialog.key(key(KeyCode::Down));
        dialog.key(key(KeyCode::Char(' ')));
        dialog.key(key(KeyCode::Down));
        dialog.key(key(KeyCode::Right));
        // The list: B chosen by default; C added, B taken away.
        dialog.key(key(KeyCode::Down));
        assert_eq!(
            dialog.values[5],
            FieldValue::Many {
                chosen: vec![false, true, false],
                at: 0
            }
        );
        for code in [
            KeyCode::Right,
            KeyCode::Char(' '),
            KeyCode::Right,
            KeyCode::Char(' '),
        ] {
            dialog.key(key(code));
        }
        dialog.key(key(KeyCode::Down));
        assert!(matches!(dialog.key(key(KeyCode::Enter)), Step::Close));
        dialog.key(key(KeyCode::Esc));
        let answers = answers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let expected: Map<String, Value> = serde_json::from_value(serde_json::json!({
            "name": "Ada", "age": 3, "score": 2.5, "ok": false, "color": "r", "tags": ["c"]
        }))
        .unwrap();
        assert_eq!(*answers, [Some(FormAnswer::Accept(expected))]);
    }

    #[test]
    fn a_form_checks_its_schema_limits_and_formats_on_the_field_at_fault() {
        use zot_protocol::ui::FormField;
        let text = |name: &str| FormField {
            name: name.into(),
            title: name.to_uppercase(),
            description: None,
            kind: FieldKind::Text,
            required: true,
            default: None,
        };
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "handle": {"type": "string", "minLength": 3, "maxLength": 8},
                "email": {"type": "string", "format": "email"},
                "age": {"type": "integer", "minimum": 18, "maximum": 150},
            },
            "required": ["handle", "email", "age"],
        });
        let form = Form {
            message: "sign up".into(),
            fields: vec![
                text("handle"),
                text("email"),
                FormField {
                    kind: FieldKind::Integer,
                    ..text("age")
                },
            ],
            schema,
        };
        let dialog = |values: [&str; 3]| {
            let mut dialog = FormDialog::new("x".into(), form.clone(), FormReply::new(|_| {}));
            for (slot, value) in dialog.values.iter_mut().zip(values) {
                *slot = FieldValue::Text(value.into());
            }
            dialog
        };
        let problem = |values| dialog(values).content().unwrap_err();

        let (at, why) = problem(["ab", "a@example.com", "30"]);
        assert_eq!(at, 0);
        assert!(
            why.starts_with("HANDLE: ") && why.contains("shorter than 3"),
            "{why}"
        );
        let (at, why) = problem(["abcdefghi", "a@example.com", "30"]);
        assert_eq!(at, 0);
        assert!(why.contains("longer than 8"), "{why}");
        let (at, why) = problem(["ada", "not an address", "30"]);
        assert_eq!(at, 1);
        assert!(why.starts_with("EMAIL: ") && why.contains("email"), "{why}");
        let (at, why) = problem(["ada", "a@example.com", "200"]);
        assert_eq!(at, 2);
        assert!(why.contains("maximum of 150"), "{why}");

        let content = dialog(["ada", "a@example.com", "30"]).content().unwrap();
        assert_eq!(
            Value::Object(content),
            serde_json::json!({"handle": "ada", "email": "a@example.com", "age": 30})
        );
    }
}
