//! Applying an extension's registrations: caps, duplicate names, schema
//! checks, conflicts with built-ins and other extensions, activation.

use std::collections::HashSet;

use zot_protocol::ui::{CommandInfo, HostEvent};

use crate::extension::{Extension, Readiness};
use crate::model::{Registration, ToolInfo};
use crate::registry::{NameKind, Owner};

use super::state::Inner;

impl Inner {
    /// Records one registration.
    pub(super) fn apply(&self, ext: &Extension, registration: Registration) {
        match registration {
            Registration::Command(cmd) => self.add_command(ext, cmd),
            Registration::Tool(tool) => {
                if let Some(tool) = self.valid_schema(ext, tool) {
                    self.add_tool(ext, tool);
                }
            }
            Registration::Subscribe(point, mode) => {
                ext.registrations().hooks.insert((point, mode));
            }
            Registration::Ready => ext.set_readiness(Readiness::Ready),
            Registration::ReplaceTools(tools) => {
                let tools: Vec<ToolInfo> = tools
                    .into_iter()
                    .filter_map(|tool| self.valid_schema(ext, tool))
                    .collect();
                let max = self.cx.config.limits.max_tools;
                let outcomes = {
                    let mut regs = ext.registrations();
                    let regs = &mut *regs;
                    replace_capped(
                        &mut regs.tools,
                        &mut regs.refused_tools,
                        max,
                        tools,
                        |t| (t.name.clone(), !t.deferred),
                        |t, name| t.name == name,
                    )
                };
                self.forget_conflicts(ext, NameKind::Tool);
                for (name, visible, added) in outcomes {
                    self.settle(ext, NameKind::Tool, &name, max, visible, added);
                }
                if ext.is_ready() {
                    self.emit(HostEvent::ToolsChanged);
                }
            }
            Registration::ReplaceCommands(commands) => {
                let max = self.cx.config.limits.max_commands;
                let outcomes = {
                    let mut regs = ext.registrations();
                    let regs = &mut *regs;
                    replace_capped(
                        &mut regs.commands,
                        &mut regs.refused_commands,
                        max,
                        commands,
                        |c| (c.name.clone(), true),
                        |c, name| c.name.eq_ignore_ascii_case(name),
                    )
                };
                self.forget_conflicts(ext, NameKind::Command);
                for (name, visible, added) in outcomes {
                    self.settle(ext, NameKind::Command, &name, max, visible, added);
                }
                if ext.is_ready() {
                    self.emit(HostEvent::CommandsChanged);
                }
            }
        }
    }

    /// Records a command; logs and records any shadowing it causes.
    pub(super) fn add_command(&self, ext: &Extension, cmd: CommandInfo) {
        let name = cmd.name.clone();
        let max = self.cx.config.limits.max_commands;
        let added = {
            let mut regs = ext.registrations();
            let regs = &mut *regs;
            capped(
                &mut regs.commands,
                &mut regs.refused_commands,
                max,
                cmd,
                |c| c.name.eq_ignore_ascii_case(&name),
            )
        };
        self.settle(ext, NameKind::Command, &name, max, true, added);
    }

    /// Records a tool; logs and records any shadowing it causes.
    /// `tool`, unless its input schema is not valid JSON Schema: then it is
    /// left out with a warning (a provider would refuse every request that
    /// offered it) and the extension's other tools stay.
    pub(super) fn valid_schema(&self, ext: &Extension, mut tool: ToolInfo) -> Option<ToolInfo> {
        match crate::tool_schema::checked(std::mem::take(&mut tool.schema)) {
            Ok(schema) => Some(ToolInfo { schema, ..tool }),
            Err(why) => {
                self.warn(
                    ext,
                    format!(
                        "tool \"{}\" rejected: invalid input schema: {why}",
                        tool.name
                    ),
                );
                None
            }
        }
    }

    pub(super) fn add_tool(&self, ext: &Extension, tool: ToolInfo) {
        let (name, visible) = (tool.name.clone(), !tool.deferred);
        let max = self.cx.config.limits.max_tools;
        let added = {
            let mut regs = ext.registrations();
            let regs = &mut *regs;
            capped(&mut regs.tools, &mut regs.refused_tools, max, tool, |t| {
                t.name == name
            })
        };
        self.settle(ext, NameKind::Tool, &name, max, visible, added);
    }

    /// What follows a registration's outcome: a warning past the cap, or
    /// conflicts and a change event.
    pub(super) fn settle(
        &self,
        ext: &Extension,
        kind: NameKind,
        name: &str,
        max: usize,
        visible: bool,
        added: Added,
    ) {
        match added {
            Added::OverCap { first } => self.over_cap(ext, kind, name, max, first),
            Added::Yes => self.registered(ext, kind, name, true, visible),
            Added::Twice => self.registered(ext, kind, name, false, visible),
        }
    }

    /// A registration past the per-extension cap: one warning for the
    /// first, a log line for each.
    pub(super) fn over_cap(
        &self,
        ext: &Extension,
        kind: NameKind,
        name: &str,
        max: usize,
        first: bool,
    ) {
        let what = match kind {
            NameKind::Command => "commands",
            NameKind::Tool => "tools",
        };
        if first {
            self.warn(
                ext,
                format!(
                    "registered more than {max} {what}, the most one extension may have; {} and every later one are refused",
                    describe_name(kind, name)
                ),
            );
        } else {
            ext.peer.log.line(format_args!(
                "{} refused: over the limit of {max} {what}",
                describe_name(kind, name)
            ));
        }
    }

