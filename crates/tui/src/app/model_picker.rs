//! The model picker (`/model` with no argument, Ctrl+P): every model of
//! every provider that has a key, filtered as the user types, with its
//! context window and price, the current one marked. Picking switches the
//! session (provider too, keeping the transcript) and saves the choice as
//! `/model` does; after a failed turn it also runs that turn again.

use super::{App, StatusKind};
use crate::bridge::ModelChoice;
use crate::modal::Dialog;
use crate::model_picker::ModelPicker;
use crate::transcript::Entry;
use crate::worker::Work;

impl App {
    /// `/model` with no argument, Ctrl+P, and the offer after a failed
    /// turn (`retry`): the picker over every usable model.
    pub(super) fn open_model_picker(&mut self, retry: bool) {
        let choices = self.ext.model_choices();
        if choices.is_empty() {
            let list = self.config.models.join(", ");
            self.transcript.push(Entry::Info(format!(
                "model: {} ({}); available: {list}",
                self.config.model, self.config.provider
            )));
            return;
        }
        let current = (self.config.provider.clone(), self.config.model.clone());
        self.modal
            .open_dialog(Dialog::Models(ModelPicker::new(choices, current, retry)));
    }

    /// `/model PROVIDER:ID` naming a provider the picker offers: switches
    /// as picking that model would (an id it does not list is taken, with
    /// the limits assumed for an unknown model). False when `name` names no
    /// such provider.
    pub(super) fn switch_by_name(&mut self, name: &str) -> bool {
        let Some((provider, id)) = name.split_once(':') else {
            return false;
        };
        let choices = self.ext.model_choices();
        if id.is_empty() || !choices.iter().any(|m| m.provider == provider) {
            return false;
        }
        let choice = choices
            .into_iter()
            .find(|m| m.provider == provider && m.id == id)
            .unwrap_or_else(|| ModelChoice {
                provider: provider.to_owned(),
                id: id.to_owned(),
                context_window: zot_core::models::UNKNOWN_CONTEXT_WINDOW,
                price: None,
            });
        self.model_picked(choice, false);
        true
    }

    /// A model picked: the session goes on with it (another provider keeps
    /// the transcript), the choice is saved, and with `retry` the failed
    /// turn runs again on it.
    pub(super) fn model_picked(&mut self, choice: ModelChoice, retry: bool) {
        let Some(worker) = &self.worker else {
            return self.set_status("no agent to switch", StatusKind::Error);
        };
        let switch = choice.provider != self.config.provider;
        let provider = if switch {
            match self.ext.switch_provider(&choice.provider) {
                Ok(config) => Some(config),
                Err(e) => return self.set_status(e, StatusKind::Error),
            }
        } else {
            None
        };
        worker.abort();
        worker.send(Work::SetModel {
            provider,
            model: choice.id.clone(),
        });
        if retry {
            worker.send(Work::Retry);
            self.busy = true;
        }
        self.retry_offered = false;
        self.unsaved_model = None;
        self.config.context_window = choice.context_window;
        self.config.model.clone_from(&choice.id);
        if switch {
            self.config.models = self
                .ext
                .model_choices()
                .into_iter()
                .filter(|m| m.provider == choice.provider)
                .map(|m| m.id)
                .collect();
            self.config.provider.clone_from(&choice.provider);
        }
        self.save_model(switch.then_some(choice.provider.as_str()), &choice.id);
    }

    /// A turn failed in a way another model may not (a refused key, a rate
    /// limit, a server error): say how to run it again elsewhere.
    pub(super) fn offer_retry(&mut self) {
        self.retry_offered = true;
        self.transcript.push(Entry::Info(
            "press Ctrl+P to run this turn again on another model".into(),
        ));
    }
}
