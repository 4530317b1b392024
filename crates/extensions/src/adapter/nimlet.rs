//! The nimlet protocol: the host writes `initialize`, the extension's first
//! line must be a valid `register` (strict, nimlet's exact messages), then
//! every command, tool call and subscribed lifecycle event is a request it
//! answers with `response`. Side effects (status, widget, notification,
//! entry) may ride on any reply or unsolicited line. Lifecycle events are
//! per prompt, quiet in plan mode, and a session switch restarts the
//! extension (nimlet spec).

use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio::time::Instant;
use zot_protocol::nimlet::{
    CAPABILITIES, Event, HostFrame, Response, SessionInfo, SideEffects, UiRequest,
};
use zot_protocol::ui::{CommandInfo, CommandOrigin, CommandOutcome, QuestionReply};
use zot_protocol::zot::{ContentBlock, NotifyLevel};

use super::{
    Adapter, CommandAnswer, HandshakeError, Link, ToolAnswer, check_tool_name, first_frame,
    own_reply,
};
use crate::context::HostContext;
use crate::model::{
    Ask, CustomSummary, Effect, Hook, HookPoint, Mode, Registration, Rewrite, Semantics, ToolInfo,
    Verdict,
};
use crate::transport::{FrameReader, Peer, RequestError};

/// How often a request re-checks its deadline while a question is pending.
const QUESTION_POLL: Duration = Duration::from_millis(100);

/// Each nimlet event name and the hook point it stands for.
const EVENTS: &[(&str, HookPoint, Mode)] = &[
    ("tool_call", HookPoint::ToolCall, Mode::Intercept),
    ("tool_result", HookPoint::ToolResult, Mode::Intercept),
    ("turn_start", HookPoint::PromptStart, Mode::Observe),
    ("turn_end", HookPoint::PromptEnd, Mode::Observe),
    ("session_start", HookPoint::SessionStart, Mode::Observe),
    ("session_end", HookPoint::SessionEnd, Mode::Observe),
    (
        "session_before_compact",
        HookPoint::BeforeCompact,
        Mode::Intercept,
    ),
    ("session_compact", HookPoint::AfterCompact, Mode::Observe),
];

pub(crate) struct Nimlet {
    cx: Arc<HostContext>,
    /// Reply timeout (`None`: wait forever), excluding time spent on questions.
    timeout: Option<Duration>,
}

/// A validated `register` line.
#[derive(Debug, Clone, Default)]
pub(crate) struct Registered {
    pub(crate) commands: Vec<CommandInfo>,
    pub(crate) tools: Vec<ToolInfo>,
    pub(crate) events: Vec<String>,
}

impl Nimlet {
    pub(crate) fn new(cx: Arc<HostContext>, timeout: Option<Duration>) -> Self {
        Self { cx, timeout }
    }

    /// A request: the extension's own timeout (none when `null`),
    /// suspended while a question is pending and restarted by each answer.
    async fn request(
        &self,
        peer: &Peer,
        id: &str,
        frame: &HostFrame,
    ) -> Result<Response, RequestError> {
        let start = Instant::now();
        let request = peer.conn.request(id, frame, None);
        tokio::pin!(request);
        loop {
            let wake = self.timeout.map(|t| {
                self.cx
                    .questions
                    .deadline(start, t)
                    .unwrap_or(Instant::now() + QUESTION_POLL)
            });
            let outcome = match wake {
                None => request.as_mut().await,
                Some(at) => tokio::select! {
                    outcome = request.as_mut() => outcome,
                    () = tokio::time::sleep_until(at) => {
                        let timeout = self.timeout.unwrap_or_default();
                        if self.cx.questions.deadline(start, timeout).is_some_and(|d| Instant::now() >= d) {
                            return Err(RequestError::Timeout(timeout));
                        }
                        continue;
                    }
                },
            };
            return own_reply::<Response>(outcome?);
        }
    }

