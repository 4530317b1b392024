//! Builds a running agent from the arguments: provider and credentials,
//! the extension host (as a `Hooks`), skills, the system prompt, the session.

use std::sync::Arc;

use anyhow::{Context as _, bail};
use tokio::sync::mpsc;
use zot_core::agent::{Agent, AgentConfig, Confirm, Refusal, ToolFilter, local_session_id};
use zot_core::models;
use zot_core::provider::{Provider, ProviderConfig, ProviderKind, Reasoning};
use zot_core::session::Session;
use zot_core::skills::{self, SkillTool};
use zot_core::system_prompt::{PromptParts, assemble};
use zot_core::tool::BoxFuture;
use zot_extensions::{ExtensionHost, Found, FoundStatus, HostEvent, LoadError, discover};

use crate::args::{AgentArgs, Mode};
use crate::commands::Commands;
use crate::context::Context;
use crate::credentials;
use crate::ext_hooks::ExtHooks;

pub use zot_core::models::MAX_TOKENS_CAP;

pub struct Running {
    pub agent: Agent,
    pub host: ExtensionHost,
    /// Extension and Markdown commands.
    pub commands: Commands,
    pub host_events: mpsc::UnboundedReceiver<HostEvent>,
    /// Extensions that failed to load (the run goes on without them).
    pub load_errors: Vec<LoadError>,
    /// Extension directories whose manifest is invalid.
    pub manifest_errors: Vec<String>,
    /// No key was found: the error for anything that would call the model.
    pub missing_credentials: Option<String>,
}

/// What the arguments (and the config files) choose: the provider, the
/// model, and, when no key was found, what to say at the first model request.
pub struct Choice {
    pub provider: ProviderConfig,
    pub model: String,
    pub missing_credentials: Option<String>,
}

/// The provider config and model the arguments ask for.
pub fn provider_and_model(args: &AgentArgs, ctx: &Context) -> anyhow::Result<Choice> {
    choose(args, &ctx.zot_home)
}

/// [`provider_and_model`] from `$ZOT_HOME` alone (`zot config`, which
/// needs no project context).
pub fn choose(args: &AgentArgs, zot_home: &std::path::Path) -> anyhow::Result<Choice> {
    let mut args = args.clone();
    let configured = crate::providers::load(zot_home);
    split_model(&mut args, &configured)?;
    let args = &args;
    let (provider, missing_credentials) = credentials::resolve(args, zot_home)?;
    let named_default = || {
        crate::providers::find(&configured, &provider.name)
            .and_then(|named| named.default_model().map(str::to_owned))
    };
    let model = match &args.model {
        Some(model) => model.clone(),
        None => match models::default_model(provider.kind)
            .filter(|_| provider.name == provider.kind.name())
        {
            Some(model) => model.to_owned(),
            None => named_default().with_context(|| {
                format!(
                    "--provider {} needs --model (for example --model llama3.2)",
                    provider.name
                )
            })?,
        },
    };
    Ok(Choice {
        provider,
        model,
        missing_credentials,
    })
}

/// `--model PROVIDER:ID` chooses both: split at the first colon when what
/// comes before it names a provider (built in, the user's or a preset), so
/// OpenRouter's `vendor/model` ids and ollama's `llama3.2:8b` tags stay
/// whole. A provider named otherwise (`--provider`, or the config) that
/// differs is an error.
pub fn split_model(
    args: &mut AgentArgs,
    configured: &[crate::providers::Named],
) -> anyhow::Result<()> {
    let Some((name, id)) = args.model.as_deref().and_then(|m| m.split_once(':')) else {
        return Ok(());
    };
    let name = match ProviderKind::parse(name) {
        Some(kind) => kind.name(),
        None if crate::providers::known(configured, name) => name,
        None => return Ok(()),
    };
    if id.is_empty() {
        bail!("--model {name}: names no model after the provider");
    }
    if let Some(other) = args.provider.as_deref()
        && other != name
        && ProviderKind::parse(other).map(ProviderKind::name) != Some(name)
    {
        // Either may come from its flag, its variable or the config.
        bail!(
            "the model {name}:{id} is {name}'s, but the provider is {other} \
             (--model or ZOT_MODEL or the config's model; --provider or ZOT_PROVIDER or the config's provider)"
        );
    }
    let (name, id) = (name.to_owned(), id.to_owned());
    args.provider = Some(name);
    args.model = Some(id);
    Ok(())
}

