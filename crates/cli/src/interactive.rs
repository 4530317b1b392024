//! Plain `zot`: the TUI, with the extension host behind its `Extensions`
//! trait. Starts without credentials too (commands work; prompts explain).

use std::process::ExitCode;
use std::sync::Arc;

use zot_core::models;
use zot_core::session::sessions_dir;
use zot_core::tool::BoxFuture;
use zot_extensions::zot_protocol::zot::Key;
use zot_extensions::{
    CommandInfo, CommandReply, ExtensionHost, FoundStatus, Launch, ReloadSummary, TrustStore,
};
use zot_tui::app::AppConfig;
use zot_tui::bridge::Extensions;
use zot_tui::theme::Theme;

use crate::args::{AgentArgs, Mode};
use crate::commands::Commands;
use crate::context::Context;
use crate::run as setup;

struct Bridge {
    host: ExtensionHost,
    /// The provider's name, for telling the host about `/model`.
    provider: String,
    commands: Commands,
    zot_home: std::path::PathBuf,
    project: std::path::PathBuf,
}

impl Extensions for Bridge {
    fn commands(&self) -> Vec<CommandInfo> {
        self.commands.list()
    }

    fn invoke<'a>(
        &'a self,
        name: &'a str,
        args: &'a str,
    ) -> BoxFuture<'a, Result<CommandReply, String>> {
        Box::pin(async move { self.commands.invoke(name, args).await })
    }

    fn panel_key(&self, extension: &str, panel_id: &str, key: Key, text: Option<String>) {
        self.host.panel_key(extension, panel_id, key, text);
    }

    fn panel_close(&self, extension: &str, panel_id: &str) {
        self.host.panel_close(extension, panel_id);
    }

    fn reload(&self) -> BoxFuture<'_, ReloadSummary> {
        Box::pin(async move {
            let mut summary = self.host.reload().await.summary();
            let skipped = self.commands.reload_markdown();
            summary
                .errors
                .extend(skipped.into_iter().map(|s| format!("Markdown command {s}")));
            summary
        })
    }

    fn save_model(&self, model: &str) -> Result<String, String> {
        // Sampling requests go to the model the session uses now.
        self.host.set_model(&self.provider, model);
        crate::config::save_model(&self.zot_home, model)
            .map(|path| path.display().to_string())
            .map_err(|e| format!("{e:#}"))
    }

    fn hooks(&self) -> Vec<String> {
        self.host
            .hooks_listed()
            .iter()
            .map(zot_extensions::hooks::Listed::line)
            .collect()
    }

    fn starting(&self) -> Vec<String> {
        self.host.starting()
    }

    fn wait_started(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.host.wait_started())
    }

    fn mcp<'a>(&'a self, args: &'a str) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(crate::mcp_view::run(&self.host, args))
    }

    fn trust_project(&self) -> Result<(), String> {
        let mut store = TrustStore::load(&self.zot_home).map_err(|e| e.to_string())?;
        store.trust(&self.project).map_err(|e| e.to_string())?;
        self.host.set_project_trusted(true);
        self.commands.set_project_trusted(true);
        Ok(())
    }
}

