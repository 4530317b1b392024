//! The agent runs in its own task so the screen stays live: the app sends
//! work, the worker streams events back. Abort cancels the current work.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use zot_core::agent::{Agent, AgentError, Confirm, Refusal};
use zot_core::event::AgentEvent;
use zot_core::message::{Block, Message};
use zot_core::provider::{Provider, ProviderConfig, ProviderError};
use zot_core::session::{OutlineRow, Session, index, outline};
use zot_protocol::sessions::SessionSummary;

use crate::step::PromptAction;
use zot_core::tool::BoxFuture;

/// Work for the agent.
#[derive(Debug)]
pub enum Work {
    /// A prompt's text and the images attached to it.
    Prompt {
        text: String,
        images: Vec<Block>,
    },
    /// `!command`: runs it under the bash tool's rules; the command and its
    /// output go with the next prompt.
    Shell {
        id: String,
        command: String,
    },
    /// `/btw QUESTION`: answered apart; the conversation stays as it is.
    SideQuestion(String),
    Compact,
    Clear,
    /// `/model` and the model picker: goes on with `model`, at `provider`
    /// when the switch chose another provider.
    SetModel {
        provider: Option<ProviderConfig>,
        model: String,
    },
    /// Runs the prompt whose turn failed again (on the model chosen since),
    /// taking the failed one back first so it is not sent twice.
    Retry,
    /// Extensions were reloaded: prepare the system prompt again.
    ResetPrompt,
    /// Plan mode on (`/plan`) or off (`/act`).
    SetPlan(bool),
    /// The bash tool's sandbox (`/sandbox`).
    SetSandbox(zot_core::tools::BashSandbox),
    OpenSession(PathBuf),
    /// `/tree`, `/fork`, `/jump`: the session's prompts, for a picker.
    Tree(PromptAction),
    /// A prompt picked in `/tree` (go on from its answer) or `/fork` (a new
    /// branch before it).
    Branch(PromptAction, String),
    /// `/export`: writes the session's current branch in that format into
    /// the directory.
    Export(zot_export::Format, PathBuf),
    /// `/name`: names the session (empty: says its title).
    SetTitle(String),
    /// `/undo` (no prompt: the last) and `/rewind`: plans going back to
    /// before a prompt, for the user to confirm.
    PlanRewind(Option<String>),
    /// Goes back to before the prompt: its files, conversation or both
    /// (the user saw and confirmed what changes).
    Rewind {
        entry_id: String,
        code: bool,
        conversation: bool,
    },
    /// Deletes a session (never the running one) and its outputs under
    /// `zot_home`, then asks for the picker again (`all`: every directory's).
    DeleteSession {
        summary: Box<SessionSummary>,
        all: bool,
        zot_home: PathBuf,
    },
}

/// What the worker reports.
#[derive(Debug)]
pub enum WorkerEvent {
    Agent(AgentEvent),
    /// A piece of work finished; the agent is idle unless more is queued.
    Idle,
    Status(String),
    Error(String),
    /// The conversation was replaced (session opened, compacted, cleared).
    Transcript(Vec<Message>),
    Confirm(ConfirmRequest),
    /// The prompts of the session as an outline, for a prompt picker.
    Tree(PromptAction, Vec<OutlineRow>),
    /// Text for the editor (a forked prompt's, to edit and send again).
    EditorText(String),
    /// The answer to a `/btw` question.
    SideAnswer {
        question: String,
        answer: String,
    },
    /// The session picker is to open again: every directory's (`true`) or this one's.
    Sessions(bool),
    /// A planned rewind, for the user to confirm.
    RewindOffer(Box<crate::rewind::RewindOffer>),
    /// The turn failed in a way another model may not (401, 403, 429, 5xx):
    /// it can run again elsewhere (`Work::Retry`).
    Retryable,
}

/// A tool call waiting for the user (`--no-yolo`).
#[derive(Debug)]
pub struct ConfirmRequest {
    pub id: String,
    pub name: String,
    pub preview: String,
    pub reply: oneshot::Sender<Decision>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Yes,
    AlwaysThisTool,
    Always,
    No,
}

