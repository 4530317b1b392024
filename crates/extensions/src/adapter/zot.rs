//! The zot protocol: the extension speaks first (`hello`), the host answers
//! `hello_ack`, registrations stream in until `ready`; events are one-way
//! frames, intercepts and calls are requests answered by id.

use std::path::PathBuf;
use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::Value;
use zot_protocol::PROTOCOL_VERSION;
use zot_protocol::ui::{CommandInfo, CommandOrigin, CommandOutcome};
use zot_protocol::zot::{
    CommandAction, CommandInvoked, ContentBlock, Event, EventIntercept, ExtFrame, HelloAck,
    HostFrame, Intercept, InterceptResponse, PanelClose, PanelKey, RegisterCommand, RegisterTool,
    Subscribe, ToolCall,
};

use super::{
    Adapter, CommandAnswer, HandshakeError, Link, PanelInput, ToolAnswer, check_tool_name,
    first_frame, json_kind, own_reply,
};
use crate::context::HostContext;
use crate::model::{
    Ask, Effect, Hook, HookPoint, Mode, Registration, Rewrite, Semantics, ToolInfo, Verdict,
};
use crate::transport::{FrameReader, Peer, RequestError};

pub(crate) struct Zot {
    cx: Arc<HostContext>,
    /// The manifest's name, which `hello` must repeat.
    name: String,
    /// The extension directory, sent in `hello_ack` as `extension_dir`.
    dir: PathBuf,
    /// Where it keeps its state, sent as `data_dir`: the extension directory,
    /// except for project extensions (see `HostConfig::data_dir`).
    data_dir: PathBuf,
}

impl Zot {
    pub(crate) fn new(cx: Arc<HostContext>, name: String, dir: PathBuf, data_dir: PathBuf) -> Self {
        Self {
            cx,
            name,
            dir,
            data_dir,
        }
    }

    /// One intercept request; `None` (allow) with a warning on timeout,
    /// crash or a malformed reply.
    async fn ask(
        &self,
        peer: &Peer,
        link: &dyn Link,
        payload: Intercept,
    ) -> Option<InterceptResponse> {
        let event = payload.name();
        let id = self.cx.next_id();
        let frame = HostFrame::EventIntercept(EventIntercept {
            id: id.clone(),
            payload,
        });
        let deadline = self.cx.config.limits.intercept_timeout;
        let problem = match peer.conn.request(&id, &frame, Some(deadline)).await {
            Ok(reply) => match own_reply::<ExtFrame>(reply) {
                Ok(ExtFrame::EventInterceptResponse(reply)) => return Some(reply),
                Ok(other) => unexpected(&other).to_string(),
                Err(e) => e.to_string(),
            },
            Err(RequestError::Timeout(after)) => format!("timed out after {after:?}"),
            Err(e) => e.to_string(),
        };
        let keep = if event == "before_agent_start" {
            "keeping the prompt"
        } else if link.fails_closed() {
            "blocking (on_failure: block)"
        } else {
            "allowing"
        };
        link.warn(format!("intercept {event} {problem}; {keep}"));
        None
    }

    async fn request(
        &self,
        peer: &Peer,
        frame: HostFrame,
        id: &str,
        deadline: std::time::Duration,
    ) -> Result<ExtFrame, RequestError> {
        let reply = peer.conn.request(id, &frame, Some(deadline)).await?;
        own_reply::<ExtFrame>(reply)
    }
}

impl Adapter for Zot {
    fn semantics(&self) -> Semantics {
        Semantics {
            joined_blocks: false,
            hooks_in_plan: true,
            restart_on_session_switch: false,
            warn_builtin_tool_clash: false,
            warn_tool_clash: false,
        }
    }

