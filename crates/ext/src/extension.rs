//! The builder: [`Extension`] collects commands, tools, event handlers,
//! interceptors, panels and `on_hello` hooks. It only collects: `run`
//! (in `runtime.rs`, which builds on this module) announces them and
//! dispatches to them.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use zot_protocol::zot::{Event, PanelKey};

use crate::host::{Host, HostInfo};
use crate::intercept::{
    BeforeAgentStart, MessageDecision, PendingToolCall, ToolCallDecision, TurnDecision,
};
use crate::response::Response;
use crate::tool::{ToolResult, args_schema};

pub(crate) type CommandFn = dyn Fn(&str, &Host) -> Response + Send + Sync;
pub(crate) type ToolFn = dyn Fn(Value, &Host) -> ToolResult + Send + Sync;
pub(crate) type EventFn = dyn FnMut(&Event, &Host) + Send;
pub(crate) type PanelKeyFn = dyn FnMut(&PanelKey, &Host) + Send;
pub(crate) type PanelCloseFn = dyn FnMut(&Host) + Send;
pub(crate) type BeforeAgentStartFn =
    dyn Fn(&BeforeAgentStart, &Host) -> Option<String> + Send + Sync;
pub(crate) type ToolCallFn = dyn Fn(&PendingToolCall, &Host) -> ToolCallDecision + Send + Sync;
pub(crate) type TurnStartFn = dyn Fn(u32, &Host) -> TurnDecision + Send + Sync;
pub(crate) type AssistantMessageFn = dyn Fn(&str, &Host) -> MessageDecision + Send + Sync;
type HelloHook = Box<dyn FnOnce(Extension, &HostInfo) -> Extension>;

pub(crate) struct Command {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) handler: Arc<CommandFn>,
}

pub(crate) struct Tool {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) schema: Value,
    pub(crate) deferred: bool,
    pub(crate) read_only: bool,
    pub(crate) handler: Arc<ToolFn>,
}

#[derive(Default, Clone)]
pub(crate) struct Interceptors {
    pub(crate) before_agent_start: Option<Arc<BeforeAgentStartFn>>,
    pub(crate) tool_call: Option<Arc<ToolCallFn>>,
    pub(crate) turn_start: Option<Arc<TurnStartFn>>,
    pub(crate) assistant_message: Option<Arc<AssistantMessageFn>>,
}

impl Interceptors {
    /// The `intercept` list of `subscribe`: only kinds with a handler.
    pub(crate) fn kinds(&self) -> Vec<String> {
        [
            ("tool_call", self.tool_call.is_some()),
            ("turn_start", self.turn_start.is_some()),
            ("assistant_message", self.assistant_message.is_some()),
            ("before_agent_start", self.before_agent_start.is_some()),
        ]
        .into_iter()
        .filter(|(_, set)| *set)
        .map(|(kind, _)| kind.to_owned())
        .collect()
    }
}

pub(crate) struct PanelHandlers {
    pub(crate) on_key: Box<PanelKeyFn>,
    pub(crate) on_close: Box<PanelCloseFn>,
}

/// A zot extension under construction. Register what it offers, then
/// [`run`](Extension::run) it:
///
/// ```no_run
/// use zot_ext::{Extension, Response};
///
/// fn main() -> Result<(), zot_ext::Error> {
///     Extension::new("hello", "1.0.0")
///         .command("hello", "say hi", |_args, _host| {
///             Response::prompt("Greet me in one short sentence.")
///         })
///         .run()
/// }
/// ```
///
/// Commands, tools and interceptors run concurrently, each on its own
/// thread; event and panel handlers run one at a time, in arrival order.
pub struct Extension {
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) host: Host,
    pub(crate) commands: Vec<Command>,
    pub(crate) tools: Vec<Tool>,
    pub(crate) events: Vec<(String, Box<EventFn>)>,
    pub(crate) intercepts: Interceptors,
    pub(crate) panels: Vec<(String, PanelHandlers)>,
    pub(crate) hello_hooks: Vec<HelloHook>,
}

