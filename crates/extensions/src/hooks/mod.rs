//! Command hooks in Claude Code's format: the adapter for extensions that
//! are one process per call rather than a long-lived peer. Each event runs
//! the hooks that match it (in parallel, identical commands once) with one
//! line of JSON on stdin, and their answers (exit code, plain or JSON
//! stdout) are merged in configuration order into neutral decisions:
//! allow, ask, deny, block, rewritten arguments, context for the model.

pub mod settings;
pub mod tools;

pub(crate) mod run;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::future::join_all;
use serde_json::{Value, json};
use zot_protocol::hooks::{Decision, HookEvent, HookInput, HookOutput, ToolResponse};

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
pub type Warn = Arc<dyn Fn(String, String) + Send + Sync>;

/// What a `PreToolUse` hook may decide about a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Permission {
    /// Run it without asking the user.
    Allow,
    /// Ask the user, even when zot would not.
    Ask(String),
    /// Refuse it; the model sees the reason.
    Deny(String),
}

/// The merged answer of the `PreToolUse` hooks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PreToolUse {
    /// `None`: no hook decided; zot's own rules apply.
    pub permission: Option<Permission>,
    /// zot's arguments after the last `updatedInput`.
    pub args: Option<Value>,
    /// `continue: false`: the run stops after this call, with this reason.
    pub stop: Option<String>,
    /// `additionalContext`: text the model reads with the call's result
    /// (beside the refusal, when the call is refused).
    pub context: Vec<String>,
}

/// The merged answer of the `PostToolUse` hooks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PostToolUse {
    /// What the model reads after the tool's output: block reasons and
    /// `additionalContext`.
    pub notes: Vec<String>,
    /// `continue: false`: the run stops after this call, with this reason.
    pub stop: Option<String>,
}

/// The merged answer of the `UserPromptSubmit` (and `SessionStart`) hooks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PromptDecision {
    /// The prompt is dropped; the user sees why.
    pub blocked: Option<String>,
    /// Text added before the prompt, for the model.
    pub context: Vec<String>,
}

/// The session facts every hook input carries.
#[derive(Debug, Clone)]
struct Facts {
    session_id: String,
    transcript_path: Option<PathBuf>,
    permission_mode: &'static str,
}

/// Every hook zot runs, ready to fire.
pub struct CommandHooks {
    hooks: Vec<(HookSpec, Matcher)>,
    /// How project hooks are confined (`None`: they run unrestricted).
    scope: Option<ProjectScope>,
    project: PathBuf,
    facts: Mutex<Facts>,
    warn: Warn,
}

/// What the confinement of a project hook is built from.
pub(crate) struct ProjectScope {
    pub(crate) config: crate::config::HostConfig,
    /// The user's permission policy, or why it cannot be read.
    pub(crate) policy: Result<zot_sandbox::Policy, String>,
    /// Whether the files project hooks run are still as trusted.
    pub(crate) gate: Arc<crate::trust_gate::TrustGate>,
}