    /// One lifecycle request; `None` with a warning when it fails
    /// (timeout, crash, malformed reply): nimlet is fail-open.
    async fn event(&self, peer: &Peer, link: &dyn Link, event: Event) -> Option<Response> {
        let id = self.cx.next_id();
        let name = event.name();
        match self.request(peer, &id, &event.into_frame(id.clone())).await {
            Ok(reply) => Some(reply),
            Err(e) => {
                link.warn(format!("extension '{}': {name}: {e}", peer.name));
                None
            }
        }
    }

    fn session(&self) -> SessionInfo {
        SessionInfo {
            session_id: self.cx.facts().session_id.clone(),
            workspace: self.cx.cwd().display().to_string(),
        }
    }
}

impl Adapter for Nimlet {
    fn semantics(&self) -> Semantics {
        Semantics {
            joined_blocks: true,
            hooks_in_plan: false,
            restart_on_session_switch: true,
            warn_builtin_tool_clash: true,
            warn_tool_clash: false,
        }
    }

    fn handshake<'a>(
        &'a self,
        peer: &'a Peer,
        link: &'a dyn Link,
        reader: &'a mut FrameReader,
    ) -> BoxFuture<'a, Result<Vec<Registration>, HandshakeError>> {
        async move {
            let session = self.session();
            peer.conn.send(&HostFrame::Initialize {
                version: zot_protocol::nimlet::VERSION,
                workspace: session.workspace,
                session_id: session.session_id,
            });
            // Never longer than the host's hello deadline, even with a null timeout.
            let limit = self.cx.config.limits.hello_timeout;
            let wait = self.timeout.map_or(limit, |t| t.min(limit));
            let value = first_frame(peer, reader, wait).await?;
            let registered = validate(&value, &peer.name).map_err(HandshakeError::BadRegister)?;
            peer.log.line("registered (nimlet protocol)");
            let mut out = Vec::new();
            for event in registered.events {
                match EVENTS.iter().find(|(name, ..)| *name == event) {
                    Some((_, point, mode)) => out.push(Registration::Subscribe(*point, *mode)),
                    None => peer
                        .log
                        .line(format_args!("register: unknown event \"{event}\" ignored")),
                }
            }
            out.extend(registered.commands.into_iter().map(Registration::Command));
            out.extend(
                registered
                    .tools
                    .into_iter()
                    .filter(|tool| check_tool_name(link, &tool.name))
                    .map(Registration::Tool),
            );
            out.push(Registration::Ready);
            Ok(out)
        }
        .boxed()
    }

    fn on_frame(&self, peer: &Peer, link: &dyn Link, line: &[u8]) {
        on_line(&self.cx, peer, link, line);
    }

    fn command<'a>(
        &'a self,
        peer: &'a Peer,
        link: &'a dyn Link,
        name: &'a str,
        args: &'a str,
    ) -> BoxFuture<'a, Result<CommandAnswer, RequestError>> {
        async move {
            let id = self.cx.next_id();
            let frame = HostFrame::Command {
                id: id.clone(),
                name: name.to_owned(),
                arguments: args.to_owned(),
            };
            let response = self.request(peer, &id, &frame).await?;
            // `message` is printed, then `prompt` starts a turn; both may come.
            let message = response.message.filter(|m| !m.is_empty());
            let outcome = match (response.prompt.filter(|p| !p.trim().is_empty()), message) {
                (Some(prompt), message) => {
                    if let Some(message) = message {
                        link.effect(Effect::Notify {
                            level: NotifyLevel::Info,
                            message,
                        });
                    }
                    CommandOutcome::Prompt(prompt)
                }
                (None, Some(message)) => CommandOutcome::Display(message),
                (None, None) => CommandOutcome::Noop,
            };
            Ok((outcome, None))
        }
        .boxed()
    }

    fn call_tool<'a>(
        &'a self,
        peer: &'a Peer,
        name: &'a str,
        args: Value,
        _progress: Option<super::ProgressSink>,
    ) -> BoxFuture<'a, Result<ToolAnswer, RequestError>> {
        async move {
            let id = self.cx.next_id();
            let frame = HostFrame::Tool {
                id: id.clone(),
                name: name.to_owned(),
                arguments: args,
            };
            // Dropped before the reply (the user aborted the turn): tell the extension.
            let mut cancel = CancelOnDrop {
                peer,
                id: Some(id.clone()),
            };
            let response = self.request(peer, &id, &frame).await;
            cancel.id = None;
            let response = response?;
            let text = response
                .content
                .as_ref()
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let is_error = response
                .is_error
                .as_ref()
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let content = if text.is_empty() {
                Vec::new()
            } else {
                vec![ContentBlock::Text { text }]
            };
            Ok(ToolAnswer {
                content,
                is_error,
                activate: Vec::new(),
            })
        }
        .boxed()
    }

    fn observe<'a>(
        &'a self,
        peer: &'a Peer,
        link: &'a dyn Link,
        hook: &'a Hook,
    ) -> BoxFuture<'a, ()> {
        async move {
            let session = self.session();
            let event = match hook {
                Hook::SessionStart => Event::SessionStart(session),
                Hook::SessionEnd { .. } => Event::SessionEnd(session),
                Hook::PromptStart => Event::TurnStart(session),
                Hook::PromptEnd { interrupted } => Event::TurnEnd {
                    session,
                    interrupted: *interrupted,
                },
                Hook::AfterCompact(c) => Event::SessionCompact {
                    session,
                    did_compact: c.did_compact,
                    summary: c.summary.clone(),
                    first_kept_index: c.first_kept_index,
                    tokens_before: c.tokens_before,
                    message: c.message.clone(),
                },
                _ => return,
            };
            self.event(peer, link, event).await;
        }
        .boxed()
    }

    fn intercept<'a>(
        &'a self,
        peer: &'a Peer,
        link: &'a dyn Link,
        ask: &'a Ask,
    ) -> BoxFuture<'a, Option<Verdict>> {
        async move {
            let event = match ask {
                Ask::ToolCall {
                    name,
                    args,
                    parent_tool_call_id,
                    ..
                } => Event::ToolCall {
                    tool: name.clone(),
                    arguments: args.clone(),
                    parent_tool_call_id: parent_tool_call_id.clone(),
                },
                Ask::ToolResult {
                    name,
                    args,
                    output,
                    is_error,
                    ..
                } => Event::ToolResult {
                    tool: name.clone(),
                    arguments: args.clone(),
                    output: output.clone(),
                    is_error: *is_error,
                },
                Ask::BeforeCompact {
                    instruction,
                    tokens_before,
                    entries,
                    ..
                } => Event::SessionBeforeCompact {
                    session: self.session(),
                    instruction: instruction.clone(),
                    tokens_before: *tokens_before,
                    entries: entries.clone(),
                },
                _ => return None,
            };
            let reply = self.event(peer, link, event).await?;
            Some(verdict(ask, reply))
        }
        .boxed()
    }

    fn shutdown(&self, peer: &Peer) {
        peer.conn.send(&HostFrame::Shutdown);
    }

    /// nimlet has only events: every subscription is listed as one.
    fn listed_as(&self, point: HookPoint, mode: Mode) -> (Mode, &'static str) {
        let name = EVENTS
            .iter()
            .find(|(_, p, m)| *p == point && *m == mode)
            .map_or("", |(name, ..)| name);
        (Mode::Observe, name)
    }
}

