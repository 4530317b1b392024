//! Protocol adapters: each maps one extension protocol onto the neutral
//! model (`model.rs`). An adapter owns its handshake, encodes the host's
//! requests into its frames, decodes replies into verdicts and effects, and
//! declares its [`Semantics`]. It talks over a [`Peer`], whatever transport
//! carries the frames. `select::for_manifest` is the one place that picks an
//! adapter; nothing else in the host knows which protocol an extension speaks.
//! Public for the ecosystems outside this crate (`crate::ecosystem`), whose
//! adapters implement [`Adapter`] too.

pub(crate) mod nimlet;
pub(crate) mod select;
pub(crate) mod zot;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::Value;
use zot_protocol::ui::CommandOutcome;
use zot_protocol::zot::{ContentBlock, Key};

use crate::manifest::Remote;
use crate::model::{Ask, Effect, Hook, HookPoint, Mode, Registration, Semantics, Verdict};
use crate::transport::{FrameReader, Peer, ReadError, RequestError};

/// How the host hears from an adapter about one extension: registrations,
/// UI effects, and warnings for the user (also written to the extension's log).
pub trait Link: Send + Sync {
    fn register(&self, registration: Registration);
    fn effect(&self, effect: Effect);
    fn warn(&self, message: String);
    /// Whether an intercept this extension cannot answer blocks
    /// (`on_failure: block`) rather than allows; for the warning's wording.
    fn fails_closed(&self) -> bool {
        false
    }
}

/// A command's answer: what to do, and an error line to show whatever the outcome.
pub type CommandAnswer = (CommandOutcome, Option<String>);

/// A tool's answer in neutral terms.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolAnswer {
    /// Text and image blocks (unknown block types arrive as a text note).
    pub content: Vec<ContentBlock>,
    pub is_error: bool,
    /// Deferred tools the result asks to make visible.
    pub activate: Vec<String>,
}

/// Input for an open panel.
#[derive(Debug, Clone, PartialEq)]
pub enum PanelInput {
    Key {
        panel_id: String,
        key: Key,
        text: Option<String>,
    },
    Closed {
        panel_id: String,
    },
}

/// One protocol, as the host drives it. One instance per extension.
pub trait Adapter: Send + Sync {
    fn semantics(&self) -> Semantics;

    /// Reads (and answers) the opening of the conversation; returns what
    /// the extension registered in it (`link` takes warnings meanwhile).
    /// The host then reads every later frame.
    fn handshake<'a>(
        &'a self,
        peer: &'a Peer,
        link: &'a dyn Link,
        reader: &'a mut FrameReader,
    ) -> BoxFuture<'a, Result<Vec<Registration>, HandshakeError>>;

    /// Handles one frame after the handshake.
    fn on_frame(&self, peer: &Peer, link: &dyn Link, line: &[u8]);

    fn command<'a>(
        &'a self,
        peer: &'a Peer,
        link: &'a dyn Link,
        name: &'a str,
        args: &'a str,
    ) -> BoxFuture<'a, Result<CommandAnswer, RequestError>>;

    /// Runs a tool. `progress` takes progress text, for protocols that report it.
    fn call_tool<'a>(
        &'a self,
        peer: &'a Peer,
        name: &'a str,
        args: Value,
        progress: Option<ProgressSink>,
    ) -> BoxFuture<'a, Result<ToolAnswer, RequestError>>;

    /// Tells a subscriber what happened; returns once the protocol has
    /// delivered it (for request-style protocols, once answered).
    fn observe<'a>(
        &'a self,
        peer: &'a Peer,
        link: &'a dyn Link,
        hook: &'a Hook,
    ) -> BoxFuture<'a, ()>;

    /// Asks an interceptor. `None` when it could not answer (timeout,
    /// crash, malformed reply): the adapter has warned, and the chain goes
    /// on as if it allowed, or blocks when the manifest says `on_failure: block`.
    fn intercept<'a>(
        &'a self,
        peer: &'a Peer,
        link: &'a dyn Link,
        ask: &'a Ask,
    ) -> BoxFuture<'a, Option<Verdict>>;

    /// Delivers panel input; `false` when the protocol has no panels.
    fn panel_input(&self, _peer: &Peer, _input: PanelInput) -> bool {
        false
    }

    /// Sends the protocol's shutdown request (the host then closes the
    /// connection and waits).
    fn shutdown(&self, peer: &Peer);

    /// The extension joined the live set: `host` reaches it later, for
    /// protocols whose peer speaks on its own after the handshake (a
    /// server's notice that its lists changed, or its requests to the client).
    fn attach(&self, _host: Box<dyn Attachment>) {}

    /// The connection ended (a crash, or a stop): drop what depends on it.
    fn disconnected(&self) {}

    /// The protocol version the handshake settled on, for protocols that negotiate one.
    fn protocol_version(&self) -> Option<String> {
        None
    }

    /// What the extension offers besides tools and commands, for reports
    /// (a server's resource URIs, as listed at start).
    fn resources(&self) -> Vec<String> {
        Vec::new()
    }

    /// How a subscription is listed in reports: under events (`Observe`)
    /// or intercepts, by the protocol's own name for it.
    fn listed_as(&self, point: HookPoint, mode: Mode) -> (Mode, &'static str);
}