/// The provider called `name` for a switch mid-session: `start` when it
/// is the one the session started with (its `--base-url` and `--api-key`
/// stay its own), else with its own base URL and key (none of the run's
/// flags, which were for the starting provider). The message, when no key
/// was found, is what to say at the next model request.
pub fn switch_provider(
    zot_home: &std::path::Path,
    name: &str,
    start: &ProviderConfig,
) -> anyhow::Result<(ProviderConfig, Option<String>)> {
    if name == start.name {
        return Ok((start.clone(), None));
    }
    let args = AgentArgs {
        provider: Some(name.to_owned()),
        ..AgentArgs::default()
    };
    credentials::resolve(&args, zot_home)
}

/// Every provider a session can switch to: the current one first, then
/// each built-in and named provider that has a key or needs none (the one
/// it started with as it started).
pub fn switchable(
    zot_home: Option<&std::path::Path>,
    current: &ProviderConfig,
    start: &ProviderConfig,
) -> Vec<ProviderConfig> {
    let mut targets = vec![current.clone()];
    let Some(zot_home) = zot_home else {
        return targets;
    };
    let configured = crate::providers::load(zot_home);
    let names = crate::providers::BUILTIN
        .iter()
        .map(|&name| name.to_owned())
        .chain(configured.into_iter().map(|n| n.name));
    for name in names.filter(|name| *name != current.name) {
        if let Ok((config, None)) = switch_provider(zot_home, &name, start) {
            targets.push(config);
        }
    }
    targets
}

/// The extension host and what discovery found, before any agent exists.
pub struct Loaded {
    pub host: ExtensionHost,
    pub commands: Commands,
    /// What the user should hear about commands and skills left out (the
    /// TUI shows them; the other modes print them to stderr).
    pub warnings: Vec<String>,
    pub host_events: mpsc::UnboundedReceiver<HostEvent>,
    pub load_errors: Vec<LoadError>,
    pub found: Vec<Found>,
    pub skills: Vec<skills::Skill>,
}

impl Loaded {
    /// Invalid manifests, reported beside load errors in every mode.
    pub fn manifest_errors(&self) -> Vec<String> {
        self.found
            .iter()
            .filter_map(|f| match &f.status {
                FoundStatus::Invalid(e) => Some(format!("extension at {}: {e}", f.dir.display())),
                _ => None,
            })
            .collect()
    }
}

/// Starts the extension host (telling it the provider, the model and the
/// session id the agent will use) and finds skills. Discovery runs once.
pub async fn load(
    args: &AgentArgs,
    ctx: &Context,
    provider: &str,
    model: &str,
    session_id: &str,
    mode: Mode,
) -> Loaded {
    let mut host_config = ctx.config.clone();
    // The TUI opens at once; MCP servers join as they come up.
    host_config.adapted_in_background = mode == Mode::Interactive;
    host_config.provider = provider.to_owned();
    host_config.model = model.to_owned();
    host_config.session_id = session_id.to_owned();
    let found = discover(&host_config);
    ctx.warn_untrusted(&found);
    let (host, host_events) = ExtensionHost::start_with(host_config, found.clone()).await;
    let load_errors = host.errors();
    let (commands, skipped) = Commands::new(
        host.clone(),
        ctx.project.clone(),
        ctx.config.user_home.clone(),
        ctx.config.project_trusted,
    );
    let mut warnings: Vec<String> = skipped
        .into_iter()
        .map(|s| format!("Markdown command {s}"))
        .collect();
    let skills = if args.no_skills {
        Vec::new()
    } else {
        let bundled: Vec<_> = found
            .iter()
            .filter_map(|f| match &f.status {
                FoundStatus::Load(m) | FoundStatus::Bundle(m) => Some(m),
                _ => None,
            })
            .flat_map(|m| m.skills.iter().map(|s| m.dir.join(s)))
            .collect();
        let places = skills::Places {
            cwd: &ctx.project,
            zot_home: &ctx.zot_home,
            home: ctx.config.user_home.as_deref(),
            project_trusted: ctx.config.project_trusted,
        };
        let left_out = skills::project_roots_with_skills(&ctx.project);
        if !places.project_trusted && !left_out.is_empty() {
            warnings.push(format!(
                "the project's skills in {} are not loaded: {}; run `zot trust` to trust it, or pass --trust for one run",
                left_out.join(", "),
                ctx.trust_reason
            ));
        }
        skills::discover(&skills::roots(places, &bundled))
    };
    Loaded {
        host,
        commands,
        warnings,
        host_events,
        load_errors,
        found,
        skills,
    }
}