/// An interceptor's reply in neutral terms: `allow: false` (the boolean)
/// blocks; the rest rewrites what its event may rewrite.
fn verdict(ask: &Ask, reply: Response) -> Verdict {
    if reply.allow == Some(Value::Bool(false)) {
        return Verdict::Block(reply.reason.unwrap_or_default());
    }
    let rewrite = match ask {
        Ask::ToolCall { .. } => match reply.arguments {
            Some(new @ Value::Object(_)) => Some(Rewrite::Args(new)),
            _ => None,
        },
        Ask::ToolResult { .. } => {
            let output = match reply.output {
                Some(Value::String(new)) => Some(new),
                _ => None,
            };
            let is_error = match reply.is_error {
                Some(Value::Bool(flag)) => Some(flag),
                _ => None,
            };
            (output.is_some() || is_error.is_some())
                .then_some(Rewrite::ToolOutput { output, is_error })
        }
        Ask::BeforeCompact { .. } => {
            // The last valid `compaction` object wins; an empty summary
            // withdraws an earlier one (research nimlet.md E34).
            let summary = reply.compaction.as_ref().and_then(|c| {
                let summary = c.get("summary").and_then(Value::as_str)?;
                let index = c.get("first_kept_index").and_then(Value::as_u64)?;
                Some((!summary.is_empty()).then(|| CustomSummary {
                    summary: summary.to_owned(),
                    first_kept_index: usize::try_from(index).unwrap_or(usize::MAX),
                }))
            });
            (reply.instruction.is_some() || summary.is_some()).then_some(Rewrite::Compaction {
                instruction: reply.instruction,
                summary,
            })
        }
        _ => None,
    };
    rewrite.map_or(Verdict::Allow, Verdict::Rewrite)
}

