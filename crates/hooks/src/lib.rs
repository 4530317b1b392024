//! Command hooks in Claude Code's format: the adapter for extensions that
//! are one process per call rather than a long-lived peer. Each event runs
//! the hooks that match it (in parallel, identical commands once) with one
//! line of JSON on stdin, and their answers (exit code, plain or JSON
//! stdout) become the host's neutral verdicts in configuration order
//! (`participant.rs`): allow, ask, deny, block, rewritten arguments, stop,
//! context for the model.

pub mod ecosystem;
mod participant;
pub mod run;
pub mod settings;
pub mod tools;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use serde_json::{Value, json};
use zot_protocol::hooks::{HookEvent, HookInput, HookOutput};

use zot_extensions::config::HostConfig;
use zot_extensions::participant::{Gate, SessionFacts};

pub use settings::{Event, HookScope, HookSources, HookSpec, Listed, Loaded};
use tools::Matcher;

use self::run::{Call, Ran};

/// A hook's timeout when it sets none: Claude Code's default for command
/// hooks (research anchors §2.2: 600 s).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// The most a `SessionEnd` or `Notification` hook may take, whatever its own
/// timeout says (the issue: a few seconds, so exiting or waiting for the
/// user never hangs on a hook).
pub const QUICK_EVENT_TIMEOUT: Duration = Duration::from_secs(5);

/// Where a warning about a hook goes: (`hook:<Event>`, message).
pub use zot_extensions::participant::Warn;

/// Every hook zot runs, ready to fire.
pub struct CommandHooks {
    hooks: Vec<(HookSpec, Matcher)>,
    /// How project hooks are confined (`None`: they run unrestricted).
    scope: Option<ProjectScope>,
    project: PathBuf,
    warn: Warn,
}

/// What the confinement of a project hook is built from.
pub(crate) struct ProjectScope {
    pub(crate) config: HostConfig,
    /// The user's permission policy, or why it cannot be read.
    pub(crate) policy: Result<zot_sandbox::Policy, String>,
    /// Whether the files project hooks run are still as trusted.
    pub(crate) gate: Arc<dyn Gate>,
}

/// How one hook answered.
pub(crate) enum Answer {
    /// Exit 0: stdout, and its JSON object when it is one.
    Ok {
        stdout: String,
        json: Option<Box<HookOutput>>,
    },
    /// Exit 2, or a failure of a hook that blocks on failure.
    Block(String),
    /// Anything else: warned about, then ignored.
    Ignored,
}