/// Who is asked before tools run; `/yolo` turns asking off.
#[derive(Debug, Default)]
pub struct ConfirmState {
    pub ask: bool,
    pub always_all: bool,
    pub always: HashSet<String>,
}

struct TuiConfirm {
    state: Arc<Mutex<ConfirmState>>,
    events: mpsc::UnboundedSender<WorkerEvent>,
}

impl Confirm for TuiConfirm {
    fn needed(&self, name: &str, _network: bool) -> bool {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.ask && !state.always_all && !state.always.contains(name)
    }

    fn confirm<'a>(
        &'a self,
        id: &'a str,
        name: &'a str,
        preview: &'a str,
    ) -> BoxFuture<'a, Result<(), Refusal>> {
        Box::pin(async move {
            let (reply, answer) = oneshot::channel();
            let request = ConfirmRequest {
                id: id.to_owned(),
                name: name.to_owned(),
                preview: preview.to_owned(),
                reply,
            };
            if self.events.send(WorkerEvent::Confirm(request)).is_err() {
                return Err(Refusal::Unanswered(
                    "tool call refused: nobody to ask".to_owned(),
                ));
            }
            let decision = answer.await.unwrap_or(Decision::No);
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            match decision {
                Decision::Yes => Ok(()),
                Decision::AlwaysThisTool => {
                    state.always.insert(name.to_owned());
                    Ok(())
                }
                Decision::Always => {
                    state.always_all = true;
                    Ok(())
                }
                Decision::No => Err(Refusal::ByUser),
            }
        })
    }
}

/// The app's handle on the worker.
#[derive(Clone)]
pub struct WorkerHandle {
    work: mpsc::UnboundedSender<Work>,
    cancel: Arc<Mutex<CancellationToken>>,
    pub confirm: Arc<Mutex<ConfirmState>>,
}

impl WorkerHandle {
    pub fn send(&self, work: Work) {
        let _ = self.work.send(work);
    }

    /// Cancels the running prompt or compaction (bash process groups die with it).
    pub fn abort(&self) {
        self.cancel
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .cancel();
    }
}

/// Starts the worker. Without an agent (no credentials) every prompt answers `missing`.
pub fn spawn(
    agent: Option<Agent>,
    missing: String,
    ask_before_tools: bool,
) -> (WorkerHandle, mpsc::UnboundedReceiver<WorkerEvent>) {
    let (work_tx, mut work_rx) = mpsc::unbounded_channel::<Work>();
    let (events, rx) = mpsc::unbounded_channel();
    let cancel = Arc::new(Mutex::new(CancellationToken::new()));
    let confirm = Arc::new(Mutex::new(ConfirmState {
        ask: ask_before_tools,
        ..ConfirmState::default()
    }));
    let handle = WorkerHandle {
        work: work_tx,
        cancel: Arc::clone(&cancel),
        confirm: Arc::clone(&confirm),
    };
    let mut agent = agent;
    let mut held = Held::default();
    if let Some(agent) = &mut agent {
        agent.set_confirm(Arc::new(TuiConfirm {
            state: confirm,
            events: events.clone(),
        }));
    }
    tokio::spawn(async move {
        while let Some(work) = work_rx.recv().await {
            let token = CancellationToken::new();
            *cancel.lock().unwrap_or_else(PoisonError::into_inner) = token.clone();
            match agent.as_mut() {
                None => {
                    let _ = events.send(WorkerEvent::Error(missing.clone()));
                }
                Some(agent) => run(agent, work, &mut held, &events, &token).await,
            }
            let _ = events.send(WorkerEvent::Idle);
        }
    });
    (handle, rx)
}

