//! The model picker's list (`/model` with no argument, Ctrl+P): every
//! model of every provider that has a key, filtered as the user types, with
//! its context window and price, the current one marked. What picking does
//! to the session is the app's (`app/model_picker.rs`).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;

use crate::bridge::ModelChoice;
use crate::picker::{edit_filter, filter_line, rank};
use crate::step::Step;
use crate::theme::Theme;

/// Models the picker shows at once.
const MODEL_ROWS: usize = 12;

pub struct ModelPicker {
    items: Vec<ModelChoice>,
    /// Indices into `items` that pass the filter, best match first.
    shown: Vec<usize>,
    filter: String,
    selected: usize,
    /// The provider and model in use, marked.
    current: (String, String),
    /// Picking runs the failed turn again on the chosen model.
    pub(crate) retry: bool,
}

impl ModelPicker {
    pub(crate) fn new(items: Vec<ModelChoice>, current: (String, String), retry: bool) -> Self {
        let selected = items
            .iter()
            .position(|m| m.provider == current.0 && m.id == current.1)
            .unwrap_or(0);
        Self {
            shown: (0..items.len()).collect(),
            items,
            filter: String::new(),
            selected,
            current,
            retry,
        }
    }

    /// The models shown, in order.
    pub fn shown(&self) -> impl Iterator<Item = &ModelChoice> {
        self.shown.iter().map(|&i| &self.items[i])
    }

    /// Ranks the models by a fuzzy match of `provider:id`.
    fn refilter(&mut self) {
        self.selected = 0;
        let names = self
            .items
            .iter()
            .map(|m| format!("{}:{}", m.provider, m.id));
        self.shown = rank(&self.filter, names);
    }

    pub(crate) fn key(&mut self, key: KeyEvent) -> Step {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => {
                self.selected = (self.selected + 1).min(self.shown.len().saturating_sub(1));
            }
            KeyCode::Enter => {
                return match self.shown.get(self.selected) {
                    Some(&index) => Step::PickModel(self.items[index].clone(), self.retry),
                    None => Step::Stay,
                };
            }
            KeyCode::Esc => return Step::Close,
            KeyCode::Char('c') if ctrl => return Step::Close,
            _ if edit_filter(&mut self.filter, key) => self.refilter(),
            _ => {}
        }
        Step::Stay
    }

    pub(crate) fn title(&self) -> String {
        if self.retry {
            " Run the failed turn again on another model ".to_owned()
        } else {
            " Switch model ".to_owned()
        }
    }

    pub(crate) fn body(&self, theme: &Theme) -> Vec<Line<'static>> {
        let muted = Style::default().fg(theme.muted);
        let mut body = vec![filter_line(&self.filter, theme)];
        if self.shown.is_empty() {
            body.push(Line::styled("no model matches", muted));
        }
        let width = self
            .shown()
            .map(|m| m.provider.len() + m.id.len() + 1)
            .max()
            .unwrap_or(0);
        let start = self.selected.saturating_sub(MODEL_ROWS - 1);
        for (row, model) in self.shown().enumerate().skip(start).take(MODEL_ROWS) {
            let current = model.provider == self.current.0 && model.id == self.current.1;
            let style = match (row == self.selected, current) {
                (true, _) => Style::default().add_modifier(Modifier::REVERSED),
                (false, true) => Style::default().fg(theme.accent),
                (false, false) => Style::default(),
            };
            let name = format!("{}:{}", model.provider, model.id);
            let price = model.price.map_or_else(
                || "price unknown".to_owned(),
                |(i, o)| format!("${i}/${o} per M"),
            );
            body.push(Line::styled(
                format!(
                    "{} {name:<width$}  {:>5} context  {price}",
                    if current { "●" } else { " " },
                    tokens(model.context_window),
                ),
                style,
            ));
        }
        body.push(Line::default());
        body.push(Line::styled(
            "● current · type to filter · Enter switch · Esc close",
            muted,
        ));
        body
    }
}

/// `200k`, `1M`: a context window at a glance.
fn tokens(n: u32) -> String {
    match n {
        n if n >= 1_000_000 && n % 1_000_000 == 0 => format!("{}M", n / 1_000_000),
        n if n >= 1_000_000 => format!("{:.1}M", f64::from(n) / 1e6),
        n if n >= 1_000 => format!("{}k", n / 1_000),
        n => n.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice(provider: &str, id: &str) -> ModelChoice {
        ModelChoice {
            provider: provider.into(),
            id: id.into(),
            context_window: 200_000,
            price: Some((3.0, 15.0)),
        }
    }

    #[test]
    fn the_filter_ranks_fuzzily_and_enter_picks_the_selected() {
        let items = vec![
            choice("anthropic", "claude-sonnet-5-5"),
            choice("openrouter", "deepseek/deepseek-chat"),
            choice("openai", "gpt-4.1"),
        ];
        let mut picker = ModelPicker::new(items, ("openai".into(), "gpt-4.1".into()), false);
        assert_eq!(picker.selected, 2);
        for c in "dschat".chars() {
            picker.key(KeyEvent::from(KeyCode::Char(c)));
        }
        let shown: Vec<_> = picker.shown().map(|m| m.id.as_str()).collect();
        assert_eq!(shown, ["deepseek/deepseek-chat"]);
        match picker.key(KeyEvent::from(KeyCode::Enter)) {
            Step::PickModel(picked, false) => assert_eq!(picked.provider, "openrouter"),
            _ => panic!("no pick"),
        }
        assert_eq!(tokens(1_000_000), "1M");
        assert_eq!(tokens(1_047_576), "1.0M");
        assert_eq!(tokens(128_000), "128k");
    }
}