impl CommandHooks {
    /// The hooks that run (supported, trusted, not disabled), from `loaded`.
    /// What is wrong with the files is [`load_warnings`]' business: the
    /// host says it once per run, not again at each reload.
    pub fn new(loaded: &Loaded, project: &Path, warn: Warn) -> Self {
        let hooks: Vec<(HookSpec, Matcher)> = loaded
            .active()
            .into_iter()
            .map(|spec| {
                let matcher = Matcher::new(&spec.matcher);
                (spec, matcher)
            })
            .collect();
        Self {
            hooks,
            scope: None,
            project: project.to_path_buf(),
            warn,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// Whether any hook runs at `event`.
    pub fn has(&self, event: Event) -> bool {
        self.hooks
            .iter()
            .any(|(h, _)| h.known_event() == Some(event))
    }

    /// Project hooks run under the permission policy's scope for them.
    pub(crate) fn with_scope(mut self, scope: ProjectScope) -> Self {
        self.scope = Some(scope);
        self
    }

    /// Runs the hooks of `event` that match `subject`, in parallel, and
    /// returns their answers in configuration order. The input carries the
    /// session `facts` and, for a subagent's event, the `task` call it
    /// runs for.
    pub(crate) async fn fire(
        &self,
        facts: &SessionFacts,
        parent_tool_call_id: Option<&str>,
        event: Event,
        subject: &str,
        fields: HookEvent,
    ) -> Vec<Answer> {
        let mut chosen: Vec<&HookSpec> = Vec::new();
        for (spec, matcher) in &self.hooks {
            let applies = spec.known_event() == Some(event)
                && (!event.matches_on_subject() || matcher.matches(subject));
            // Identical commands run once, at their first place.
            if applies && !chosen.iter().any(|c| c.command == spec.command) {
                chosen.push(spec);
            }
        }
        // A project hook starts only while what it runs is as trusted (the
        // gate tells the user once when it is not).
        if let Some(scope) = &self.scope
            && chosen.iter().any(|spec| spec.scope == HookScope::Project)
            && scope.gate.check().await.is_err()
        {
            chosen.retain(|spec| spec.scope != HookScope::Project);
        }
        if chosen.is_empty() {
            return Vec::new();
        }
        let input = HookInput {
            session_id: facts.session_id.clone(),
            transcript_path: facts.transcript.as_ref().map(|p| p.display().to_string()),
            cwd: self.project.display().to_string(),
            permission_mode: permission_mode(facts).to_owned(),
            parent_tool_call_id: parent_tool_call_id.map(str::to_owned),
            event: fields,
        };
        // Strings and `Value`s only: serialising cannot fail.
        let line = serde_json::to_string(&input).unwrap_or_default();
        let env: [(&str, &Path); 2] = [
            ("CLAUDE_PROJECT_DIR", &self.project),
            ("ZOT_PROJECT_DIR", &self.project),
        ];
        let (line, env) = (&line, &env);
        let runs = chosen.iter().map(|spec| {
            let mut timeout = spec.timeout.unwrap_or(DEFAULT_TIMEOUT);
            if matches!(event, Event::SessionEnd | Event::Notification) {
                timeout = timeout.min(QUICK_EVENT_TIMEOUT);
            }
            let confinement = match (&self.scope, spec.scope) {
                (Some(scope), HookScope::Project) => scope.policy.clone().and_then(|policy| {
                    zot_extensions::permissions::project_hook_confinement(&scope.config, &policy)
                }),
                _ => Ok(run::Confinement::default()),
            };
            async move {
                match confinement {
                    Ok(confinement) => {
                        run::run(Call {
                            command: &spec.command,
                            cwd: &self.project,
                            env,
                            input: line.as_bytes(),
                            timeout,
                            confinement,
                        })
                        .await
                    }
                    Err(why) => Ran::Failed {
                        why: format!("cannot start under its permission scope: {why}"),
                        stderr: String::new(),
                    },
                }
            }
        });
        let results = join_all(runs).await;
        chosen
            .into_iter()
            .zip(results)
            .map(|(spec, ran)| self.answer(event, spec, ran))
            .collect()
    }

    /// One hook's result as an answer, warning where the user should hear of it.
    fn answer(&self, event: Event, spec: &HookSpec, ran: Ran) -> Answer {
        let name = || format!("hook:{}", event.name());
        let failed = |what: String, stderr: &str| {
            let message = with_stderr(format!("`{}` {what}", spec.command), stderr);
            if spec.block_on_failure {
                Answer::Block(message)
            } else {
                (self.warn)(name(), message);
                Answer::Ignored
            }
        };
        match ran {
            Ran::Exited {
                code: 0, stdout, ..
            } => {
                let json = HookOutput::parse(&stdout).map(Box::new);
                if let Some(message) = json.as_ref().and_then(|j| j.system_message.as_deref()) {
                    (self.warn)(name(), message.to_owned());
                }
                Answer::Ok { stdout, json }
            }
            Ran::Exited {
                code: 2, stderr, ..
            } => {
                let reason = stderr.trim();
                Answer::Block(if reason.is_empty() {
                    format!("blocked by hook `{}`", spec.command)
                } else {
                    reason.to_owned()
                })
            }
            Ran::Exited { code, stderr, .. } => {
                (self.warn)(
                    name(),
                    with_stderr(format!("`{}` exited with {code}", spec.command), &stderr),
                );
                Answer::Ignored
            }
            Ran::Failed { why, stderr } => failed(format!("failed: {why}"), &stderr),
            Ran::TimedOut { after, stderr } => failed(
                format!(
                    "timed out after {} s and was killed",
                    after.as_secs_f64().round()
                ),
                &stderr,
            ),
        }
    }
}

/// `permission_mode`: `plan` in plan mode, `bypassPermissions` when tools
/// run without asking, else `default`.
fn permission_mode(facts: &SessionFacts) -> &'static str {
    match (facts.plan, facts.confirms) {
        (true, _) => "plan",
        (false, true) => "default",
        (false, false) => "bypassPermissions",
    }
}

/// What the user should hear about `loaded` before any hook runs, as
/// (`hooks` or `hook:<Event>`, message): files and entries skipped, project
/// hooks left out of an untrusted project, hooks of a kind zot does not
/// run, and matchers that are not valid patterns.
pub fn load_warnings(loaded: &Loaded) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut warn = |source: String, message: String| out.push((source, message));
    for (path, error) in &loaded.errors {
        warn(
            "hooks".into(),
            format!("{}: skipped: {error}", path.display()),
        );
    }
    for (path, _, file) in &loaded.files {
        for problem in &file.problems {
            warn(
                "hooks".into(),
                format!("{}: {problem} (skipped)", path.display()),
            );
        }
    }
    let untrusted = loaded
        .listed()
        .into_iter()
        .filter(|l| !l.trusted && !l.disabled)
        .count();
    if untrusted > 0 {
        warn(
            "hooks".into(),
            format!(
                "{untrusted} project hook(s) not run: this project is not trusted, or its files changed since it was (`zot trust --list` says which); run `zot trust` to trust it, or pass --trust for one run"
            ),
        );
    }
    let unsupported = loaded.unsupported();
    if !unsupported.is_empty() {
        let what: Vec<String> = unsupported
            .iter()
            .map(|h| format!("{} {} hook", h.event, h.kind))
            .collect();
        warn(
            "hooks".into(),
            format!(
                "{} hook(s) not run (zot runs command hooks of the events it knows): {}",
                unsupported.len(),
                what.join(", ")
            ),
        );
    }
    for spec in loaded.active() {
        if let Matcher::Invalid(e) = Matcher::new(&spec.matcher) {
            warn(
                format!("hook:{}", spec.event),
                format!(
                    "matcher \"{}\" in {} is not a valid pattern, so the hook never runs: {e}",
                    spec.matcher,
                    spec.source.display()
                ),
            );
        }
    }
    out
}

