//! What the TUI needs from the extension host, as a trait the binary
//! implements (the TUI does not depend on the host crate). The types it
//! speaks in are shared with the host (`zot_protocol::ui`).

use zot_core::provider::ProviderConfig;
use zot_core::tool::BoxFuture;
use zot_protocol::ui::{CommandInfo, CommandReply, ReloadSummary};
use zot_protocol::zot::Key;

pub trait Extensions: Send + Sync {
    /// Extension commands (winners only).
    fn commands(&self) -> Vec<CommandInfo>;
    fn invoke<'a>(
        &'a self,
        name: &'a str,
        args: &'a str,
    ) -> BoxFuture<'a, Result<CommandReply, String>>;
    fn panel_key(&self, extension: &str, panel_id: &str, key: Key, text: Option<String>);
    fn panel_close(&self, extension: &str, panel_id: &str);
    fn reload(&self) -> BoxFuture<'_, ReloadSummary>;
    /// Saves trust for the project (the caller reloads afterwards).
    fn trust_project(&self) -> Result<(), String>;
    /// Saves `/model <id>` as the user's model (and `provider`, when the
    /// switch chose another); `Ok` names the file. (The binary's settings
    /// ride on this trait, the TUI's one way out.)
    fn save_model(&self, _provider: Option<&str>, _model: &str) -> Result<String, String> {
        Err("settings are not saved here".into())
    }
    /// What the model picker offers: every model of every provider that
    /// has a key (or needs none), the current provider's first.
    fn model_choices(&self) -> Vec<ModelChoice> {
        Vec::new()
    }
    /// How to reach the provider `name` for a switch mid-session (its own
    /// base URL and key); `Err` says why it cannot be used.
    fn switch_provider(&self, name: &str) -> Result<ProviderConfig, String> {
        Err(format!("cannot switch to {name} here"))
    }
    /// `/hooks`: one line per configured command hook, with whether it runs.
    fn hooks(&self) -> Vec<String> {
        Vec::new()
    }
    /// Extensions still starting in the background, by name.
    fn starting(&self) -> Vec<String> {
        Vec::new()
    }
    /// Resolves once nothing starts in the background any more, or when
    /// the last start-up deadline has passed.
    fn wait_started(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
    /// `/<kind> [on|off <name>]` for an ecosystem of extensions the host
    /// runs through its own adapter (`/mcp`): its extensions with their
    /// state and tools, or one turned on or off for this session; the text
    /// to show.
    fn extensions_view<'a>(
        &'a self,
        kind: &'a str,
        _args: &'a str,
    ) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move { Ok(format!("no {kind} extensions")) })
    }
    /// The extensions of ecosystem `kind` that `/<kind> on|off` completes:
    /// each one's name (as the view takes it) and whether it runs now.
    fn extension_states(&self, _kind: &str) -> Vec<(String, bool)> {
        Vec::new()
    }
}

/// A model the picker offers.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelChoice {
    pub provider: String,
    pub id: String,
    pub context_window: u32,
    /// USD per million input and output tokens, when known.
    pub price: Option<(f64, f64)>,
}

/// No extensions at all (tests, `--no-ext` with nothing to load).
pub struct NoExtensions;

impl Extensions for NoExtensions {
    fn commands(&self) -> Vec<CommandInfo> {
        Vec::new()
    }
    fn invoke<'a>(
        &'a self,
        name: &'a str,
        _args: &'a str,
    ) -> BoxFuture<'a, Result<CommandReply, String>> {
        Box::pin(async move { Err(format!("unknown command /{name}")) })
    }
    fn panel_key(&self, _: &str, _: &str, _: Key, _: Option<String>) {}
    fn panel_close(&self, _: &str, _: &str) {}
    fn reload(&self) -> BoxFuture<'_, ReloadSummary> {
        Box::pin(async { ReloadSummary::default() })
    }
    fn trust_project(&self) -> Result<(), String> {
        Ok(())
    }
}