/// Where a running tool's progress text goes (for protocols that report progress).
pub type ProgressSink = Arc<dyn Fn(&str) + Send + Sync>;

/// How an adapter reaches the host after its handshake, on its own
/// initiative (not while answering a call). The host's handle is weak: it
/// keeps neither the host nor the extension alive.
pub trait Attachment: Send + Sync {
    /// Runs `f` with a link to the host, while both the host and this
    /// extension (still live) exist; whether it ran.
    fn with_link(&self, f: &mut dyn FnMut(&dyn Link)) -> bool;
}

impl dyn Attachment {
    /// [`with_link`](Attachment::with_link) for a closure with a result:
    /// `None` when the host or the extension is gone.
    pub fn with<R>(&self, f: impl FnOnce(&dyn Link) -> R) -> Option<R> {
        let mut f = Some(f);
        let mut out = None;
        self.with_link(&mut |link| {
            if let Some(f) = f.take() {
                out = Some(f(link));
            }
        });
        out
    }
}

/// How to reach an extension: a process to start, a remote connection
/// its adapter opens itself (an ecosystem's server over HTTP), or a zot or nimlet
/// extension served over WebSocket or HTTP that the host connects to.
pub enum LaunchSpec {
    Process(ProcessSpec),
    Remote(crate::transport::remote::RemoteSession),
    Connect(Remote),
}

/// How to start an extension's process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessSpec {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// Added to the environment the process inherits.
    pub env: Vec<(String, String)>,
}

/// Why an extension's opening was not acceptable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    #[error("exited before hello")]
    ExitedBeforeHello,
    #[error("no hello within {0:?}")]
    Timeout(Duration),
    #[error("first frame exceeds the frame size limit")]
    FrameTooLong,
    #[error("reading the first frame failed: {0}")]
    Io(String),
    #[error("no answer to initialize within {0:?} (startup_timeout_sec)")]
    NoInitialize(Duration),
    /// The adapter's own session could not be opened (its own message).
    #[error("{0}")]
    Session(String),
    /// A remote server answered 401: the user must sign in first (the
    /// message says how), which no retry can do.
    #[error("{0}")]
    LoginNeeded(String),
    #[error("first frame is not valid JSON: {0}")]
    BadJson(String),
    #[error("first frame must be hello (got {0})")]
    NotHello(String),
    #[error("hello name \"{got}\" does not match the manifest name \"{want}\"")]
    NameMismatch { got: String, want: String },
    /// The first frame broke the protocol's registration rules (its own message).
    #[error("{0}")]
    BadRegister(String),
}

/// The first frame within `timeout`, parsed as JSON.
pub async fn first_frame(
    peer: &Peer,
    reader: &mut FrameReader,
    timeout: Duration,
) -> Result<Value, HandshakeError> {
    let line = match tokio::time::timeout(timeout, reader.next()).await {
        Err(_) => return Err(HandshakeError::Timeout(timeout)),
        Ok(None) => return Err(HandshakeError::ExitedBeforeHello),
        Ok(Some(Err(ReadError::TooLong))) => return Err(HandshakeError::FrameTooLong),
        Ok(Some(Err(ReadError::Io(e)))) => return Err(HandshakeError::Io(e.to_string())),
        Ok(Some(Ok(line))) => line,
    };
    tracing::debug!(extension = %peer.name, frame = %crate::transport::preview(&line), "frame in");
    serde_json::from_slice(&line).map_err(|e| HandshakeError::BadJson(e.to_string()))
}