    fn handshake<'a>(
        &'a self,
        peer: &'a Peer,
        _link: &'a dyn Link,
        reader: &'a mut FrameReader,
    ) -> BoxFuture<'a, Result<Vec<Registration>, HandshakeError>> {
        async move {
            let value = first_frame(peer, reader, self.cx.config.limits.hello_timeout).await?;
            let hello = hello(value, &self.name)?;
            match &hello.version {
                Some(version) => peer
                    .log
                    .line(format_args!("hello from {}/{version}", hello.name)),
                None => peer.log.line(format_args!("hello from {}", hello.name)),
            }
            let facts = self.cx.facts().clone();
            peer.conn.send(&HostFrame::HelloAck(HelloAck {
                protocol_version: PROTOCOL_VERSION,
                zot_version: self.cx.config.zot_version.clone(),
                provider: facts.provider,
                model: facts.model,
                cwd: self.cx.cwd().display().to_string(),
                extension_dir: self.dir.display().to_string(),
                data_dir: self.data_dir.display().to_string(),
            }));
            Ok(Vec::new())
        }
        .boxed()
    }

    fn on_frame(&self, peer: &Peer, link: &dyn Link, line: &[u8]) {
        let frame = match ExtFrame::from_slice(line) {
            Ok(frame) => frame,
            Err(err) => return bad_frame(peer, line, &err),
        };
        match frame {
            ExtFrame::Hello(_) => peer.log.line("unexpected second hello; ignored"),
            ExtFrame::RegisterCommand(cmd) => register_command(peer, link, cmd),
            ExtFrame::RegisterTool(tool) => register_tool(peer, link, tool),
            ExtFrame::Ready => link.register(Registration::Ready),
            ExtFrame::Subscribe(sub) => subscribe(peer, link, sub),
            ExtFrame::ToolResult(ref r) => reply(peer, &r.id.clone(), frame),
            ExtFrame::CommandResponse(ref r) => reply(peer, &r.id.clone(), frame),
            ExtFrame::EventInterceptResponse(ref r) => reply(peer, &r.id.clone(), frame),
            ExtFrame::Submit(submit) => {
                if !submit.text.trim().is_empty() {
                    link.effect(Effect::Submit(submit.text));
                }
            }
            ExtFrame::PanelRender(panel) => link.effect(Effect::PanelRender(panel)),
            ExtFrame::PanelClose(close) => link.effect(Effect::PanelClose(close.panel_id)),
            ExtFrame::Notify(n) => link.effect(Effect::Notify {
                level: n.level,
                message: n.message,
            }),
            ExtFrame::ClearNotes => link.effect(Effect::ClearNotes),
            ExtFrame::ShutdownAck => peer.conn.shutdown_acknowledged(),
        }
    }

    fn command<'a>(
        &'a self,
        peer: &'a Peer,
        _link: &'a dyn Link,
        name: &'a str,
        args: &'a str,
    ) -> BoxFuture<'a, Result<CommandAnswer, RequestError>> {
        async move {
            let id = self.cx.next_id();
            let frame = HostFrame::CommandInvoked(CommandInvoked {
                id: id.clone(),
                name: name.to_owned(),
                args: args.to_owned(),
            });
            let timeout = self.cx.config.limits.command_timeout;
            let response = match self.request(peer, frame, &id, timeout).await? {
                ExtFrame::CommandResponse(r) => r,
                other => return Err(unexpected(&other)),
            };
            let text = |s: Option<String>| s.unwrap_or_default();
            let outcome = match response.action {
                CommandAction::Prompt => CommandOutcome::Prompt(text(response.prompt)),
                CommandAction::Insert => CommandOutcome::Insert(text(response.insert)),
                CommandAction::Display => CommandOutcome::Display(text(response.display)),
                CommandAction::OpenPanel => match response.open_panel {
                    Some(panel) => CommandOutcome::OpenPanel(panel),
                    None => {
                        return Err(RequestError::Malformed(
                            "action open_panel without an open_panel object".into(),
                        ));
                    }
                },
                CommandAction::Noop => CommandOutcome::Noop,
            };
            Ok((outcome, response.error.filter(|e| !e.trim().is_empty())))
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
            let frame = HostFrame::ToolCall(ToolCall {
                id: id.clone(),
                name: name.to_owned(),
                args,
            });
            let timeout = self.cx.config.limits.tool_timeout;
            let result = match self.request(peer, frame, &id, timeout).await? {
                ExtFrame::ToolResult(r) => r,
                other => return Err(unexpected(&other)),
            };
            let content = result
                .content
                .into_iter()
                .filter(|b| !matches!(b, ContentBlock::Text { text } if text.is_empty()))
                .map(|b| match b {
                    ContentBlock::Unsupported => ContentBlock::Text {
                        text: format!("[unsupported content block from extension {}]", peer.name),
                    },
                    other => other,
                })
                .collect();
            Ok(ToolAnswer {
                content,
                is_error: result.is_error,
                activate: result.activate_tools,
            })
        }
        .boxed()
    }

    fn observe<'a>(
        &'a self,
        peer: &'a Peer,
        _link: &'a dyn Link,
        hook: &'a Hook,
    ) -> BoxFuture<'a, ()> {
        if let Some(event) = event(hook) {
            peer.conn.send(&HostFrame::Event(event));
        }
        async {}.boxed()
    }

    fn intercept<'a>(
        &'a self,
        peer: &'a Peer,
        link: &'a dyn Link,
        ask: &'a Ask,
    ) -> BoxFuture<'a, Option<Verdict>> {
        async move {
            let payload = intercept(ask)?;
            let reply = self.ask(peer, link, payload).await?;
            if reply.block {
                return Some(Verdict::Block(reply.reason.unwrap_or_default()));
            }
            let rewrite = match ask {
                Ask::ToolCall { .. } => match reply.modified_args {
                    Some(new @ Value::Object(_)) => Some(Rewrite::Args(new)),
                    Some(other) => {
                        link.warn(format!(
                            "modified_args must be a JSON object, got {}; ignored",
                            json_kind(&other)
                        ));
                        None
                    }
                    None => None,
                },
                // An empty replace_text is no change (blocking is how a message is suppressed).
                Ask::AssistantMessage { .. } => reply
                    .replace_text
                    .filter(|t| !t.is_empty())
                    .map(Rewrite::Text),
                Ask::BeforeAgentStart { .. } => reply.system_prompt.map(Rewrite::SystemPrompt),
                _ => None,
            };
            Some(rewrite.map_or(Verdict::Allow, Verdict::Rewrite))
        }
        .boxed()
    }

    fn panel_input(&self, peer: &Peer, input: PanelInput) -> bool {
        let frame = match input {
            PanelInput::Key {
                panel_id,
                key,
                text,
            } => HostFrame::PanelKey(PanelKey {
                panel_id,
                key,
                text,
            }),
            PanelInput::Closed { panel_id } => HostFrame::PanelClose(PanelClose { panel_id }),
        };
        peer.conn.send(&frame);
        true
    }

    fn shutdown(&self, peer: &Peer) {
        peer.conn.expect_shutdown_ack();
        peer.conn.send(&HostFrame::Shutdown);
    }

    fn listed_as(&self, point: HookPoint, mode: Mode) -> (Mode, &'static str) {
        (mode, hook_name(point).unwrap_or(""))
    }
}

