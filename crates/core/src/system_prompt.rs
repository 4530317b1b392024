//! The base system prompt: the built-in default (or `$ZOT_HOME/SYSTEM.md`,
//! or `--system-prompt`), `--append-system-prompt` texts, `AGENTS.md`
//! context files and the skills list. Extensions may replace the result
//! (before_agent_start); that happens in the agent, not here.

use std::path::{Path, PathBuf};

use crate::skills::{Skill, manifest};

/// The context file read from `$ZOT_HOME` and every directory from the root down to the cwd.
pub const CONTEXT_FILE: &str = "AGENTS.md";

const DEFAULT: &str = "You are zot, a coding agent working in the user's terminal. \
You can read, write and edit files and run shell commands with your tools. \
Work step by step: look before you change things, keep changes small and correct, \
and say briefly what you did. Paths are relative to the working directory unless absolute.";

#[derive(Debug, Clone, Default)]
pub struct PromptParts {
    /// `--system-prompt`: replaces the default (and SYSTEM.md).
    pub system_prompt: Option<String>,
    /// `--append-system-prompt`, in order.
    pub append: Vec<String>,
    pub skills: Vec<Skill>,
}

/// Assembles the base prompt for `cwd`.
pub fn assemble(zot_home: &Path, cwd: &Path, parts: &PromptParts) -> String {
    let base = parts
        .system_prompt
        .clone()
        .or_else(|| std::fs::read_to_string(zot_home.join("SYSTEM.md")).ok())
        .unwrap_or_else(|| DEFAULT.to_owned());
    let mut sections = vec![base.trim_end().to_owned()];
    sections.push(format!("Working directory: {}", cwd.display()));
    sections.extend(parts.append.iter().map(|a| a.trim_end().to_owned()));
    for file in context_files(zot_home, cwd) {
        if let Ok(text) = std::fs::read_to_string(&file) {
            sections.push(format!(
                "# Context from {}\n\n{}",
                file.display(),
                text.trim_end()
            ));
        }
    }
    let skills = manifest(&parts.skills);
    if !skills.is_empty() {
        sections.push(skills.trim_end().to_owned());
    }
    sections.join("\n\n")
}

/// `$ZOT_HOME/AGENTS.md`, then `AGENTS.md` in each directory from the
/// filesystem root down to `cwd` (outermost first, so nearer files come last).
pub fn context_files(zot_home: &Path, cwd: &Path) -> Vec<PathBuf> {
    let mut files = vec![zot_home.join(CONTEXT_FILE)];
    let mut dirs: Vec<&Path> = cwd.ancestors().collect();
    dirs.reverse();
    files.extend(dirs.into_iter().map(|d| d.join(CONTEXT_FILE)));
    files.retain(|f| f.is_file());
    files.dedup();
    files
}