/// The longest tool name, the one the model providers accept.
pub const MAX_TOOL_NAME: usize = 64;

/// Whether `name` is a tool name every model provider accepts
/// (`^[a-zA-Z0-9_-]{1,64}$`); one they reject would fail every request.
pub fn valid_tool_name(name: &str) -> bool {
    (1..=MAX_TOOL_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Refuses a tool whose name the model providers would reject, with a
/// warning the user sees; returns whether the name is acceptable.
pub fn check_tool_name(link: &dyn Link, name: &str) -> bool {
    let ok = valid_tool_name(name);
    if !ok {
        let shown: String = name.chars().take(MAX_TOOL_NAME + 16).collect();
        let cut = if shown.len() < name.len() { "…" } else { "" };
        link.warn(format!(
            "tool {:?}{cut} rejected: a tool name must be 1 to {MAX_TOOL_NAME} letters, digits, '_' or '-' (what model providers accept)",
            shown
        ));
    }
    ok
}

/// A reply the adapter itself parsed, back from the connection's table.
pub fn own_reply<T: 'static>(reply: crate::transport::Reply) -> Result<T, RequestError> {
    reply
        .downcast::<T>()
        .map(|frame| *frame)
        .map_err(|_| RequestError::Malformed("reply of another protocol".into()))
}

pub(crate) use zot_protocol::json_kind;

/// What adapter unit tests share: a peer whose frames land in an outbox the
/// test reads, and a link that records what the adapter reported.
#[cfg(test)]
pub mod testing {
    use std::sync::{Arc, Mutex};

    use serde_json::Value;

    use super::Link;
    use crate::config::HostConfig;
    use crate::context::HostContext;
    use crate::ext_log::ExtLog;
    use crate::model::{Effect, Registration};
    use crate::transport::{Connection, FrameReader, Outbox, Outgoing, Peer};

    pub struct Harness {
        pub cx: Arc<HostContext>,
        pub peer: Peer,
        pub outbox: tokio::sync::Mutex<Outbox>,
        pub link: Recorder,
        _dir: tempfile::TempDir,
    }

    impl Harness {
        pub fn new(name: &str) -> Self {
            let dir = tempfile::tempdir().unwrap();
            let mut config = HostConfig::new(dir.path().join("home"), dir.path());
            config.session_id = "s-1".into();
            config.provider = "anthropic".into();
            config.model = "m".into();
            let log = ExtLog::open(
                &dir.path().join("ext.log"),
                name,
                None,
                crate::limits::MAX_LOG_BYTES,
            )
            .unwrap();
            let (conn, outbox) = Connection::new();
            Self {
                cx: Arc::new(HostContext::new(config)),
                peer: Peer {
                    name: name.into(),
                    log: Arc::new(log),
                    conn,
                },
                outbox: tokio::sync::Mutex::new(outbox),
                link: Recorder::default(),
                _dir: dir,
            }
        }

        /// The next frame the adapter sent, as JSON.
        pub async fn sent(&self) -> Value {
            let mut outbox = self.outbox.lock().await;
            match outbox.queue.recv().await {
                Some(Outgoing::Frame { line, written }) => {
                    if let Some(written) = written {
                        let _ = written.send(());
                    }
                    serde_json::from_slice(&line).unwrap()
                }
                _ => panic!("the connection closed"),
            }
        }

        /// Nothing more was sent.
        pub async fn nothing_sent(&self) -> bool {
            self.outbox.lock().await.queue.try_recv().is_err()
        }
    }

    /// A reader that yields these lines, then the end of the stream.
    pub fn reader(lines: &[Value]) -> FrameReader {
        let mut text = String::new();
        for line in lines {
            text.push_str(&line.to_string());
            text.push('\n');
        }
        FrameReader::new(std::io::Cursor::new(text.into_bytes()), 1 << 20)
    }

    #[derive(Default)]
    pub struct Recorder {
        pub registrations: Mutex<Vec<Registration>>,
        pub effects: Mutex<Vec<Effect>>,
        pub warnings: Mutex<Vec<String>>,
    }

    impl Link for Recorder {
        fn register(&self, registration: Registration) {
            self.registrations.lock().unwrap().push(registration);
        }
        fn effect(&self, effect: Effect) {
            self.effects.lock().unwrap().push(effect);
        }
        fn warn(&self, message: String) {
            self.warnings.lock().unwrap().push(message);
        }
    }
}