/// The zot name of a hook point, where zot has one.
fn hook_name(point: HookPoint) -> Option<&'static str> {
    Some(match point {
        HookPoint::SessionStart => "session_start",
        HookPoint::TurnStart => "turn_start",
        HookPoint::TurnEnd => "turn_end",
        HookPoint::ToolCall => "tool_call",
        HookPoint::ToolConfirmation => "tool_confirmation_requested",
        HookPoint::AssistantMessage => "assistant_message",
        HookPoint::BeforeAgentStart => "before_agent_start",
        _ => return None,
    })
}

/// The hook point a zot subscription name stands for.
fn hook_point(name: &str) -> Option<HookPoint> {
    [
        HookPoint::SessionStart,
        HookPoint::TurnStart,
        HookPoint::TurnEnd,
        HookPoint::ToolCall,
        HookPoint::ToolConfirmation,
        HookPoint::AssistantMessage,
        HookPoint::BeforeAgentStart,
    ]
    .into_iter()
    .find(|p| hook_name(*p) == Some(name))
}

/// The one-way event frame for a hook, where zot has that event.
fn event(hook: &Hook) -> Option<Event> {
    Some(match hook.clone() {
        Hook::SessionStart => Event::SessionStart,
        Hook::TurnStart { step } => Event::TurnStart { step },
        Hook::TurnEnd { stop, error } => Event::TurnEnd { stop, error },
        Hook::ToolCall {
            id,
            name,
            args,
            parent_tool_call_id,
        } => Event::ToolCall {
            tool_id: id,
            tool_name: name,
            tool_args: args,
            parent_tool_call_id,
        },
        Hook::ToolConfirmation {
            id,
            name,
            preview,
            parent_tool_call_id,
        } => Event::ToolConfirmationRequested {
            tool_id: id,
            tool_name: name,
            tool_preview: preview,
            parent_tool_call_id,
        },
        Hook::AssistantMessage { text } => Event::AssistantMessage { text },
        Hook::SessionEnd { .. }
        | Hook::PromptStart
        | Hook::PromptEnd { .. }
        | Hook::AfterCompact(_)
        | Hook::Cleared => {
            return None;
        }
    })
}