/// Sends `cancel{id}` if a tool call is dropped before its reply.
struct CancelOnDrop<'a> {
    peer: &'a Peer,
    id: Option<String>,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.peer.conn.send(&HostFrame::Cancel { id });
        }
    }
}

/// nimlet's strict `register` rules (research nimlet.md E8, E9).
pub(crate) fn validate(value: &Value, extension: &str) -> Result<Registered, String> {
    if value.get("type").and_then(Value::as_str) != Some("register") {
        return Err("expected register response".into());
    }
    let mut registration = Registered::default();
    let Some(Value::Array(commands)) = value.get("commands") else {
        return Err("register commands must be an array".into());
    };
    for command in commands {
        let name = command
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim();
        if name.is_empty() {
            continue;
        }
        registration.commands.push(CommandInfo {
            name: name.to_owned(),
            description: command
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned),
            extension: extension.to_owned(),
            argument_hint: None,
            origin: CommandOrigin::Extension,
        });
    }
    match value.get("events") {
        None => {}
        Some(Value::Array(events)) => {
            for event in events {
                let Value::String(event) = event else {
                    return Err("register events must be strings".into());
                };
                registration.events.push(event.clone());
            }
        }
        Some(_) => return Err("register events must be an array".into()),
    }
    match value.get("tools") {
        None | Some(Value::Null) => {}
        Some(Value::Array(tools)) => {
            for tool in tools {
                registration.tools.push(tool_info(tool, extension)?);
            }
        }
        Some(_) => return Err("register tools must be an array".into()),
    }
    Ok(registration)
}

fn tool_info(tool: &Value, extension: &str) -> Result<ToolInfo, String> {
    let name = tool
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim();
    let description = tool
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim();
    let schema = tool.get("input_schema").filter(|s| s.is_object());
    let (false, false, Some(schema)) = (name.is_empty(), description.is_empty(), schema) else {
        return Err("registered tools require name, description, and input_schema".into());
    };
    let capabilities = match tool.get("capabilities") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => {
            let mut caps = Vec::new();
            for item in items {
                let Value::String(cap) = item else {
                    return Err(format!(
                        "invalid capabilities for tool '{name}': capabilities must contain strings"
                    ));
                };
                let cap = cap.to_lowercase();
                if !CAPABILITIES.contains(&cap.as_str()) {
                    return Err(format!(
                        "invalid capabilities for tool '{name}': unknown capability: {cap}"
                    ));
                }
                caps.push(cap);
            }
            Some(caps)
        }
        Some(_) => {
            return Err(format!(
                "invalid capabilities for tool '{name}': capabilities must be an array"
            ));
        }
    };
    // Read-only when every capability lies within read and user; none declared means act-only.
    let read_only = capabilities
        .as_ref()
        .is_some_and(|caps: &Vec<String>| caps.iter().all(|c| c == "read" || c == "user"));
    Ok(ToolInfo {
        name: name.to_owned(),
        description: Some(description.to_owned()),
        schema: schema.clone(),
        deferred: false,
        extension: extension.to_owned(),
        read_only,
    })
}