/// The agent for `provider`/`model`, wired to the host, with its session
/// (opened before the host started, so both use its id).
pub fn agent(
    args: &AgentArgs,
    ctx: &Context,
    loaded: &Loaded,
    provider: ProviderConfig,
    model: &str,
    session: Option<Session>,
    mode: Mode,
) -> anyhow::Result<Agent> {
    let parts = PromptParts {
        system_prompt: args.system_prompt.clone(),
        append: args.append_system_prompt.clone(),
        skills: loaded.skills.clone(),
        home: ctx.config.user_home.clone(),
        project_trusted: ctx.config.project_trusted,
    };
    let base_prompt = assemble(&ctx.zot_home, &ctx.project, &parts);
    let info = models::of(&provider, model);
    let mut config = AgentConfig::new(&ctx.project, model);
    config.max_tokens = info.max_output.min(MAX_TOKENS_CAP);
    config.reasoning = args.reasoning.as_deref().and_then(Reasoning::parse);
    config.max_steps = args.max_steps;
    config.context_window = Some(info.context_window);
    config.auto_compact = ctx
        .settings
        .auto_compact()
        .map(|percent| percent as f64 / 100.0);
    config.plan = args.plan;
    config.sandbox = args.bash_sandbox();
    config.tool_output = Some(zot_core::tools::output::root(&ctx.zot_home));
    let checkpoints = zot_core::checkpoint::root(&ctx.zot_home);
    config.checkpoints = Some(checkpoints.clone());
    // This project's checkpoints of sessions deleted since; every
    // project's, and the oldest over the size limit, once a day.
    zot_core::checkpoint::prune_at_start(&ctx.zot_home, &checkpoints, &ctx.project);
    config.bash_timeout = ctx.settings.bash_timeout();
    config.web_fetch_private = ctx.settings.web_fetch_private();
    config.cache = ctx.settings.cache();
    config.subagent_model = ctx.settings.subagent_model();
    config.subagent_prompt = Some(assemble(
        &ctx.zot_home,
        &ctx.project,
        &PromptParts {
            system_prompt: Some(zot_core::agent::SUBAGENT_SYSTEM.to_owned()),
            home: ctx.config.user_home.clone(),
            project_trusted: ctx.config.project_trusted,
            ..PromptParts::default()
        },
    ));
    config.tools = match (&args.tools, args.no_tools) {
        (_, true) => ToolFilter::None,
        (Some(names), _) => ToolFilter::Only(names.clone()),
        (None, false) => ToolFilter::All,
    };
    // Tools are confirmed only in the TUI with --no-yolo.
    let asks = args.no_yolo && mode == Mode::Interactive;
    let hooks = Arc::new(ExtHooks::new(loaded.host.clone(), asks));
    let mut agent = Agent::new(Provider::new(provider), config, hooks, base_prompt);
    if !loaded.skills.is_empty() {
        agent.add_tool(SkillTool::new(loaded.skills.clone()));
    }
    // An MCP server's tools may come after start-up: not said to be unknown.
    let (unknown, known) = agent.unknown_tools();
    let unknown: Vec<String> = unknown
        .into_iter()
        .filter(|name| !name.starts_with(zot_mcp::TOOL_PREFIX))
        .collect();
    if !unknown.is_empty() {
        errln!(
            "zot: warning: --tools names no tool called {} (the tools: {})",
            unknown.join(", "),
            known.join(", ")
        );
    }
    if let Some(session) = session {
        agent.set_session(session);
    }
    if args.no_yolo && mode != Mode::Interactive {
        agent.set_confirm(Arc::new(Unattended));
    }
    Ok(agent)
}

