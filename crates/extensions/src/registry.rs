//! What each extension registered, and who wins a name. The rules: built-in
//! commands and tools always win; between extensions the earlier one in load
//! order wins (whenever it registered); commands match case-insensitively,
//! tools exactly. Every shadowing is logged to the loser's log and recorded.

use std::collections::HashSet;
use std::sync::Arc;

use zot_protocol::ui::CommandInfo;

use crate::extension::Extension;
use crate::model::ToolInfo;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NameKind {
    Command,
    Tool,
}

/// Who holds a contested name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Owner {
    Builtin,
    Extension(String),
}

/// A registration that lost its name to another owner.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Conflict {
    pub kind: NameKind,
    /// The loser's spelling.
    pub name: String,
    pub winner: Owner,
    pub loser: String,
}

/// The live extensions, in load order, as the registry sees them.
pub(crate) struct Live<'a> {
    pub(crate) extensions: &'a [Arc<Extension>],
    pub(crate) builtin_tools: &'a [String],
}

impl Live<'_> {
    fn alive(&self) -> impl Iterator<Item = &Arc<Extension>> {
        self.extensions.iter().filter(|e| e.is_alive())
    }

    fn is_builtin_command(&self, name: &str) -> bool {
        zot_protocol::ui::is_builtin_command(name)
    }

    fn is_builtin_tool(&self, name: &str) -> bool {
        self.builtin_tools.iter().any(|b| b == name)
    }

    /// Winning extension commands, in load then registration order.
    pub(crate) fn commands(&self) -> Vec<CommandInfo> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for ext in self.alive() {
            for cmd in &ext.registrations().commands {
                if !self.is_builtin_command(&cmd.name) && seen.insert(cmd.name.to_lowercase()) {
                    out.push(cmd.clone());
                }
            }
        }
        out
    }

    /// The extension command `name` resolves to (case-insensitively).
    pub(crate) fn find_command(&self, name: &str) -> Option<(Arc<Extension>, CommandInfo)> {
        if self.is_builtin_command(name) {
            return None;
        }
        let wanted = name.to_lowercase();
        self.alive().find_map(|ext| {
            let regs = ext.registrations();
            let cmd = regs
                .commands
                .iter()
                .find(|c| c.name.to_lowercase() == wanted)?;
            Some((Arc::clone(ext), cmd.clone()))
        })
    }

    /// Winning extension tools, deferred ones included.
    pub(crate) fn all_tools(&self) -> Vec<(Arc<Extension>, ToolInfo)> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for ext in self.alive() {
            for tool in &ext.registrations().tools {
                if !self.is_builtin_tool(&tool.name) && seen.insert(tool.name.clone()) {
                    out.push((Arc::clone(ext), tool.clone()));
                }
            }
        }
        out
    }

    /// Winning tools the model may see: deferred ones only once activated.
    pub(crate) fn active_tools(
        &self,
        activated: &HashSet<String>,
    ) -> Vec<(Arc<Extension>, ToolInfo)> {
        let mut tools = self.all_tools();
        tools.retain(|(_, t)| !t.deferred || activated.contains(&t.name));
        tools
    }

    /// The extension whose tool the model calls by `name`: the winner of the
    /// name, if the model may see it (a deferred tool only once activated).
    /// What [`active_tools`](Self::active_tools) would find, without copying
    /// every tool's schema on each call.
    pub(crate) fn active_tool(
        &self,
        name: &str,
        activated: &HashSet<String>,
    ) -> Option<Arc<Extension>> {
        if self.is_builtin_tool(name) {
            return None;
        }
        self.alive().find_map(|ext| {
            let regs = ext.registrations();
            let tool = regs.tools.iter().find(|t| t.name == name)?;
            (!tool.deferred || activated.contains(name)).then(|| Arc::clone(ext))
        })
    }

    /// Conflicts a new registration by `ext` creates, with the loser of each.
    pub(crate) fn conflicts_of(
        &self,
        ext: &Extension,
        kind: NameKind,
        name: &str,
    ) -> Vec<(Conflict, Arc<Extension>)> {
        let same = |other: &str| match kind {
            NameKind::Command => other.eq_ignore_ascii_case(name),
            NameKind::Tool => other == name,
        };
        let builtin = match kind {
            NameKind::Command => self.is_builtin_command(name),
            NameKind::Tool => self.is_builtin_tool(name),
        };
        let Some(me) = self
            .extensions
            .iter()
            .find(|e| std::ptr::eq(e.as_ref(), ext))
        else {
            return Vec::new();
        };
        let conflict = |winner: Owner, loser: &Extension, spelling: &str| Conflict {
            kind,
            name: spelling.to_owned(),
            winner,
            loser: loser.name().to_owned(),
        };
        if builtin {
            return vec![(conflict(Owner::Builtin, ext, name), Arc::clone(me))];
        }
        let mut out = Vec::new();
        for other in self.alive().filter(|o| !std::ptr::eq(o.as_ref(), ext)) {
            let regs = other.registrations();
            let spelling = match kind {
                NameKind::Command => regs.commands.iter().map(|c| &c.name).find(|n| same(n)),
                NameKind::Tool => regs.tools.iter().map(|t| &t.name).find(|n| same(n)),
            };
            let Some(spelling) = spelling else { continue };
            if other.order < ext.order {
                out.push((
                    conflict(Owner::Extension(other.name().to_owned()), ext, name),
                    Arc::clone(me),
                ));
            } else {
                out.push((
                    conflict(Owner::Extension(ext.name().to_owned()), other, spelling),
                    Arc::clone(other),
                ));
            }
        }
        out
    }
}