/// Handles one line after `register`.
fn on_line(cx: &Arc<HostContext>, peer: &Peer, link: &dyn Link, line: &[u8]) {
    let value: Value = match serde_json::from_slice(line) {
        Ok(value) => value,
        Err(e) => {
            return peer
                .log
                .line(format_args!("malformed json from extension: {e}; skipped"));
        }
    };
    match value.get("type").and_then(Value::as_str).unwrap_or("") {
        "response" => match serde_json::from_value::<Response>(value) {
            Ok(response) => {
                apply(link, &response.effects);
                let id = response.id.clone();
                if peer.conn.resolve(&id, Ok(Box::new(response))).is_some() {
                    peer.log.line(format_args!(
                        "response for unknown or expired id \"{id}\"; dropped"
                    ));
                }
            }
            Err(e) => {
                peer.log
                    .line(format_args!("bad response frame: {e}; skipped"));
                if let Some(id) = serde_json::from_slice::<Value>(line)
                    .ok()
                    .and_then(|v| v["id"].as_str().map(str::to_owned))
                {
                    peer.conn.resolve(
                        &id,
                        Err(RequestError::Malformed(format!("bad response frame: {e}"))),
                    );
                }
            }
        },
        "ui_request" if value.get("method").and_then(Value::as_str) == Some("question") => {
            match serde_json::from_value::<UiRequest>(value) {
                Ok(request) => ask(cx, peer, link, request),
                Err(e) => peer.log.line(format_args!("bad ui_request: {e}; skipped")),
            }
        }
        "register" => peer.log.line("a second register; ignored"),
        _ => match serde_json::from_value::<SideEffects>(value) {
            Ok(effects) => apply(link, &effects),
            Err(e) => peer
                .log
                .line(format_args!("bad update frame: {e}; skipped")),
        },
    }
}

/// Turns side effects into UI effects.
fn apply(link: &dyn Link, effects: &SideEffects) {
    if let Some(status) = effects.status.as_ref().filter(|s| !s.key.is_empty()) {
        link.effect(Effect::Status {
            key: status.key.clone(),
            text: status.text.clone(),
        });
    }
    if let Some(widget) = effects.widget.as_ref().filter(|w| !w.key.is_empty()) {
        let lines = widget
            .lines
            .iter()
            .filter_map(|l| l.as_str().map(str::to_owned))
            .collect();
        link.effect(Effect::Widget {
            key: widget.key.clone(),
            lines,
        });
    }
    if let Some(note) = effects
        .notification
        .as_ref()
        .filter(|n| !n.message.is_empty())
    {
        let level = match note.level.as_str() {
            "error" => NotifyLevel::Error,
            "warning" | "warn" => NotifyLevel::Warn,
            _ => NotifyLevel::Info,
        };
        link.effect(Effect::Notify {
            level,
            message: note.message.clone(),
        });
    }
    if let Some(data) = &effects.entry {
        link.effect(Effect::Entry(data.clone()));
    }
}