/// Runs one prompt, its events to the app. Returns its content when the
/// turn failed in a way another model may not, so it can run again there.
async fn prompt(
    agent: &mut Agent,
    content: Vec<Block>,
    events: &mpsc::UnboundedSender<WorkerEvent>,
    cancel: &CancellationToken,
) -> Option<Vec<Block>> {
    let kept = content.clone();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let forward = async {
        while let Some(event) = rx.recv().await {
            let _ = events.send(WorkerEvent::Agent(event));
        }
    };
    let run = async {
        let result = agent.prompt(content, &tx, cancel).await;
        drop(tx);
        result
    };
    let (result, ()) = tokio::join!(run, forward);
    let error = result.err()?;
    let _ = events.send(WorkerEvent::Error(error.to_string()));
    another_model_may_help(&error).then(|| {
        let _ = events.send(WorkerEvent::Retryable);
        kept
    })
}

/// What the worker keeps between pieces of work.
#[derive(Default)]
struct Held {
    /// `!command` outputs waiting for the next prompt.
    shell: Vec<Block>,
    /// The content of the last prompt, while its turn's failure may be
    /// retried on another model.
    failed: Option<Vec<Block>>,
}

/// Whether another model may get past `error`: a refused key, a rate limit
/// or a server error (the same request on the same model failed already,
/// after the provider's retries).
fn another_model_may_help(error: &AgentError) -> bool {
    matches!(
        error,
        AgentError::Provider(ProviderError::Status {
            status: 401 | 403 | 429 | 500..=599,
            ..
        })
    )
}