/// How one hook answered.
enum Answer {
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
    pub fn new(loaded: &Loaded, project: &Path, session_id: &str, warn: Warn) -> Self {
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
            facts: Mutex::new(Facts {
                session_id: session_id.to_owned(),
                transcript_path: None,
                permission_mode: "default",
            }),
            warn,
        }
    }

    /// No hooks at all (`--no-hooks`, or nothing configured).
    pub fn none(project: &Path, warn: Warn) -> Self {
        Self::new(&Loaded::default(), project, "", warn)
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

    fn facts(&self) -> std::sync::MutexGuard<'_, Facts> {
        self.facts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Project hooks run under the permission policy's scope for them.
    pub(crate) fn with_scope(mut self, scope: ProjectScope) -> Self {
        self.scope = Some(scope);
        self
    }

    /// Takes the session facts of the generation before a reload.
    pub fn inherit(&self, old: &CommandHooks) {
        let facts = old.facts().clone();
        *self.facts() = facts;
    }

    pub fn set_session_id(&self, id: &str) {
        self.facts().session_id = id.to_owned();
    }

    /// The session file hooks get as `transcript_path`.
    pub fn set_transcript(&self, path: Option<&Path>) {
        self.facts().transcript_path = path.map(Path::to_path_buf);
    }

    /// `permission_mode`: `plan` in plan mode, `bypassPermissions` when
    /// tools run without asking, else `default`.
    pub fn set_permission_mode(&self, plan: bool, asks: bool) {
        self.facts().permission_mode = match (plan, asks) {
            (true, _) => "plan",
            (false, true) => "default",
            (false, false) => "bypassPermissions",
        };
    }

    /// Runs the hooks of `event` that match `subject`, in parallel, and
    /// returns their answers in configuration order.
    async fn fire(&self, event: Event, subject: &str, fields: HookEvent) -> Vec<Answer> {
        self.fire_for(None, event, subject, fields).await
    }

    /// [`fire`](Self::fire) for a subagent's event: the input names the
    /// `task` call it runs for.
    async fn fire_for(
        &self,
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
        let input = {
            let facts = self.facts();
            HookInput {
                session_id: facts.session_id.clone(),
                transcript_path: facts
                    .transcript_path
                    .as_ref()
                    .map(|p| p.display().to_string()),
                cwd: self.project.display().to_string(),
                permission_mode: facts.permission_mode.to_owned(),
                parent_tool_call_id: parent_tool_call_id.map(str::to_owned),
                event: fields,
            }
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
                    crate::permissions::project_hook_confinement(&scope.config, &policy)
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

    /// `PreToolUse` for a call of zot's tool `name` (`parent`: the `task`
    /// call whose subagent made it): deny beats ask beats allow; the last
    /// `updatedInput` in configuration order wins.
    pub async fn pre_tool_use(
        &self,
        parent: Option<&str>,
        id: &str,
        name: &str,
        args: &Value,
    ) -> PreToolUse {
        if !self.has(Event::PreToolUse) {
            return PreToolUse::default();
        }
        let (tool_name, tool_input) = tools::to_claude(name, args);
        let fields = HookEvent::PreToolUse {
            tool_name: tool_name.clone(),
            tool_input,
            tool_use_id: id.to_owned(),
        };
        let answers = self
            .fire_for(parent, Event::PreToolUse, &tool_name, fields)
            .await;
        let mut out = PreToolUse::default();
        let (mut denied, mut asked, mut allowed) = (Vec::new(), Vec::new(), false);
        let mut updates = 0;
        for answer in answers {
            let json = match answer {
                Answer::Block(reason) => {
                    denied.push(reason);
                    continue;
                }
                Answer::Ignored => continue,
                Answer::Ok { json: None, .. } => continue,
                Answer::Ok { json: Some(j), .. } => j,
            };
            if let Some(stop) = stop_reason(&json) {
                out.stop.get_or_insert(stop);
            }
            out.context.extend(additional_context(&json));
            let specific = json.hook_specific_output.as_ref();
            let reason = specific
                .and_then(|s| s.permission_decision_reason.clone())
                .or_else(|| json.reason.clone())
                .unwrap_or_default();
            let decision = specific
                .and_then(|s| s.permission_decision)
                .or(json.decision);
            match decision {
                Some(Decision::Deny | Decision::Block) => denied.push(if reason.is_empty() {
                    "denied by a hook".to_owned()
                } else {
                    reason
                }),
                Some(Decision::Ask) => asked.push(reason),
                Some(Decision::Allow | Decision::Approve) => allowed = true,
                None => {}
            }
            if let Some(updated) = specific.and_then(|s| s.updated_input.as_ref()) {
                updates += 1;
                out.args = Some(tools::from_claude(name, args, updated));
            }
        }
        if updates > 1 {
            (self.warn)(
                "hook:PreToolUse".into(),
                format!("{updates} hooks rewrote the input of {tool_name}; the last one's applies"),
            );
        }
        out.permission = if !denied.is_empty() {
            Some(Permission::Deny(denied.join("; ")))
        } else if !asked.is_empty() {
            let reasons: Vec<String> = asked.into_iter().filter(|r| !r.is_empty()).collect();
            Some(Permission::Ask(reasons.join("; ")))
        } else if allowed {
            Some(Permission::Allow)
        } else {
            None
        };
        out
    }

    /// `PostToolUse` after a call ran: what the model should also read
    /// (block reasons and additional context), and whether the run stops.
    pub async fn post_tool_use(
        &self,
        parent: Option<&str>,
        id: &str,
        name: &str,
        args: &Value,
        output: &str,
        is_error: bool,
    ) -> PostToolUse {
        let mut out = PostToolUse::default();
        if !self.has(Event::PostToolUse) {
            return out;
        }
        let (tool_name, tool_input) = tools::to_claude(name, args);
        let tool_response = ToolResponse {
            output: output.to_owned(),
            is_error,
            success: !is_error,
            file_path: tool_input.get("file_path").cloned(),
        };
        let fields = HookEvent::PostToolUse {
            tool_name: tool_name.clone(),
            tool_input,
            tool_use_id: id.to_owned(),
            tool_response,
        };
        let answers = self
            .fire_for(parent, Event::PostToolUse, &tool_name, fields)
            .await;
        for answer in answers {
            match answer {
                Answer::Block(reason) => out.notes.push(reason),
                Answer::Ok { json: Some(j), .. } => {
                    if let Some(stop) = stop_reason(&j) {
                        out.stop.get_or_insert(stop);
                    }
                    out.notes.extend(block_reason(&j));
                    out.notes.extend(additional_context(&j));
                }
                _ => {}
            }
        }
        out
    }

    /// `SessionStart` then `UserPromptSubmit` before a prompt joins the
    /// conversation; `start` is `Some(source)` for the first prompt of a session.
    pub async fn prompt_submit(&self, start: Option<&str>, prompt: &str) -> PromptDecision {
        let mut out = PromptDecision::default();
        if let Some(source) = start
            && self.has(Event::SessionStart)
        {
            let answers = self
                .fire(
                    Event::SessionStart,
                    source,
                    HookEvent::SessionStart {
                        source: source.to_owned(),
                    },
                )
                .await;
            // SessionStart cannot block: exit 2 only shows its reason.
            for answer in answers {
                match answer {
                    Answer::Block(reason) => (self.warn)("hook:SessionStart".into(), reason),
                    other => out.context.extend(context_of(other)),
                }
            }
        }
        if !self.has(Event::UserPromptSubmit) {
            return out;
        }
        let answers = self
            .fire(
                Event::UserPromptSubmit,
                "",
                HookEvent::UserPromptSubmit {
                    prompt: prompt.to_owned(),
                },
            )
            .await;
        let mut blocked = Vec::new();
        for answer in answers {
            match answer {
                Answer::Block(reason) => blocked.push(reason),
                Answer::Ok { json: Some(j), .. }
                    if block_reason(&j).is_some() || stop_reason(&j).is_some() =>
                {
                    blocked.extend(block_reason(&j).or_else(|| stop_reason(&j)));
                }
                other => out.context.extend(context_of(other)),
            }
        }
        if !blocked.is_empty() {
            out.blocked = Some(blocked.join("; "));
        }
        out
    }

    /// `Stop` when the agent would end its answer: `Some(reason)` makes it go
    /// on with the reason as the next instruction.
    pub async fn stop(&self, active: bool) -> Option<String> {
        if !self.has(Event::Stop) {
            return None;
        }
        let fields = HookEvent::Stop {
            stop_hook_active: active,
        };
        let answers = self.fire(Event::Stop, "", fields).await;
        go_on(answers)
    }

    /// `SubagentStop` when the subagent of the `task` call `parent` would
    /// end its answer: like [`stop`](Self::stop), `Some(reason)` sends it
    /// on with the reason as its next instruction.
    pub async fn subagent_stop(&self, parent: &str, active: bool) -> Option<String> {
        if !self.has(Event::SubagentStop) {
            return None;
        }
        let fields = HookEvent::SubagentStop {
            stop_hook_active: active,
        };
        let answers = self
            .fire_for(Some(parent), Event::SubagentStop, "", fields)
            .await;
        go_on(answers)
    }

    /// `SessionEnd` (`reason`: clear, prompt_input_exit or other).
    pub async fn session_end(&self, reason: &str) {
        if self.has(Event::SessionEnd) {
            let fields = HookEvent::SessionEnd {
                reason: reason.to_owned(),
            };
            self.fire(Event::SessionEnd, reason, fields).await;
        }
    }

    /// `PreCompact` (`trigger`: manual or auto).
    pub async fn pre_compact(&self, automatic: bool, instructions: &str) {
        if self.has(Event::PreCompact) {
            let trigger = if automatic { "auto" } else { "manual" };
            self.fire(
                Event::PreCompact,
                trigger,
                HookEvent::PreCompact {
                    trigger: trigger.to_owned(),
                    custom_instructions: instructions.to_owned(),
                },
            )
            .await;
        }
    }

    /// `Notification` when zot waits for the user.
    pub async fn notification(&self, message: &str) {
        if self.has(Event::Notification) {
            let fields = HookEvent::Notification {
                message: message.to_owned(),
            };
            self.fire(Event::Notification, "", fields).await;
        }
    }
}

/// What `Stop` and `SubagentStop` answers say: `Some(reasons)` sends the
/// agent on; a `continue: false` wins and lets it stop.
fn go_on(answers: Vec<Answer>) -> Option<String> {
    let mut reasons = Vec::new();
    for answer in answers {
        match answer {
            Answer::Block(reason) => reasons.push(reason),
            Answer::Ok { json: Some(j), .. } => {
                if stop_reason(&j).is_some() {
                    return None;
                }
                reasons.extend(block_reason(&j));
            }
            _ => {}
        }
    }
    (!reasons.is_empty()).then(|| reasons.join("\n"))
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
                "{untrusted} project hook(s) not run: this project is not trusted; run `zot trust` to trust it, or pass --trust for one run"
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

/// `decision: "block"`, with its `reason`.
fn block_reason(json: &HookOutput) -> Option<String> {
    (json.decision == Some(Decision::Block)).then(|| {
        json.reason
            .clone()
            .unwrap_or_else(|| "blocked by a hook".to_owned())
    })
}

/// `continue: false`, with its `stopReason`.
fn stop_reason(json: &HookOutput) -> Option<String> {
    (json.continue_ == Some(false)).then(|| {
        json.stop_reason
            .clone()
            .unwrap_or_else(|| "stopped by a hook".to_owned())
    })
}

fn additional_context(json: &HookOutput) -> Option<String> {
    json.hook_specific_output
        .as_ref()
        .and_then(|s| s.additional_context.as_deref())
        .filter(|c| !c.trim().is_empty())
        .map(str::to_owned)
}

/// Context from an exit-0 answer: `additionalContext`, or plain stdout.
fn context_of(answer: Answer) -> Option<String> {
    match answer {
        Answer::Ok { json: Some(j), .. } => additional_context(&j),
        Answer::Ok { stdout, json: None } => {
            let text = stdout.trim();
            (!text.is_empty()).then(|| text.to_owned())
        }
        _ => None,
    }
}