/// Puts a question to the front end and writes its answer back; time spent
/// waiting does not count against the extension's reply timeout.
fn ask(cx: &Arc<HostContext>, peer: &Peer, link: &dyn Link, request: UiRequest) {
    let id = request.id.as_str().unwrap_or("").to_owned();
    let sender = peer.conn.sender();
    cx.questions.begin();
    let cx = Arc::clone(cx);
    // Called once: with the answer, or with `None` when every copy is
    // dropped unanswered (no front end to ask, a headless mode).
    let reply = QuestionReply::new(move |answer: Option<String>| {
        cx.questions.end();
        sender.send(&HostFrame::UiResponse {
            id,
            cancelled: answer.is_none(),
            answer: answer.unwrap_or_default(),
        });
    });
    link.effect(Effect::Question {
        prompt: request.prompt,
        options: request.options,
        reply,
    });
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::adapter::testing::{Harness, reader};
    use crate::model::Compaction;

    fn adapter(h: &Harness) -> Nimlet {
        Nimlet::new(Arc::clone(&h.cx), Some(Duration::from_secs(5)))
    }

    /// Runs `call` while answering its one request with `reply` (id filled in).
    async fn answered<T>(
        h: &Harness,
        reply: Value,
        call: impl std::future::Future<Output = T>,
    ) -> (Value, T) {
        let nimlet = adapter(h);
        let answer = async {
            let request = h.sent().await;
            let mut reply = reply;
            reply["type"] = json!("response");
            reply["id"] = request["id"].clone();
            nimlet.on_frame(&h.peer, &h.link, reply.to_string().as_bytes());
            request
        };
        tokio::join!(answer, call)
    }

    #[tokio::test]
    async fn the_handshake_sends_initialize_and_maps_register() {
        let h = Harness::new("notes");
        let nimlet = adapter(&h);
        let register = json!({"type":"register",
            "commands":[{"name":"note","description":"save"}],
            "events":["tool_call","turn_start","session_compact","bogus"],
            "tools":[{"name":"recall","description":"read notes","input_schema":{"type":"object"},
                "capabilities":["read","user"]},
                {"name":"bad name!","description":"x","input_schema":{"type":"object"}}]});
        let regs = nimlet
            .handshake(&h.peer, &h.link, &mut reader(&[register]))
            .await
            .unwrap();
        let init = h.sent().await;
        assert_eq!(init["type"], "initialize");
        assert_eq!(init["session_id"], "s-1", "the host's one session id");
        assert_eq!(
            regs,
            [
                Registration::Subscribe(HookPoint::ToolCall, Mode::Intercept),
                Registration::Subscribe(HookPoint::PromptStart, Mode::Observe),
                Registration::Subscribe(HookPoint::AfterCompact, Mode::Observe),
                Registration::Command(CommandInfo {
                    name: "note".into(),
                    description: Some("save".into()),
                    extension: "notes".into(),
                    argument_hint: None,
                    origin: CommandOrigin::Extension,
                }),
                Registration::Tool(ToolInfo {
                    name: "recall".into(),
                    description: Some("read notes".into()),
                    schema: json!({"type":"object"}),
                    deferred: false,
                    extension: "notes".into(),
                    read_only: true,
                }),
                Registration::Ready,
            ],
            "a tool name the providers reject is refused"
        );
        let warnings = h.link.warnings.lock().unwrap().clone();
        assert!(
            matches!(&warnings[..], [w] if w.starts_with("tool \"bad name!\" rejected")),
            "{warnings:?}"
        );
        let bad = json!({"type":"register","commands":{}});
        assert_eq!(
            nimlet
                .handshake(&h.peer, &h.link, &mut reader(&[bad]))
                .await,
            Err(HandshakeError::BadRegister(
                "register commands must be an array".into()
            ))
        );
    }

    #[tokio::test]
    async fn tool_call_and_tool_result_verdicts() {
        let h = Harness::new("notes");
        let nimlet = adapter(&h);
        let ask = Ask::ToolCall {
            id: "t1".into(),
            name: "bash".into(),
            args: json!({"command":"curl x"}),
            parent_tool_call_id: None,
        };
        let (request, verdict) = answered(
            &h,
            json!({"allow": false, "reason": "no network"}),
            nimlet.intercept(&h.peer, &h.link, &ask),
        )
        .await;
        assert_eq!(request["event"], "tool_call");
        assert_eq!(
            request["payload"],
            json!({"tool":"bash","arguments":{"command":"curl x"}})
        );
        assert_eq!(verdict, Some(Verdict::Block("no network".into())));

        let (_, verdict) = answered(
            &h,
            json!({"arguments": {"command": "true"}}),
            nimlet.intercept(&h.peer, &h.link, &ask),
        )
        .await;
        assert_eq!(
            verdict,
            Some(Verdict::Rewrite(Rewrite::Args(json!({"command":"true"}))))
        );

        // A subagent's call names the task call it belongs to.
        let child = Ask::ToolCall {
            id: "c1".into(),
            name: "read".into(),
            args: json!({"path":"a.rs"}),
            parent_tool_call_id: Some("task_1".into()),
        };
        let (request, _) = answered(
            &h,
            json!({"allow": true}),
            nimlet.intercept(&h.peer, &h.link, &child),
        )
        .await;
        assert_eq!(
            request["payload"],
            json!({"tool":"read","arguments":{"path":"a.rs"},"parent_tool_call_id":"task_1"})
        );

        let ask = Ask::ToolResult {
            id: "t1".into(),
            name: "bash".into(),
            args: json!({}),
            output: "out".into(),
            is_error: true,
            parent_tool_call_id: None,
        };
        let (request, verdict) = answered(
            &h,
            json!({"output": "OUT", "is_error": false}),
            nimlet.intercept(&h.peer, &h.link, &ask),
        )
        .await;
        assert_eq!(request["payload"]["is_error"], true);
        assert_eq!(
            verdict,
            Some(Verdict::Rewrite(Rewrite::ToolOutput {
                output: Some("OUT".into()),
                is_error: Some(false),
            }))
        );
    }

    #[tokio::test]
    async fn compaction_verdicts_and_observed_hooks() {
        let h = Harness::new("notes");
        let nimlet = adapter(&h);
        let ask = Ask::BeforeCompact {
            automatic: false,
            instruction: String::new(),
            tokens_before: 10,
            entries: json!([]),
        };
        let reply = json!({"instruction": "keep names",
            "compaction": {"summary": "S", "first_kept_index": 2}});
        let (request, verdict) =
            answered(&h, reply, nimlet.intercept(&h.peer, &h.link, &ask)).await;
        assert_eq!(request["event"], "session_before_compact");
        assert_eq!(request["payload"]["session_id"], "s-1");
        assert_eq!(
            verdict,
            Some(Verdict::Rewrite(Rewrite::Compaction {
                instruction: Some("keep names".into()),
                summary: Some(Some(CustomSummary {
                    summary: "S".into(),
                    first_kept_index: 2,
                })),
            }))
        );

        let hook = Hook::PromptEnd { interrupted: true };
        let (request, ()) = answered(&h, json!({}), nimlet.observe(&h.peer, &h.link, &hook)).await;
        assert_eq!(request["event"], "turn_end");
        assert_eq!(request["payload"]["interrupted"], true);

        let hook = Hook::AfterCompact(Compaction {
            did_compact: true,
            summary: "S".into(),
            first_kept_index: 2,
            tokens_before: 10,
            message: "Compacted.".into(),
        });
        let (request, ()) = answered(&h, json!({}), nimlet.observe(&h.peer, &h.link, &hook)).await;
        assert_eq!(request["event"], "session_compact");

        nimlet
            .observe(&h.peer, &h.link, &Hook::TurnStart { step: 1 })
            .await;
        assert!(
            h.nothing_sent().await,
            "per model call, nimlet hears nothing"
        );
    }

    #[tokio::test]
    async fn side_effects_and_questions_become_ui_effects() {
        let h = Harness::new("notes");
        let nimlet = adapter(&h);
        let update = json!({"type":"update","status":{"key":"job","text":"busy"},
            "notification":{"level":"warning","message":"careful"},"entry":{"n":1}});
        nimlet.on_frame(&h.peer, &h.link, update.to_string().as_bytes());
        let question = json!({"type":"ui_request","id":"q1","method":"question",
            "prompt":"Which?","options":["a","b"]});
        nimlet.on_frame(&h.peer, &h.link, question.to_string().as_bytes());
        let effects = std::mem::take(&mut *h.link.effects.lock().unwrap());
        assert_eq!(
            effects[..3],
            [
                Effect::Status {
                    key: "job".into(),
                    text: "busy".into()
                },
                Effect::Notify {
                    level: NotifyLevel::Warn,
                    message: "careful".into()
                },
                Effect::Entry(json!({"n":1})),
            ]
        );
        let Some(Effect::Question { reply, options, .. }) = effects.into_iter().nth(3) else {
            panic!("no question");
        };
        assert_eq!(options, ["a", "b"]);
        reply.answer("b");
        assert_eq!(
            h.sent().await,
            json!({"type":"ui_response","id":"q1","answer":"b","cancelled":false})
        );
    }
}
