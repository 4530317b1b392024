//! Going back to before a prompt: which files to put back and how (a
//! [`Plan`]), files changed since zot last recorded them, and the rewind
//! itself, of the code, the conversation (a branch, as `/fork`), or both.

use std::collections::HashMap;

use zot_protocol::checkpoints::{Change, FileChange, PromptCheckpoint};
use zot_protocol::sessions::{TreeEntry, TreeEntryKind};

use super::error::CheckpointError;
use super::record::Record;
use super::restore::{self, Step, Stored};
use super::{Checkpoints, State};
use crate::agent::Agent;
use crate::session::Session;

/// What a rewind to before a prompt would do to the files.
#[derive(Debug, Clone)]
pub struct Plan {
    pub entry_id: String,
    /// The prompt's text.
    pub text: String,
    /// Each file to write, create or delete, as the change it makes.
    pub changes: Vec<FileChange>,
    /// Files among them that changed after zot's last checkpoint: the
    /// user's edits, overwritten only when confirmed (`force`).
    pub edited: Vec<String>,
    /// Files a checkpoint named but did not keep (over the size limit).
    pub unrestorable: Vec<String>,
    steps: Vec<Step>,
    /// The snapshot taken for the plan: the files before the rewind.
    current: String,
}

/// What a rewind did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewound {
    pub restored: Vec<FileChange>,
    /// The conversation moved to before the prompt.
    pub conversation: bool,
    pub leaf_id: Option<String>,
    pub text: String,
}

/// The prompts of the session's current branch, oldest first.
fn branch_prompts(session: &Session) -> Vec<(usize, TreeEntry)> {
    let entries = session.entries();
    let index: HashMap<&str, usize> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.id.as_str(), i))
        .collect();
    let mut path = Vec::new();
    let mut at = session.leaf_id().and_then(|id| index.get(id).copied());
    while let Some(i) = at {
        path.push(i);
        at = entries[i]
            .parent_id
            .as_deref()
            .and_then(|p| index.get(p).copied());
    }
    path.reverse();
    path.into_iter()
        .filter(|&i| entries[i].kind == TreeEntryKind::Prompt)
        .map(|i| (i, entries[i].clone()))
        .collect()
}

/// RPC `get_checkpoints`: the current branch's prompts, oldest first, each
/// with the files it changed.
pub fn prompts(session: &Session) -> Vec<PromptCheckpoint> {
    let records = session.checkpoints();
    branch_prompts(session)
        .into_iter()
        .map(|(_, entry)| {
            let record = records
                .iter()
                .find(|(_, r)| !r.rewind && r.entry_id == entry.id)
                .map(|(_, r)| r);
            PromptCheckpoint {
                entry_id: entry.id,
                text: entry.text,
                files: record.map(|r| r.files.clone()).unwrap_or_default(),
                unrestorable: record.map(|r| r.unrestorable.clone()).unwrap_or_default(),
            }
        })
        .collect()
}

/// The prompt of the current branch that `/undo` takes back: the last.
pub fn last_prompt(session: &Session) -> Option<String> {
    branch_prompts(session).pop().map(|(_, e)| e.id)
}

/// What a rewind to before the prompt `entry_id` (of the current branch)
/// would change. Each file goes back to how it was before the first
/// change a checkpoint recorded of it at or after that prompt, so only
/// files zot changed are touched, and a file changed by two prompts gets
/// its state from before the first.
pub async fn plan(
    checkpoints: &Checkpoints,
    session: &Session,
    entry_id: &str,
) -> Result<Plan, CheckpointError> {
    let Some((position, entry)) = branch_prompts(session)
        .into_iter()
        .find(|(_, e)| e.id == entry_id)
    else {
        return Err(CheckpointError::UnknownPrompt(entry_id.to_owned()));
    };
    let text = session.prompt_text(entry_id).unwrap_or(entry.text);
    let records = session.checkpoints();
    let last_after = records.last().map(|(_, r)| r.after.clone());
    // Each file's earliest recorded state from the prompt on.
    let mut wanted: Vec<(String, String)> = Vec::new();
    let mut unrestorable = Vec::new();
    for (_, record) in records.iter().filter(|(seq, _)| *seq > position) {
        for file in &record.files {
            if !wanted.iter().any(|(p, _)| *p == file.path) {
                wanted.push((file.path.clone(), record.before.clone()));
            }
        }
        for path in &record.unrestorable {
            if !unrestorable.contains(path) {
                unrestorable.push(path.clone());
            }
        }
    }
    let session_id = session.id().to_owned();
    let entry_id = entry_id.to_owned();
    if wanted.is_empty() {
        // Nothing recorded from the prompt on: no snapshot needed.
        return Ok(Plan {
            entry_id,
            text,
            changes: Vec::new(),
            edited: Vec::new(),
            unrestorable,
            steps: Vec::new(),
            current: String::new(),
        });
    }
    checkpoints
        .blocking(move |state| {
            let (steps, changes, edited, current) =
                state.plan_steps(&session_id, &wanted, last_after.as_deref())?;
            Ok(Plan {
                entry_id,
                text,
                changes,
                edited,
                unrestorable,
                steps,
                current,
            })
        })
        .await
        .unwrap_or_else(|| Err(CheckpointError::Git("the planning task failed".into())))
}