/// The intercept payload for a request, where zot intercepts that point.
fn intercept(ask: &Ask) -> Option<Intercept> {
    Some(match ask.clone() {
        Ask::TurnStart { step } => Intercept::TurnStart { step },
        Ask::ToolCall {
            id,
            name,
            args,
            parent_tool_call_id,
        } => Intercept::ToolCall {
            tool_id: id,
            tool_name: name,
            tool_args: args,
            parent_tool_call_id,
        },
        Ask::AssistantMessage { text } => Intercept::AssistantMessage { text },
        Ask::BeforeAgentStart {
            session_id,
            agent_run_id,
            cwd,
            provider,
            model,
            system_prompt,
        } => Intercept::BeforeAgentStart {
            session_id,
            agent_run_id,
            cwd,
            provider,
            model,
            system_prompt,
        },
        Ask::ToolPermission { .. }
        | Ask::ToolResult { .. }
        | Ask::BeforeCompact { .. }
        | Ask::PromptSubmit { .. }
        | Ask::Stop { .. } => return None,
    })
}

/// Checks the first frame: a `hello` naming `manifest_name`.
fn hello(value: Value, manifest_name: &str) -> Result<zot_protocol::zot::Hello, HandshakeError> {
    let kind = match value.get("type") {
        Some(Value::String(t)) => format!("\"{t}\""),
        _ => "a frame without a type".to_owned(),
    };
    match serde_json::from_value::<ExtFrame>(value) {
        Ok(ExtFrame::Hello(hello)) if hello.name == manifest_name => Ok(hello),
        Ok(ExtFrame::Hello(hello)) => Err(HandshakeError::NameMismatch {
            got: hello.name,
            want: manifest_name.to_owned(),
        }),
        Ok(_) => Err(HandshakeError::NotHello(kind)),
        Err(e) if kind == "\"hello\"" => Err(HandshakeError::BadJson(e.to_string())),
        Err(_) => Err(HandshakeError::NotHello(kind)),
    }
}

fn unexpected(frame: &ExtFrame) -> RequestError {
    RequestError::Malformed(format!("unexpected {} reply", frame.type_name()))
}

fn reply(peer: &Peer, id: &str, frame: ExtFrame) {
    let kind = frame.type_name();
    if peer.conn.resolve(id, Ok(Box::new(frame))).is_some() {
        peer.log.line(format_args!(
            "{kind} for unknown or expired id \"{id}\"; dropped"
        ));
    }
}

/// Logs a frame that did not parse; a malformed reply fails its request at once.
fn bad_frame(peer: &Peer, line: &[u8], err: &serde_json::Error) {
    let Ok(value) = serde_json::from_slice::<Value>(line) else {
        peer.log
            .line(format_args!("malformed json from extension: {err}"));
        return;
    };
    let Some(kind) = value.get("type").and_then(Value::as_str) else {
        peer.log.line("frame without a \"type\" field; skipped");
        return;
    };
    if !ExtFrame::TYPES.contains(&kind) {
        peer.log
            .line(format_args!("unknown frame type \"{kind}\"; skipped"));
        return;
    }
    peer.log
        .line(format_args!("bad {kind} frame: {err}; skipped"));
    if let Some(id) = value.get("id").and_then(Value::as_str)
        && peer.conn.is_waiting(id)
    {
        peer.conn.resolve(
            id,
            Err(RequestError::Malformed(format!("bad {kind} frame: {err}"))),
        );
    }
}

fn register_command(peer: &Peer, link: &dyn Link, cmd: RegisterCommand) {
    let name = cmd.name.trim();
    if name.is_empty() || name.contains(char::is_whitespace) || name.starts_with('/') {
        peer.log.line(format_args!(
            "command {:?} rejected: a name is one word without a leading '/'",
            cmd.name
        ));
        return;
    }
    link.register(Registration::Command(CommandInfo {
        name: name.to_owned(),
        description: cmd.description,
        extension: peer.name.clone(),
        argument_hint: None,
        origin: CommandOrigin::Extension,
    }));
}

fn register_tool(peer: &Peer, link: &dyn Link, tool: RegisterTool) {
    if !check_tool_name(link, &tool.name) {
        return;
    }
    // The host checks the schema (a non-object one is refused there, with
    // a warning the user sees).
    link.register(Registration::Tool(ToolInfo {
        name: tool.name,
        description: tool.description,
        schema: tool.schema,
        deferred: tool.deferred,
        extension: peer.name.clone(),
        read_only: tool.read_only,
    }));
}

