//! Plain `zot`: the TUI, with the extension host behind its `Extensions`
//! trait. Starts without credentials too (commands work; prompts explain).

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::{Arc, PoisonError};

use zot_core::provider::ProviderConfig;
use zot_core::tool::BoxFuture;
use zot_core::{markdown_commands, models, skills};
use zot_extensions::zot_protocol::ui::CommandOrigin;
use zot_extensions::zot_protocol::zot::Key;
use zot_extensions::{
    CommandInfo, CommandReply, Dialect, ExtensionHost, FoundStatus, Launch, ReloadSummary,
    TrustStore,
};
use zot_tui::app::AppConfig;
use zot_tui::bridge::{Extensions, ModelChoice};
use zot_tui::theme::Theme;

use crate::args::{AgentArgs, Mode};
use crate::commands::Commands;
use crate::context::Context;
use crate::run as setup;

struct Bridge {
    host: ExtensionHost,
    /// The provider in use (`None` without one), for telling the host about
    /// `/model` and for the model picker.
    provider: std::sync::Mutex<Option<ProviderConfig>>,
    /// The provider the session started with, as the flags set it up.
    start: Option<ProviderConfig>,
    commands: Commands,
    zot_home: std::path::PathBuf,
    project: std::path::PathBuf,
}

impl Bridge {
    fn current(&self) -> Option<ProviderConfig> {
        self.provider
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
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

    fn save_model(&self, provider: Option<&str>, model: &str) -> Result<String, String> {
        // Sampling requests go to the model the session uses now.
        let current = self.current().map(|c| c.name).unwrap_or_default();
        self.host.set_model(&current, model);
        crate::config::save_model(&self.zot_home, provider, model)
            .map(|path| path.display().to_string())
            .map_err(|e| format!("{e:#}"))
    }

    fn model_choices(&self) -> Vec<ModelChoice> {
        let (Some(current), Some(start)) = (self.current(), &self.start) else {
            return Vec::new();
        };
        crate::models_cmd::offered(Some(&self.zot_home), &current, start)
            .into_iter()
            .map(|m| ModelChoice {
                provider: m.provider,
                id: m.id,
                context_window: m.info.context_window,
                price: m.info.price.as_ref().map(|p| (p.base.input, p.base.output)),
            })
            .collect()
    }

    fn switch_provider(&self, name: &str) -> Result<ProviderConfig, String> {
        let Some(start) = &self.start else {
            return Err("no provider to switch from".into());
        };
        let (config, missing) =
            setup::switch_provider(&self.zot_home, name, start).map_err(|e| format!("{e:#}"))?;
        if let Some(why) = missing {
            return Err(why);
        }
        *self.provider.lock().unwrap_or_else(PoisonError::into_inner) = Some(config.clone());
        // An extension's sampling request goes to the model the session uses.
        let provider = zot_core::provider::Provider::new(config.clone());
        self.host
            .set_sampler(Arc::new(crate::sampling::ModelSampler { provider }));
        Ok(config)
    }

    fn hooks(&self) -> Vec<String> {
        zot_hooks::ecosystem::listed(self.host.config(), self.host.project_trusted())
            .iter()
            .map(zot_hooks::Listed::line)
            .collect()
    }

    fn starting(&self) -> Vec<String> {
        self.host.starting()
    }

    fn wait_started(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.host.wait_started())
    }

    fn extensions_view<'a>(
        &'a self,
        kind: &'a str,
        args: &'a str,
    ) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move {
            match zot_extensions::ecosystem::of_kind(kind) {
                Some(eco) => crate::ecosystem_view::run(&self.host, eco, args).await,
                None => Err(format!("no {kind} support in this zot")),
            }
        })
    }

    fn extension_states(&self, kind: &str) -> Vec<(String, bool)> {
        crate::ecosystem_view::names(&self.host.report(), kind)
    }

    fn trust_project(&self) -> Result<(), String> {
        let mut store = TrustStore::load(&self.zot_home).map_err(|e| e.to_string())?;
        store.trust(&self.project).map_err(|e| e.to_string())?;
        self.host.set_project_trusted(true);
        self.commands.set_project_trusted(true);
        Ok(())
    }
}