type Planned = (Vec<Step>, Vec<FileChange>, Vec<String>, String);

impl State {
    fn plan_steps(
        &mut self,
        session_id: &str,
        wanted: &[(String, String)],
        last_after: Option<&str>,
    ) -> Result<Planned, CheckpointError> {
        let project = self.project.clone();
        let store = self.store()?;
        let paths: Vec<String> = wanted.iter().map(|(p, _)| p.clone()).collect();
        let current = store.snapshot(&project, session_id, &paths)?;
        let all: Vec<&str> = paths.iter().map(String::as_str).collect();
        let now = store.stored(&current, &all)?;
        let last = match last_after {
            Some(commit) => store.stored(commit, &all)?,
            None => HashMap::new(),
        };
        // One lookup per snapshot, of the paths wanted from it.
        let mut by_commit: HashMap<&str, Vec<&str>> = HashMap::new();
        for (path, commit) in wanted {
            by_commit.entry(commit).or_default().push(path);
        }
        let mut then: HashMap<String, Stored> = HashMap::new();
        for (commit, paths) in by_commit {
            then.extend(store.stored(commit, &paths)?);
        }
        let mut steps = Vec::new();
        let mut changes = Vec::new();
        let mut edited = Vec::new();
        for path in &paths {
            let (was, is) = (then.get(path), now.get(path));
            if was == is {
                continue;
            }
            let (step, change) = match (was, is) {
                (Some(stored), None) => (write(path, stored), Change::Created),
                (Some(stored), Some(_)) => (write(path, stored), Change::Modified),
                (None, _) => (Step::Delete { path: path.clone() }, Change::Deleted),
            };
            if last_after.is_some() && last.get(path) != is {
                edited.push(path.clone());
            }
            steps.push(step);
            changes.push(FileChange {
                path: path.clone(),
                change,
            });
        }
        Ok((steps, changes, edited, current))
    }

    /// Carries out a plan; the record of the rewind when files changed.
    fn apply(&mut self, session_id: &str, plan: &Plan) -> Result<Option<Record>, CheckpointError> {
        if plan.steps.is_empty() {
            return Ok(None);
        }
        let project = self.project.clone();
        let store = self.store()?;
        restore::apply(&store.git, &project, &plan.steps)?;
        let paths: Vec<String> = plan.changes.iter().map(|c| c.path.clone()).collect();
        let after = store.snapshot(&project, session_id, &paths)?;
        Ok(Some(Record {
            entry_id: plan.entry_id.clone(),
            before: plan.current.clone(),
            after,
            files: plan.changes.clone(),
            unrestorable: Vec::new(),
            hashes: std::collections::BTreeMap::new(),
            rewind: true,
        }))
    }
}

fn write(path: &str, stored: &Stored) -> Step {
    Step::Write {
        path: path.to_owned(),
        stored: stored.clone(),
    }
}

/// Goes back to before the prompt `entry_id`: its files as they were
/// (`code`; a file the user changed since zot's last checkpoint only with
/// `force`), then the conversation as a new branch before it
/// (`conversation`). Files first: when they cannot be put back, the
/// conversation stays where it was.
pub async fn rewind(
    agent: &mut Agent,
    entry_id: &str,
    code: bool,
    conversation: bool,
    force: bool,
) -> Result<Rewound, CheckpointError> {
    let session = agent.session().ok_or(CheckpointError::Off)?;
    let mut restored = Vec::new();
    let mut text = session.prompt_text(entry_id);
    if code {
        let checkpoints = agent.checkpoints().ok_or(CheckpointError::Off)?;
        let plan = plan(&checkpoints, session, entry_id).await?;
        if !plan.edited.is_empty() && !force {
            return Err(CheckpointError::Edited(plan.edited));
        }
        let session_id = session.id().to_owned();
        let applied = plan.clone();
        let record = checkpoints
            .blocking(move |state| state.apply(&session_id, &applied))
            .await
            .unwrap_or_else(|| Err(CheckpointError::Git("the restore task failed".into())))?;
        if let Some(record) = record {
            agent.record_checkpoint(record);
        }
        restored = plan.changes;
        text = Some(plan.text);
    } else if text.is_none()
        || !branch_prompts(session)
            .iter()
            .any(|(_, e)| e.id == entry_id)
    {
        return Err(CheckpointError::UnknownPrompt(entry_id.to_owned()));
    }
    let text = match conversation {
        true => agent.fork_before(entry_id)?,
        false => text.unwrap_or_default(),
    };
    Ok(Rewound {
        restored,
        conversation,
        leaf_id: agent.session().and_then(|s| s.leaf_id()).map(str::to_owned),
        text,
    })
}