fn subscribe(peer: &Peer, link: &dyn Link, sub: Subscribe) {
    for event in sub.events {
        let point = hook_point(&event).filter(|_| Event::NAMES.contains(&event.as_str()));
        match point {
            Some(point) => link.register(Registration::Subscribe(point, Mode::Observe)),
            None => peer
                .log
                .line(format_args!("subscribe: unknown event \"{event}\" ignored")),
        }
    }
    for event in sub.intercept {
        let point = hook_point(&event).filter(|_| Intercept::NAMES.contains(&event.as_str()));
        match point {
            Some(point) => link.register(Registration::Subscribe(point, Mode::Intercept)),
            None => peer.log.line(format_args!(
                "subscribe: \"{event}\" cannot be intercepted; ignored"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::adapter::testing::{Harness, reader};

    fn adapter(h: &Harness) -> Zot {
        Zot::new(
            Arc::clone(&h.cx),
            "guard".into(),
            "/ext/guard".into(),
            "/data/guard".into(),
        )
    }

    #[test]
    fn every_zot_name_maps_to_one_hook_point_and_back() {
        for name in Event::NAMES.iter().chain(Intercept::NAMES) {
            let point = hook_point(name).unwrap();
            assert_eq!(hook_name(point), Some(*name));
        }
    }

    #[tokio::test]
    async fn the_handshake_checks_hello_and_answers_hello_ack() {
        let h = Harness::new("guard");
        let zot = adapter(&h);
        let mut lines = reader(&[json!({"type":"hello","name":"guard","version":"1.0"})]);
        assert_eq!(
            zot.handshake(&h.peer, &h.link, &mut lines).await,
            Ok(Vec::new())
        );
        let ack = h.sent().await;
        assert_eq!(ack["type"], "hello_ack");
        assert_eq!(ack["extension_dir"], "/ext/guard");
        assert_eq!(ack["data_dir"], "/data/guard");
        assert_eq!(
            (ack["provider"].as_str(), ack["model"].as_str()),
            (Some("anthropic"), Some("m"))
        );

        let mut lines = reader(&[json!({"type":"hello","name":"other"})]);
        assert!(matches!(
            zot.handshake(&h.peer, &h.link, &mut lines).await,
            Err(HandshakeError::NameMismatch { .. })
        ));
        let mut lines = reader(&[json!({"type":"ready"})]);
        assert_eq!(
            zot.handshake(&h.peer, &h.link, &mut lines).await,
            Err(HandshakeError::NotHello("\"ready\"".into()))
        );
    }

    #[test]
    fn registrations_map_onto_the_model() {
        let h = Harness::new("guard");
        let zot = adapter(&h);
        for frame in [
            json!({"type":"register_tool","name":"peek","schema":{"type":"object"},"read_only":true}),
            json!({"type":"register_tool","name":"poke","schema":{"type":"object"}}),
            json!({"type":"register_tool","name":"bad","schema":[]}),
            json!({"type":"register_command","name":"greet","description":"hi"}),
            json!({"type":"subscribe","events":["turn_start","nope"],"intercept":["tool_call","turn_end"]}),
            json!({"type":"ready"}),
        ] {
            zot.on_frame(&h.peer, &h.link, frame.to_string().as_bytes());
        }
        let regs = h.link.registrations.lock().unwrap().clone();
        let tool = |name: &str, schema, read_only| {
            Registration::Tool(ToolInfo {
                name: name.into(),
                description: None,
                schema,
                deferred: false,
                extension: "guard".into(),
                read_only,
            })
        };
        assert_eq!(
            regs,
            [
                tool("peek", json!({"type":"object"}), true),
                tool("poke", json!({"type":"object"}), false),
                // The host checks schemas (and refuses this one, with a warning).
                tool("bad", json!([]), false),
                Registration::Command(CommandInfo {
                    name: "greet".into(),
                    description: Some("hi".into()),
                    extension: "guard".into(),
                    argument_hint: None,
                    origin: CommandOrigin::Extension,
                }),
                Registration::Subscribe(HookPoint::TurnStart, Mode::Observe),
                Registration::Subscribe(HookPoint::ToolCall, Mode::Intercept),
                Registration::Ready,
            ],
            "an unknown event and a turn_end intercept are refused"
        );
    }

    #[test]
    fn tool_names_the_providers_would_reject_are_refused_with_a_warning() {
        let h = Harness::new("guard");
        let zot = adapter(&h);
        let long = "t".repeat(200);
        for name in ["bad name!", "ü", "", long.as_str(), "ok_name-2"] {
            let frame = json!({"type":"register_tool","name":name,"schema":{"type":"object"}});
            zot.on_frame(&h.peer, &h.link, frame.to_string().as_bytes());
        }
        let regs = h.link.registrations.lock().unwrap().clone();
        assert!(
            matches!(&regs[..], [Registration::Tool(t)] if t.name == "ok_name-2"),
            "{regs:?}"
        );
        let warnings = h.link.warnings.lock().unwrap().clone();
        assert_eq!(warnings.len(), 4, "{warnings:?}");
        assert!(
            warnings[0].starts_with("tool \"bad name!\" rejected: a tool name must be 1 to 64"),
            "{warnings:?}"
        );
        assert!(
            warnings[3].contains('…') && warnings[3].len() < 200,
            "{warnings:?}"
        );
    }

    #[tokio::test]
    async fn hooks_become_one_way_events_where_zot_has_them() {
        let h = Harness::new("guard");
        let zot = adapter(&h);
        zot.observe(&h.peer, &h.link, &Hook::TurnStart { step: 2 })
            .await;
        assert_eq!(
            h.sent().await,
            json!({"type":"event","event":"turn_start","step":2})
        );
        zot.observe(&h.peer, &h.link, &Hook::PromptStart).await;
        zot.observe(
            &h.peer,
            &h.link,
            &Hook::SessionEnd {
                reason: "other".into(),
            },
        )
        .await;
        assert!(
            h.nothing_sent().await,
            "zot has no prompt or session-end events"
        );
    }

    /// Asks `ask`, answering the intercept request with `reply` (its id filled in).
    async fn verdict(h: &Harness, ask: Ask, reply: Value) -> (Value, Option<Verdict>) {
        let zot = adapter(h);
        let answer = async {
            let request = h.sent().await;
            let mut reply = reply;
            reply["id"] = request["id"].clone();
            zot.on_frame(&h.peer, &h.link, reply.to_string().as_bytes());
            request
        };
        let (request, verdict) = tokio::join!(answer, zot.intercept(&h.peer, &h.link, &ask));
        (request, verdict)
    }

    #[tokio::test]
    async fn intercepts_encode_the_ask_and_decode_the_verdict() {
        let h = Harness::new("guard");
        let ask = Ask::ToolCall {
            id: "t1".into(),
            name: "bash".into(),
            args: json!({"command":"rm -rf /"}),
            parent_tool_call_id: None,
        };
        let response = json!({"type":"event_intercept_response","block":true,"reason":"no"});
        let (request, got) = verdict(&h, ask.clone(), response).await;
        assert_eq!(request["event"], "tool_call");
        assert_eq!(request["tool_args"], json!({"command":"rm -rf /"}));
        assert_eq!(got, Some(Verdict::Block("no".into())));

        let response = json!({"type":"event_intercept_response","modified_args":{"command":"ls"}});
        let (_, got) = verdict(&h, ask.clone(), response).await;
        assert_eq!(
            got,
            Some(Verdict::Rewrite(Rewrite::Args(json!({"command":"ls"}))))
        );

        let response = json!({"type":"event_intercept_response","modified_args":"ls"});
        let (_, got) = verdict(&h, ask, response).await;
        assert_eq!(got, Some(Verdict::Allow));
        assert!(h.link.warnings.lock().unwrap()[0].contains("must be a JSON object"));

        let ask = Ask::AssistantMessage { text: "hi".into() };
        let response = json!({"type":"event_intercept_response","replace_text":"HI"});
        let (_, got) = verdict(&h, ask, response).await;
        assert_eq!(got, Some(Verdict::Rewrite(Rewrite::Text("HI".into()))));

        let ask = Ask::BeforeAgentStart {
            session_id: "s".into(),
            agent_run_id: "r".into(),
            cwd: "/".into(),
            provider: "p".into(),
            model: "m".into(),
            system_prompt: "base".into(),
        };
        let response = json!({"type":"event_intercept_response","system_prompt":""});
        let (_, got) = verdict(&h, ask, response).await;
        assert_eq!(
            got,
            Some(Verdict::Rewrite(Rewrite::SystemPrompt(String::new())))
        );

        let ask = Ask::ToolResult {
            id: "t1".into(),
            name: "bash".into(),
            args: json!({}),
            output: String::new(),
            is_error: false,
            parent_tool_call_id: None,
        };
        assert_eq!(adapter(&h).intercept(&h.peer, &h.link, &ask).await, None);
    }
}