async fn run(
    agent: &mut Agent,
    work: Work,
    held: &mut Held,
    events: &mpsc::UnboundedSender<WorkerEvent>,
    cancel: &CancellationToken,
) {
    if matches!(
        work,
        Work::Clear | Work::OpenSession(_) | Work::Branch(..) | Work::Rewind { .. }
    ) {
        // Context for a conversation that is no longer the one going on.
        held.shell.clear();
        held.failed = None;
    }
    let shell_context = &mut held.shell;
    match work {
        Work::Shell { id, command } => {
            let (tx, mut rx) = mpsc::unbounded_channel();
            let forward = async {
                while let Some(event) = rx.recv().await {
                    let _ = events.send(WorkerEvent::Agent(event));
                }
            };
            let run = async {
                let output = agent.run_shell(&id, &command, &tx, cancel).await;
                drop(tx);
                output
            };
            let (output, ()) = tokio::join!(run, forward);
            shell_context.push(Block::Text {
                text: shell_text(&command, &output),
            });
        }
        Work::SideQuestion(question) => {
            let (tx, mut rx) = mpsc::unbounded_channel();
            let answer = agent.side_question(&question, &tx, cancel).await;
            drop(tx);
            // Its usage, counted like any call's.
            while let Some(event) = rx.recv().await {
                let _ = events.send(WorkerEvent::Agent(event));
            }
            let _ = events.send(match answer {
                Ok(answer) => WorkerEvent::SideAnswer { question, answer },
                Err(e) => WorkerEvent::Error(format!("/btw: {e}")),
            });
        }
        Work::Prompt { text, images } => {
            let mut content = std::mem::take(shell_context);
            content.push(Block::Text { text });
            content.extend(images);
            held.failed = prompt(agent, content, events, cancel).await;
        }
        Work::Retry => match held.failed.take() {
            Some(content) if agent.take_back_prompt() => {
                let _ = events.send(WorkerEvent::Transcript(agent.messages().to_vec()));
                held.failed = prompt(agent, content, events, cancel).await;
            }
            _ => {
                let _ = events.send(WorkerEvent::Error("no failed turn to run again".into()));
            }
        },
        Work::Compact => match compact(agent, events, cancel).await {
            // The transcript keeps what was shown; the summary follows it
            // (the agent's `compact_done`).
            Ok(_) => {
                let _ = events.send(WorkerEvent::Status(
                    "compacted: older messages summarised".into(),
                ));
            }
            Err(e) => {
                let _ = events.send(WorkerEvent::Error(format!("compact: {e}")));
            }
        },
        Work::Clear => {
            let cleared = agent.clear().await;
            let _ = events.send(WorkerEvent::Transcript(Vec::new()));
            send_plan(agent, events);
            if let Err(e) = cleared {
                let _ = events.send(WorkerEvent::Error(format!(
                    "cannot start a new session: {e}"
                )));
            }
        }
        Work::SetModel { provider, model } => {
            let config = provider.unwrap_or_else(|| agent.provider().config().clone());
            // The app's status line already says so (and where it was saved).
            agent.set_model(Provider::new(config), model);
        }
        Work::ResetPrompt => agent.reset_system_prompt(),
        Work::SetSandbox(sandbox) => {
            agent.set_sandbox(sandbox);
            let text = format!("bash sandbox: {}", sandbox.describe());
            let _ = events.send(WorkerEvent::Status(text));
        }
        Work::SetPlan(plan) => {
            agent.set_plan(plan);
            let mode = if plan {
                "plan mode: only read-only tools"
            } else {
                "act mode: every tool"
            };
            let _ = events.send(WorkerEvent::Status(mode.into()));
        }
        Work::OpenSession(path) => match Session::open(&path) {
            Ok(session) => {
                for warning in session.warnings() {
                    let _ = events.send(WorkerEvent::Error(warning.clone()));
                }
                agent.switch_session(session).await;
                let _ = events.send(WorkerEvent::Transcript(agent.messages().to_vec()));
                send_plan(agent, events);
                let _ = events.send(WorkerEvent::Status(format!("resumed {}", path.display())));
            }
            Err(e) => {
                let _ = events.send(WorkerEvent::Error(e.to_string()));
            }
        },
        Work::Tree(action) => {
            let rows = agent
                .session()
                .map(|s| outline(&s.entries(), s.leaf_id()))
                .unwrap_or_default();
            let _ = events.send(WorkerEvent::Tree(action, rows));
        }
        Work::Branch(action, entry_id) => {
            let moved = match action {
                // A rewind reaches here only as its conversation part.
                PromptAction::Fork | PromptAction::Rewind => agent.fork_before(&entry_id).map(Some),
                PromptAction::Tree | PromptAction::Jump => agent.move_to(&entry_id).map(|()| None),
            };
            match moved {
                Ok(text) => {
                    let _ = events.send(WorkerEvent::Transcript(agent.messages().to_vec()));
                    send_plan(agent, events);
                    if let Some(text) = text {
                        let _ = events.send(WorkerEvent::EditorText(text));
                        let _ = events.send(WorkerEvent::Status(
                            "forked: edit the prompt and send it".into(),
                        ));
                    }
                }
                Err(e) => {
                    let _ = events.send(WorkerEvent::Error(e.to_string()));
                }
            }
        }
        Work::PlanRewind(entry_id) => plan_rewind(agent, entry_id, events).await,
        Work::Rewind {
            entry_id,
            code,
            conversation,
        } => {
            let done =
                zot_core::checkpoint::rewind(agent, &entry_id, code, conversation, true).await;
            match done {
                Ok(rewound) => {
                    if conversation {
                        let _ = events.send(WorkerEvent::Transcript(agent.messages().to_vec()));
                        send_plan(agent, events);
                        let _ = events.send(WorkerEvent::EditorText(rewound.text.clone()));
                    }
                    let _ = events.send(WorkerEvent::Status(rewound_status(&rewound)));
                }
                Err(e) => {
                    let _ = events.send(WorkerEvent::Error(e.to_string()));
                }
            }
        }
        Work::Export(format, dir) => {
            let written = match agent.session() {
                None => Err("this run keeps no session file".to_owned()),
                Some(session) => index::read_branch(session.path())
                    .map_err(|e| e.to_string())
                    .and_then(|branch| {
                        let path = dir.join(format!("{}.{}", session.id(), format.extension()));
                        std::fs::write(&path, format.render(&branch))
                            .map(|()| path)
                            .map_err(|e| format!("cannot write the export: {e}"))
                    }),
            };
            let _ = events.send(match written {
                Ok(path) => WorkerEvent::Status(format!("exported to {}", path.display())),
                Err(e) => WorkerEvent::Error(e),
            });
        }
        Work::SetTitle(title) => {
            let title = title.trim();
            let said = if title.is_empty() {
                Ok(())
            } else {
                agent.set_title(title)
            };
            let _ = events.send(match (said, agent.session()) {
                (Ok(()), Some(session)) => {
                    WorkerEvent::Status(format!("session: {}", session.title()))
                }
                (Err(e), _) => WorkerEvent::Error(e.to_string()),
                (Ok(()), None) => WorkerEvent::Error("this run keeps no session file".into()),
            });
        }
        Work::DeleteSession {
            summary,
            all,
            zot_home,
        } => {
            let running = agent.session().is_some_and(|s| s.id() == summary.id);
            let done = if running {
                Err("the running session cannot be deleted".to_owned())
            } else {
                index::remove(&zot_home, &summary).map_err(|e| e.to_string())
            };
            let _ = events.send(match done {
                Ok(()) => WorkerEvent::Status(format!("deleted \"{}\"", summary.title)),
                Err(e) => WorkerEvent::Error(e),
            });
            let _ = events.send(WorkerEvent::Sessions(all));
        }
    }
}