    /// After a registration: conflicts, and a change event once the
    /// extension is past its registration window.
    pub(super) fn registered(
        &self,
        ext: &Extension,
        kind: NameKind,
        name: &str,
        added: bool,
        visible: bool,
    ) {
        if !added {
            ext.peer.log.line(format_args!(
                "{} registered twice; the first stays",
                describe_name(kind, name)
            ));
            return;
        }
        self.record_conflicts(ext, kind, name);
        if ext.is_ready() && visible {
            self.emit(match kind {
                NameKind::Command => HostEvent::CommandsChanged,
                NameKind::Tool => HostEvent::ToolsChanged,
            });
        }
    }

    pub(super) fn record_conflicts(&self, ext: &Extension, kind: NameKind, name: &str) {
        let mut state = self.state();
        let found = self.live(&state).conflicts_of(ext, kind, name);
        for (conflict, loser) in found {
            let what = describe_name(kind, &conflict.name);
            let winner = match &conflict.winner {
                Owner::Builtin => "a built-in".to_owned(),
                Owner::Extension(name) => format!("extension {name} (earlier in load order)"),
            };
            loser.peer.log.line(format_args!(
                "{what} is shadowed by {winner}; it will not be used"
            ));
            if loser.adapter.semantics().warn_builtin_tool_clash
                && kind == NameKind::Tool
                && conflict.winner == Owner::Builtin
            {
                self.warn_once(
                    loser.name(),
                    format!(
                        "extension tool '{}' collides with a built-in tool; skipped",
                        conflict.name
                    ),
                );
            }
            if let Owner::Extension(winner) = &conflict.winner
                && loser.adapter.semantics().warn_tool_clash
                && kind == NameKind::Tool
                && !state.conflicts.contains(&conflict)
                && !crate::ecosystem::installed()
                    .iter()
                    .any(|e| e.is_shared_tool(&conflict.name))
            {
                self.warn_once(
                    loser.name(),
                    format!(
                        "tool '{}' of {} collides with the same name from {winner}; {}'s is dropped",
                        conflict.name,
                        loser.name(),
                        loser.name()
                    ),
                );
            }
            if !state.conflicts.contains(&conflict) {
                state.conflicts.push(conflict);
            }
        }
    }

    /// Forgets the recorded conflicts of `ext`'s names of `kind` (it is
    /// registering them anew).
    pub(super) fn forget_conflicts(&self, ext: &Extension, kind: NameKind) {
        let name = ext.name();
        self.state().conflicts.retain(|c| {
            c.kind != kind
                || (c.loser != name && !matches!(&c.winner, Owner::Extension(w) if w == name))
        });
    }

    /// Activates registered deferred tools by name; unknown names are ignored.
    /// Returns the names that became visible.
    pub(crate) fn activate(&self, names: &[String]) -> Vec<String> {
        // Most tool results activate nothing: no copy of every tool then.
        if names.is_empty() {
            return Vec::new();
        }
        let mut state = self.state();
        let deferred: HashSet<String> = self
            .live(&state)
            .all_tools()
            .into_iter()
            .filter(|(_, t)| t.deferred)
            .map(|(_, t)| t.name)
            .collect();
        let newly: Vec<String> = names
            .iter()
            .filter(|n| deferred.contains(*n))
            .filter(|n| state.activated.insert((*n).clone()))
            .cloned()
            .collect();
        drop(state);
        if !newly.is_empty() {
            self.emit(HostEvent::ToolsChanged);
        }
        newly
    }
}

/// `command /x` or `tool "x"`, for log lines.
pub(super) fn describe_name(kind: NameKind, name: &str) -> String {
    match kind {
        NameKind::Command => format!("command /{name}"),
        NameKind::Tool => format!("tool \"{name}\""),
    }
}

/// What became of a registration.
pub(super) enum Added {
    Yes,
    /// The same name again: the first stays.
    Twice,
    /// Refused: the extension already has `max` of these (`first` refusal or not).
    OverCap {
        first: bool,
    },
}

/// Appends `item` unless `same` matches an existing one or there are
/// already `max` items (then `refused` counts it).
pub(super) fn capped<T>(
    items: &mut Vec<T>,
    refused: &mut usize,
    max: usize,
    item: T,
    same: impl Fn(&T) -> bool,
) -> Added {
    if items.iter().any(same) {
        return Added::Twice;
    }
    if items.len() >= max {
        *refused += 1;
        return Added::OverCap {
            first: *refused == 1,
        };
    }
    items.push(item);
    Added::Yes
}

/// Replaces `items` with `new`, each added as [`capped`] adds one, in one
/// step under the caller's lock; returns each item's name, whether it is
/// visible, and what became of it.
pub(super) fn replace_capped<T>(
    items: &mut Vec<T>,
    refused: &mut usize,
    max: usize,
    new: Vec<T>,
    key: impl Fn(&T) -> (String, bool),
    same: impl Fn(&T, &str) -> bool,
) -> Vec<(String, bool, Added)> {
    items.clear();
    *refused = 0;
    new.into_iter()
        .map(|item| {
            let (name, visible) = key(&item);
            let added = capped(items, refused, max, item, |t| same(t, &name));
            (name, visible, added)
        })
        .collect()
}