impl Extension {
    /// `name` must match the `name` in the extension's `extension.json`.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        let name = name.into();
        Self {
            host: Host::new(name.clone()),
            name,
            version: version.into(),
            commands: Vec::new(),
            tools: Vec::new(),
            events: Vec::new(),
            intercepts: Interceptors::default(),
            panels: Vec::new(),
            hello_hooks: Vec::new(),
        }
    }

    /// A handle on zot to move into closures or threads before `run`; it
    /// starts working once `run` has sent `hello`.
    pub fn host(&self) -> Host {
        self.host.clone()
    }

    /// A slash command: `/name args`. The handler gets everything typed
    /// after the name, trimmed.
    pub fn command<F>(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        handler: F,
    ) -> Self
    where
        F: Fn(&str, &Host) -> Response + Send + Sync + 'static,
    {
        self.commands.push(Command {
            name: name.into(),
            description: description.into(),
            handler: Arc::new(handler),
        });
        self
    }

    /// A tool the model can call, its arguments typed: the schema the model
    /// sees is derived from `A`, and arguments that do not deserialize into
    /// `A` are answered with an error result without calling the handler.
    pub fn tool<A>(
        self,
        name: impl Into<String>,
        description: impl Into<String>,
        handler: impl Fn(A, &Host) -> ToolResult + Send + Sync + 'static,
    ) -> Self
    where
        A: DeserializeOwned + JsonSchema,
    {
        self.typed_tool(name.into(), description.into(), false, handler)
    }

    /// Like [`tool`](Extension::tool), but registered without being
    /// advertised: it reaches the model once a result names it in
    /// [`ToolResult::activate_tools`].
    pub fn deferred_tool<A>(
        self,
        name: impl Into<String>,
        description: impl Into<String>,
        handler: impl Fn(A, &Host) -> ToolResult + Send + Sync + 'static,
    ) -> Self
    where
        A: DeserializeOwned + JsonSchema,
    {
        self.typed_tool(name.into(), description.into(), true, handler)
    }

    /// A tool with a hand-written JSON Schema; the handler gets the raw arguments.
    pub fn raw_tool<F>(
        self,
        name: impl Into<String>,
        description: impl Into<String>,
        schema: Value,
        handler: F,
    ) -> Self
    where
        F: Fn(Value, &Host) -> ToolResult + Send + Sync + 'static,
    {
        self.add_tool(
            name.into(),
            description.into(),
            schema,
            false,
            Arc::new(handler),
        )
    }

    /// Marks the tool added last as read-only (it has no side effects), so
    /// zot offers it in plan mode too.
    pub fn read_only(mut self) -> Self {
        if let Some(tool) = self.tools.last_mut() {
            tool.read_only = true;
        }
        self
    }

    /// A deferred [`raw_tool`](Extension::raw_tool).
    pub fn deferred_raw_tool<F>(
        self,
        name: impl Into<String>,
        description: impl Into<String>,
        schema: Value,
        handler: F,
    ) -> Self
    where
        F: Fn(Value, &Host) -> ToolResult + Send + Sync + 'static,
    {
        self.add_tool(
            name.into(),
            description.into(),
            schema,
            true,
            Arc::new(handler),
        )
    }

    /// Observes a lifecycle event (`session_start`, `turn_start`, `turn_end`,
    /// `tool_call`, `tool_confirmation_requested`, `assistant_message`).
    /// Handlers of all events run one at a time, in the order zot sent them.
    /// Only events with a handler are subscribed.
    pub fn on<F>(mut self, event: impl Into<String>, handler: F) -> Self
    where
        F: FnMut(&Event, &Host) + Send + 'static,
    {
        self.events.push((event.into(), Box::new(handler)));
        self
    }

    /// Replaces the complete system prompt before the first model call:
    /// `Some(text)` is the exact new prompt (`""` removes it), `None` keeps it.
    pub fn intercept_before_agent_start<F>(mut self, handler: F) -> Self
    where
        F: Fn(&BeforeAgentStart, &Host) -> Option<String> + Send + Sync + 'static,
    {
        self.intercepts.before_agent_start = Some(Arc::new(handler));
        self
    }

    /// Allows, blocks or rewrites every tool call before it runs.
    pub fn intercept_tool_call<F>(mut self, handler: F) -> Self
    where
        F: Fn(&PendingToolCall, &Host) -> ToolCallDecision + Send + Sync + 'static,
    {
        self.intercepts.tool_call = Some(Arc::new(handler));
        self
    }

    /// Allows or blocks each turn (by its 1-based step) before the model is called.
    pub fn intercept_turn_start<F>(mut self, handler: F) -> Self
    where
        F: Fn(u32, &Host) -> TurnDecision + Send + Sync + 'static,
    {
        self.intercepts.turn_start = Some(Arc::new(handler));
        self
    }

    /// Allows, suppresses or rewrites the assistant's text before the user sees it.
    pub fn intercept_assistant_message<F>(mut self, handler: F) -> Self
    where
        F: Fn(&str, &Host) -> MessageDecision + Send + Sync + 'static,
    {
        self.intercepts.assistant_message = Some(Arc::new(handler));
        self
    }

    /// Handles input to the panel `panel_id` (opened with
    /// [`Response::open_panel`]): keys while it is focused, and the user
    /// closing it. Both run in order with the event handlers.
    pub fn panel<K, C>(mut self, panel_id: impl Into<String>, on_key: K, on_close: C) -> Self
    where
        K: FnMut(&PanelKey, &Host) + Send + 'static,
        C: FnMut(&Host) + Send + 'static,
    {
        let handlers = PanelHandlers {
            on_key: Box::new(on_key),
            on_close: Box::new(on_close),
        };
        self.panels.push((panel_id.into(), handlers));
        self
    }

    /// Runs `hook` once `hello_ack` has arrived, before anything is
    /// registered: what it registers is announced before `ready`, so
    /// registrations can depend on the provider, model or project directory.
    pub fn on_hello<F>(mut self, hook: F) -> Self
    where
        F: FnOnce(Extension, &HostInfo) -> Extension + 'static,
    {
        self.hello_hooks.push(Box::new(hook));
        self
    }

    fn typed_tool<A, F>(self, name: String, description: String, deferred: bool, handler: F) -> Self
    where
        A: DeserializeOwned + JsonSchema,
        F: Fn(A, &Host) -> ToolResult + Send + Sync + 'static,
    {
        let schema = args_schema::<A>();
        let tool = name.clone();
        let raw = move |args: Value, host: &Host| match serde_json::from_value::<A>(args) {
            Ok(args) => handler(args, host),
            Err(e) => ToolResult::error(format!("invalid arguments for tool \"{tool}\": {e}")),
        };
        self.add_tool(name, description, schema, deferred, Arc::new(raw))
    }

    fn add_tool(
        mut self,
        name: String,
        description: String,
        schema: Value,
        deferred: bool,
        handler: Arc<ToolFn>,
    ) -> Self {
        self.tools.push(Tool {
            name,
            description,
            schema,
            deferred,
            read_only: false,
            handler,
        });
        self
    }
}

impl std::fmt::Debug for Extension {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = |items: Vec<&str>| items.join(", ");
        f.debug_struct("Extension")
            .field("name", &self.name)
            .field("version", &self.version)
            .field(
                "commands",
                &names(self.commands.iter().map(|c| c.name.as_str()).collect()),
            )
            .field(
                "tools",
                &names(self.tools.iter().map(|t| t.name.as_str()).collect()),
            )
            .field(
                "events",
                &names(self.events.iter().map(|(e, _)| e.as_str()).collect()),
            )
            .field("intercepts", &self.intercepts.kinds())
            .field(
                "panels",
                &names(self.panels.iter().map(|(p, _)| p.as_str()).collect()),
            )
            .finish_non_exhaustive()
    }
}
