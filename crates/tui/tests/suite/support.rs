//! A fake extension host that records what the TUI sends it, and an app wired to it.

use std::sync::{Arc, Mutex};

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tokio::sync::mpsc;
use zot_core::tool::BoxFuture;
use zot_protocol::ui::{CommandInfo, CommandOrigin, CommandOutcome, CommandReply, ReloadSummary};
use zot_protocol::zot::Key;
use zot_tui::app::{App, AppConfig, AppMsg};
use zot_tui::bridge::{Extensions, ModelChoice};
use zot_tui::view;
use zot_tui::worker;

/// (extension, panel id, key, text) of one panel_key.
pub type SentKey = (String, String, Key, Option<String>);

#[derive(Default)]
pub struct FakeHost {
    pub keys: Mutex<Vec<SentKey>>,
    pub closed: Mutex<Vec<(String, String)>>,
    pub trusted: Mutex<bool>,
    /// Models saved with `/model <id>`.
    pub saved_models: Mutex<Vec<String>>,
    /// The arguments of each `/mcp`.
    pub mcp_calls: Mutex<Vec<String>>,
}

impl Extensions for FakeHost {
    fn commands(&self) -> Vec<CommandInfo> {
        vec![
            CommandInfo {
                name: "todo".into(),
                description: Some("open the todo panel".into()),
                extension: "todo".into(),
                argument_hint: None,
                origin: CommandOrigin::Extension,
            },
            CommandInfo {
                name: "Deploy".into(),
                description: None,
                extension: "shipit".into(),
                argument_hint: None,
                origin: CommandOrigin::Extension,
            },
            CommandInfo {
                name: "weather".into(),
                description: Some("weather for a city".into()),
                extension: "weather".into(),
                argument_hint: None,
                origin: CommandOrigin::Extension,
            },
            CommandInfo {
                name: "git:commit".into(),
                description: Some("commit the staged work".into()),
                argument_hint: Some("[message]".into()),
                extension: "project".into(),
                origin: CommandOrigin::Markdown {
                    path: "/home/pat/project/.claude/commands/git/commit.md".into(),
                },
            },
        ]
    }
    fn invoke<'a>(
        &'a self,
        name: &'a str,
        args: &'a str,
    ) -> BoxFuture<'a, Result<CommandReply, String>> {
        Box::pin(async move {
            Ok(CommandReply {
                extension: "todo".into(),
                command: name.into(),
                outcome: CommandOutcome::Display(format!("ran {name} {args}")),
                error: None,
            })
        })
    }
    fn panel_key(&self, extension: &str, panel_id: &str, key: Key, text: Option<String>) {
        self.keys
            .lock()
            .unwrap()
            .push((extension.into(), panel_id.into(), key, text));
    }
    fn panel_close(&self, extension: &str, panel_id: &str) {
        self.closed
            .lock()
            .unwrap()
            .push((extension.into(), panel_id.into()));
    }
    fn reload(&self) -> BoxFuture<'_, ReloadSummary> {
        Box::pin(async { ReloadSummary::default() })
    }
    fn trust_project(&self) -> Result<(), String> {
        *self.trusted.lock().unwrap() = true;
        Ok(())
    }
    fn save_model(&self, _provider: Option<&str>, model: &str) -> Result<String, String> {
        self.saved_models.lock().unwrap().push(model.into());
        Ok("/home/pat/.local/state/zot/config.json".into())
    }
    fn extensions_view<'a>(
        &'a self,
        kind: &'a str,
        args: &'a str,
    ) -> BoxFuture<'a, Result<String, String>> {
        assert_eq!(kind, "mcp");
        self.mcp_calls.lock().unwrap().push(args.into());
        Box::pin(async { Ok("done".to_owned()) })
    }
    fn extension_states(&self, kind: &str) -> Vec<(String, bool)> {
        assert_eq!(kind, "mcp");
        vec![("github".into(), true), ("slack".into(), false)]
    }
    fn model_choices(&self) -> Vec<ModelChoice> {
        let choice = |provider: &str, id: &str| ModelChoice {
            provider: provider.into(),
            id: id.into(),
            context_window: 200_000,
            price: Some((3.0, 15.0)),
        };
        vec![
            choice("anthropic", "claude-sonnet-4-5"),
            choice("anthropic", "claude-haiku-4-5"),
            choice("openrouter", "deepseek/deepseek-chat"),
        ]
    }
}

pub fn config() -> AppConfig {
    AppConfig {
        provider: "anthropic".into(),
        model: "claude-sonnet-4-5".into(),
        cwd: "/home/pat/project".into(),
        context_window: 200_000,
        models: vec!["claude-sonnet-4-5".into(), "claude-haiku-4-5".into()],
        ..AppConfig::default()
    }
}

/// An app with a real worker that has no agent (prompts only report that).
pub fn app_with(config: AppConfig) -> (App, Arc<FakeHost>, mpsc::UnboundedReceiver<AppMsg>) {
    let host = Arc::new(FakeHost::default());
    let (worker, _events) = worker::spawn(None, "no model".into(), false);
    let (msgs, rx) = mpsc::unbounded_channel();
    let app = App::new(config, Some(worker), host.clone(), msgs);
    (app, host, rx)
}

pub fn app() -> (App, Arc<FakeHost>, mpsc::UnboundedReceiver<AppMsg>) {
    app_with(config())
}

/// The screen as text, `width` x `height`.
pub fn render(app: &mut App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| view::draw(frame, app)).unwrap();
    terminal.backend().to_string()
}
