//! Where zot's project inputs live, relative to the project (and to the
//! home directory): the agent reads these folders and the extension host's
//! trust gates and pins them, so both take the names from here.

/// zot's own skills folder, in a project (and `$ZOT_HOME/skills`).
pub const ZOT_SKILLS: &str = ".zot/skills";

/// The skills folder shared with other agents, in a project and in the home directory.
pub const AGENTS_SKILLS: &str = ".agents/skills";

/// Claude Code's skills folder, in a project and in the home directory.
pub const CLAUDE_SKILLS: &str = ".claude/skills";

/// The project's skill folders, relative to it. Skills often ship scripts
/// that they tell the model to run, so every one of them is gated by trust
/// and pinned by the trust fingerprint (`docs/trust.md`).
pub const PROJECT_SKILL_ROOTS: &[&str] = &[ZOT_SKILLS, AGENTS_SKILLS, CLAUDE_SKILLS];

/// Where Markdown commands live, relative to the project and to the home directory.
pub const COMMANDS_DIR: &str = ".claude/commands";