/// `--no-yolo` where nobody can answer (print, JSON, RPC): tools run as
/// without it (the start-up warning says so), except those that reach the
/// network, which are refused with a tool error the model reads.
struct Unattended;

impl Confirm for Unattended {
    fn needed(&self, _name: &str, network: bool) -> bool {
        network
    }

    fn confirm<'a>(
        &'a self,
        _id: &'a str,
        name: &'a str,
        _preview: &'a str,
    ) -> BoxFuture<'a, Result<(), Refusal>> {
        Box::pin(async move {
            Err(Refusal::Unanswered(format!(
                "{name} reaches the network, which --no-yolo asks about first, and nobody can \
                 answer in this mode (print, JSON or RPC); it did not run"
            )))
        })
    }
}

/// The session id the host and the agent share.
pub fn session_id(session: Option<&Session>) -> String {
    session.map_or_else(local_session_id, |s| s.id().to_owned())
}

pub async fn start(args: &AgentArgs, ctx: &Context, mode: Mode) -> anyhow::Result<Running> {
    let Choice {
        provider,
        model,
        missing_credentials,
    } = provider_and_model(args, ctx)?;
    if args.no_yolo && mode != Mode::Interactive {
        errln!(
            "zot: warning: --no-yolo asks for confirmation only in the interactive TUI; tools run without asking here, except network tools (web_fetch), which are refused"
        );
    }
    // Without a key no conversation can happen: no session file for it.
    let session = match missing_credentials {
        None => open_session(args, ctx, &provider.name, &model, mode)?,
        Some(_) => None,
    };
    let info = models::of(&provider, &model);
    if args.reasoning.is_some() && info.known() && !info.reasoning() {
        errln!("zot: warning: {model} does not reason; --reasoning is ignored");
    }
    let id = session_id(session.as_ref());
    let loaded = load(args, ctx, &provider.name, &model, &id, mode).await;
    for warning in &loaded.warnings {
        errln!("zot: warning: {warning}");
    }
    let agent = agent(args, ctx, &loaded, provider, &model, session, mode)?;
    let manifest_errors = loaded.manifest_errors();
    Ok(Running {
        agent,
        host: loaded.host,
        commands: loaded.commands,
        host_events: loaded.host_events,
        load_errors: loaded.load_errors,
        manifest_errors,
        missing_credentials,
    })
}

/// `-c`: the newest session of this directory that opens. One that does not
/// (an empty file a crash left behind, one that is not a session) is said
/// and passed over, as `zot sessions list` passes over it.
fn newest_session(ctx: &Context) -> Option<Session> {
    Session::newest_first(&ctx.zot_home, &ctx.project)
        .into_iter()
        .find_map(|path| {
            Session::open(&path)
                .map_err(|e| errln!("zot: warning: {e}; passed over for an older session"))
                .ok()
        })
}

/// The session the arguments ask for. RPC clients own their conversation;
/// they get a session file only when they ask for one.
pub fn open_session(
    args: &AgentArgs,
    ctx: &Context,
    provider: &str,
    model: &str,
    mode: Mode,
) -> anyhow::Result<Option<Session>> {
    let wants_session = mode != Mode::Rpc
        || args.session.is_some()
        || args.continue_session
        || args.resume.is_some();
    if args.no_session || !wants_session {
        return Ok(None);
    }
    let session = if let Some(path) = &args.session {
        Session::open(path)?
    } else if let Some(id) = args
        .resume
        .as_deref()
        .filter(|id| !id.is_empty() || mode != Mode::Interactive)
    {
        // Alone, `-r` opens the TUI's picker over a new session.
        if id.is_empty() {
            anyhow::bail!(
                "--resume without an id picks a session in the TUI; here pass one: --resume=ID (zot sessions list shows them)"
            );
        }
        let found = zot_core::session::index::find(&ctx.zot_home, id)?;
        Session::open(std::path::Path::new(&found.path))?
    } else if args.continue_session
        && let Some(newest) = newest_session(ctx)
    {
        newest
    } else {
        // `-c` with nothing to continue starts the conversation it asked for.
        Session::create(&ctx.zot_home, &ctx.project, provider, model)
            .context("cannot create the session file")?
    };
    for warning in session.warnings() {
        errln!("zot: warning: {warning}");
    }
    Ok(Some(session))
}