pub fn run(args: &AgentArgs, ctx: &Context) -> anyhow::Result<ExitCode> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        anyhow::bail!("the interactive TUI needs a terminal; use -p (print), --json, or `zot rpc`");
    }
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        // Without a usable provider the TUI still starts: commands work, prompts explain.
        let (choice, problem) = match setup::provider_and_model(args, ctx) {
            Ok(choice) => {
                let problem = choice.missing_credentials.clone();
                (Some(choice), problem)
            }
            Err(e) => (None, Some(format!("{e:#}"))),
        };
        let kind = choice.as_ref().map(|c| c.provider.kind);
        let provider_name = kind.map(|k| k.name().to_owned()).unwrap_or_default();
        let model = choice.as_ref().map(|c| c.model.clone()).unwrap_or_default();
        let session = match problem {
            None => setup::open_session(args, ctx, &provider_name, &model, Mode::Interactive)?,
            Some(_) => None,
        };
        let id = setup::session_id(session.as_ref());
        let loaded = setup::load(args, ctx, &provider_name, &model, &id, Mode::Interactive).await;
        let untrusted_found: Vec<_> = loaded
            .found
            .iter()
            .filter(|f| matches!(f.status, FoundStatus::Untrusted(_)))
            .collect();
        let untrusted = untrusted_found.len();
        // A broken policy file stops every extension; the manifests decide the count.
        let policy = crate::permissions_cmd::policy(ctx).unwrap_or_default();
        let untrusted_unrestricted = untrusted_found
            .iter()
            .filter(|f| {
                crate::permissions_cmd::of(ctx, &policy, f).is_none_or(|p| p.unrestricted())
            })
            .count();
        let mut warnings = ctx.settings.warnings.clone();
        warnings.extend(loaded.warnings.iter().cloned());
        let wanted_theme = ctx.settings.theme();
        let bundles: Vec<_> = loaded
            .found
            .iter()
            .filter_map(|f| match &f.status {
                FoundStatus::Bundle(m) if m.launch == Launch::ThemeBundle => Some(m),
                _ => None,
            })
            .filter(|m| wanted_theme.as_ref().is_none_or(|name| *name == m.name))
            .map(|m| m.dir.clone())
            .collect();
        if let Some(name) = &wanted_theme
            && bundles.is_empty()
        {
            warnings.push(format!(
                "theme \"{name}\" (config) is not an installed theme bundle; using the default"
            ));
        }
        let theme = bundles
            .into_iter()
            .find_map(|dir| {
                let file = [dir.join("theme.json"), dir.join("themes/theme.json")]
                    .into_iter()
                    .find(|p| p.is_file())?;
                match Theme::load(&file) {
                    Ok(theme) => Some(theme),
                    Err(e) => {
                        eprintln!("zot: warning: {e}");
                        None
                    }
                }
            })
            .unwrap_or_default();
        if let (Some(choice), None) = (&choice, &problem) {
            let provider = zot_core::provider::Provider::new(choice.provider.clone());
            loaded
                .host
                .set_sampler(Arc::new(crate::sampling::ModelSampler { provider }));
        }
        let agent = match (choice, &problem) {
            (Some(choice), None) => Some(setup::agent(
                args,
                ctx,
                &loaded,
                choice.provider,
                &model,
                session,
                crate::args::Mode::Interactive,
            )?),
            _ => None,
        };
        let info = kind.map(|k| models::info(k, &model));
        let config = AppConfig {
            provider: provider_name,
            model: model.clone(),
            cwd: ctx.project.display().to_string(),
            context_window: info.map_or(0, |i| i.context_window),
            models: kind
                .map(|k| models::models(k).iter().map(|m| m.id.to_owned()).collect())
                .unwrap_or_default(),
            skills: loaded
                .skills
                .iter()
                .map(|s| (s.name.clone(), s.description.clone()))
                .collect(),
            sessions_dir: Some(sessions_dir(&ctx.zot_home, &ctx.project)),
            missing_credentials: problem,
            startup_errors: loaded
                .load_errors
                .iter()
                .map(ToString::to_string)
                .chain(loaded.manifest_errors())
                .collect(),
            untrusted_extensions: untrusted,
            untrusted_unrestricted,
            plan: args.plan,
            sandbox: args.bash_sandbox(),
            theme,
            warnings,
            model_override: ctx.settings.model_override().map(|s| s.describe()),
        };
        let host_updates = loaded.host_events;
        let host = loaded.host.clone();
        let bridge = Arc::new(Bridge {
            host: host.clone(),
            provider: config.provider.clone(),
            commands: loaded.commands.clone(),
            zot_home: ctx.zot_home.clone(),
            project: ctx.project.clone(),
        });
        let tui = zot_tui::Tui {
            config,
            agent,
            ask_before_tools: args.no_yolo || !ctx.settings.yolo(),
            extensions: bridge,
            host_updates,
        };
        let result = zot_tui::run(tui).await;
        host.session_ended_because("prompt_input_exit").await;
        host.shutdown().await;
        result?;
        Ok(ExitCode::SUCCESS)
    })
}