impl Listed {
    /// Why it does not run, if it does not.
    pub fn skipped(&self) -> Option<&'static str> {
        if !self.trusted {
            Some("untrusted")
        } else if self.disabled {
            Some("disabled")
        } else if !self.spec.supported() {
            Some("unsupported")
        } else {
            None
        }
    }

    /// Its row in `zot hooks list --json`.
    pub fn to_json(&self) -> Value {
        let spec = &self.spec;
        json!({
            "source": spec.source.display().to_string(),
            "scope": spec.scope.as_str(),
            "event": spec.event,
            "matcher": spec.matcher,
            "type": spec.kind,
            "command": spec.command,
            "timeout": spec.timeout.map(|t| t.as_secs_f64()),
            "supported": spec.supported(),
            "trusted": self.trusted,
            "disabled": self.disabled,
        })
    }

    /// Its line in `zot hooks list` and `/hooks`.
    pub fn line(&self) -> String {
        let spec = &self.spec;
        let matcher = match spec.matcher.as_str() {
            "" => "*",
            m => m,
        };
        let what = match spec.kind.as_str() {
            "command" => spec.command.clone(),
            kind => format!("({kind} hook)"),
        };
        let state = self
            .skipped()
            .map(|why| format!(" [{why}]"))
            .unwrap_or_default();
        format!(
            "{} {matcher}: {what}{state}  ({} {})",
            spec.event,
            spec.scope.as_str(),
            spec.source.display()
        )
    }
}

fn with_stderr(message: String, stderr: &str) -> String {
    let stderr = stderr.trim();
    if stderr.is_empty() {
        message
    } else {
        format!("{message}: {stderr}")
    }
}