/// `prompt`: the words of `zot "prompt"`, sent once the TUI is up.
pub fn run(args: &AgentArgs, prompt: &[String], ctx: &Context) -> anyhow::Result<ExitCode> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        anyhow::bail!("the interactive TUI needs a terminal; use -p (print), --json, or `zot rpc`");
    }
    // A bad image is refused before the terminal is taken over.
    let images = zot_core::image::load_all(&args.images)?;
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
        let provider_name = choice
            .as_ref()
            .map(|c| c.provider.name.clone())
            .unwrap_or_default();
        let model = choice.as_ref().map(|c| c.model.clone()).unwrap_or_default();
        let session = match problem {
            None => setup::open_session(args, ctx, &provider_name, &model, Mode::Interactive)?,
            Some(_) => None,
        };
        let id = setup::session_id(session.as_ref());
        let loaded = setup::load(args, ctx, &provider_name, &model, &id, Mode::Interactive).await;
        let untrusted_inputs = untrusted_inputs(ctx, &loaded);
        let mut warnings = ctx.settings.warnings.clone();
        warnings.extend(loaded.warnings.iter().cloned());
        let wanted_theme = ctx.settings.theme();
        let builtin_theme = wanted_theme.as_deref().and_then(Theme::builtin);
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
            && builtin_theme.is_none()
        {
            warnings.push(format!(
                "theme \"{name}\" (config) is not an installed theme bundle; using the default"
            ));
        }
        // A theme the config names, else an installed bundle's, else the
        // built-in one for the terminal's background.
        let theme = builtin_theme.or_else(|| {
            bundles.into_iter().find_map(|dir| {
                let file = [dir.join("theme.json"), dir.join("themes/theme.json")]
                    .into_iter()
                    .find(|p| p.is_file())?;
                match Theme::load(&file) {
                    Ok(theme) => Some(theme),
                    Err(e) => {
                        errln!("zot: warning: {e}");
                        None
                    }
                }
            })
        });
        let theme = theme.unwrap_or_else(Theme::for_terminal);
        if let (Some(choice), None) = (&choice, &problem) {
            let provider = zot_core::provider::Provider::new(choice.provider.clone());
            loaded
                .host
                .set_sampler(Arc::new(crate::sampling::ModelSampler { provider }));
        }
        let info = choice.as_ref().map(|c| models::of(&c.provider, &model));
        let current = choice.as_ref().map(|c| c.provider.clone());
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
        let config = AppConfig {
            model: model.clone(),
            cwd: ctx.project.display().to_string(),
            context_window: info.map_or(0, |i| i.context_window),
            models: models::models(&provider_name)
                .map(|m| m.id.clone())
                .collect(),
            provider: provider_name,
            skills: loaded
                .skills
                .iter()
                .map(|s| (s.name.clone(), s.description.clone()))
                .collect(),
            zot_home: Some(ctx.zot_home.clone()),
            resume_picker: args.resume.as_deref() == Some(""),
            missing_credentials: problem,
            startup_errors: loaded
                .load_errors
                .iter()
                .map(ToString::to_string)
                .chain(loaded.manifest_errors())
                .collect(),
            untrusted_inputs,
            plan: args.plan,
            sandbox: args.bash_sandbox(),
            theme,
            warnings,
            model_override: ctx.settings.model_override().map(|s| s.describe()),
            prompt: (!prompt.is_empty()).then(|| prompt.join(" ")),
            images,
        };
        let host_updates = loaded.host_events;
        let host = loaded.host.clone();
        let bridge = Arc::new(Bridge {
            host: host.clone(),
            provider: std::sync::Mutex::new(current.clone()),
            start: current,
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

/// One line per gated project input (docs/trust.md) that waits for the
/// user's trust, for the TUI's trust dialog: extensions (and how many of
/// them would run unrestricted), MCP servers, hooks, Markdown commands and
/// skills. Empty in a trusted project.
fn untrusted_inputs(ctx: &Context, loaded: &setup::Loaded) -> Vec<String> {
    if ctx.config.project_trusted {
        return Vec::new();
    }
    let mut lines = Vec::new();
    let relative = |path: &std::path::Path| {
        path.strip_prefix(&ctx.project)
            .unwrap_or(path)
            .display()
            .to_string()
    };
    // A broken policy file stops every extension; the manifests decide the count.
    let policy = crate::permissions_cmd::policy(ctx).unwrap_or_default();
    let mut extensions: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    // Entries of other ecosystems, by what they are called and the file that configures them.
    let mut servers: BTreeMap<(&str, String), usize> = BTreeMap::new();
    for found in &loaded.found {
        let FoundStatus::Untrusted(manifest) = &found.status else {
            continue;
        };
        if let Dialect::Adapted(kind) = found.dialect {
            // Its "manifest" is the file that configures it.
            let noun = zot_extensions::ecosystem::of_kind(kind).map_or(kind, |e| e.noun());
            *servers.entry((noun, relative(&manifest.path))).or_default() += 1;
            continue;
        }
        let root = found.dir.parent().map(relative).unwrap_or_default();
        let entry = extensions.entry(root).or_default();
        entry.0 += 1;
        if crate::permissions_cmd::of(ctx, &policy, found).is_none_or(|p| p.unrestricted()) {
            entry.1 += 1;
        }
    }
    for (root, (count, unrestricted)) in extensions {
        let how = match unrestricted {
            0 => "each in its permission scope".to_owned(),
            n if n == count => "unrestricted: your full permissions".to_owned(),
            n => format!("{n} unrestricted: your full permissions"),
        };
        lines.push(format!("{} in {root} ({how})", counted(count, "extension")));
    }
    for ((noun, file), count) in servers {
        lines.push(format!(
            "{} in {file} (a program to start or a URL to call)",
            counted(count, noun)
        ));
    }
    let mut hooks: BTreeMap<String, usize> = BTreeMap::new();
    for listed in zot_hooks::ecosystem::listed(loaded.host.config(), loaded.host.project_trusted())
    {
        if !listed.trusted && !listed.disabled {
            *hooks.entry(relative(&listed.spec.source)).or_default() += 1;
        }
    }
    for (file, count) in hooks {
        lines.push(format!(
            "{} in {file} (shell commands run at events)",
            counted(count, "hook")
        ));
    }
    let commands = loaded
        .commands
        .list()
        .into_iter()
        .filter(|c| c.extension == markdown_commands::Scope::Project.label())
        .filter(|c| matches!(c.origin, CommandOrigin::Markdown { .. }))
        .count();
    if commands > 0 {
        lines.push(format!(
            "{} in {} (no !`cmd` until trusted)",
            counted(commands, "Markdown command"),
            markdown_commands::COMMANDS_DIR
        ));
    }
    let skill_roots = skills::project_roots_with_skills(&ctx.project);
    if !skill_roots.is_empty() {
        lines.push(format!(
            "skills in {} (loaded at the next start once trusted)",
            skill_roots.join(", ")
        ));
    }
    lines
}

/// `1 hook`, `3 hooks`.
fn counted(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}