/// `/undo`, `/rewind`: what going back to before the prompt (the last
/// one without `entry_id`) would change, for the user to confirm.
async fn plan_rewind(
    agent: &Agent,
    entry_id: Option<String>,
    events: &mpsc::UnboundedSender<WorkerEvent>,
) {
    let undo = entry_id.is_none();
    let planned = match (agent.session(), agent.checkpoints()) {
        (Some(session), Some(checkpoints)) => {
            match entry_id.or_else(|| zot_core::checkpoint::last_prompt(session)) {
                Some(entry_id) => zot_core::checkpoint::plan(&checkpoints, session, &entry_id)
                    .await
                    .map_err(|e| e.to_string()),
                None => Err("no prompt to undo in this session".to_owned()),
            }
        }
        _ => Err("this run keeps no session file: nothing to undo".to_owned()),
    };
    let _ = events.send(match planned {
        Ok(plan) => WorkerEvent::RewindOffer(Box::new(crate::rewind::RewindOffer {
            entry_id: plan.entry_id,
            text: plan.text,
            changes: plan.changes,
            edited: plan.edited,
            unrestorable: plan.unrestorable,
            undo,
        })),
        Err(e) => WorkerEvent::Error(e),
    });
}

/// The status line after a rewind.
fn rewound_status(rewound: &zot_core::checkpoint::Rewound) -> String {
    let files = match rewound.restored.len() {
        0 => "no files changed".to_owned(),
        1 => "1 file put back".to_owned(),
        n => format!("{n} files put back"),
    };
    match rewound.conversation {
        true => format!("rewound: {files}; edit the prompt and send it"),
        false => format!("rewound the code: {files}"),
    }
}

/// What the model reads of a `!command` the user ran, before the next prompt.
fn shell_text(command: &str, output: &zot_core::tool::ToolOutput) -> String {
    let text: Vec<&str> = output
        .content
        .iter()
        .filter_map(|b| match b {
            Block::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    format!(
        "The user ran `{command}` in a shell for you to see:\n\n{}",
        text.join("\n")
    )
}

/// `/compact`: the agent's events (its `compact_done`) reach the app like a prompt's.
/// Tells the app the agent's plan, after the conversation was replaced.
fn send_plan(agent: &Agent, events: &mpsc::UnboundedSender<WorkerEvent>) {
    let items = agent.plan();
    let _ = events.send(WorkerEvent::Agent(AgentEvent::Todo { items }));
}

async fn compact(
    agent: &mut Agent,
    events: &mpsc::UnboundedSender<WorkerEvent>,
    cancel: &CancellationToken,
) -> Result<String, AgentError> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let result = agent.compact_now(&tx, cancel).await;
    drop(tx);
    while let Some(event) = rx.recv().await {
        let _ = events.send(WorkerEvent::Agent(event));
    }
    result
}
