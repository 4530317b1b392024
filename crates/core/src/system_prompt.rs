//! The base system prompt: the built-in default (or `$ZOT_HOME/SYSTEM.md`,
//! or `--system-prompt`), `--append-system-prompt` texts, context files
//! (`AGENTS.md`, or Claude Code's `CLAUDE.md` with its `@path` imports) and
//! the skills list. Extensions may replace the result (before_agent_start);
//! that happens in the agent, not here.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::file_refs;
use crate::skills::{Skill, manifest};

/// The context file read from `$ZOT_HOME` and every directory from the root down to the cwd.
pub const CONTEXT_FILE: &str = "AGENTS.md";

/// Claude Code's context files, read in a directory without [`CONTEXT_FILE`]:
/// `CLAUDE.md` (or `.claude/CLAUDE.md`), then the personal `CLAUDE.local.md`.
pub const CLAUDE_FILES: [&str; 2] = ["CLAUDE.md", ".claude/CLAUDE.md"];
pub const CLAUDE_LOCAL_FILE: &str = "CLAUDE.local.md";

/// How many hops of `@path` imports a `CLAUDE.md` may chain (an import of
/// an import…): five, as Claude Code documents for its own memory files.
pub const MAX_IMPORT_DEPTH: usize = 5;

/// The base prompt when neither `--system-prompt` nor `SYSTEM.md` gives one.
/// Fixed text (no date, no tool list) so the cached prefix stays the same
/// from run to run; it names the tools whose use the model should prefer.
const DEFAULT: &str = "You are zot, a coding agent working in the user's terminal. \
You can read, write and edit files and run shell commands with your tools. \
Search with the grep, find and ls tools rather than shell commands: they honour .gitignore, \
never change anything and run in parallel. Read a web page with web_fetch. \
For work of several steps, keep a plan with todo_write and update it as steps are done. \
Hand a long search or review to a subagent with task, so its reading does not fill your context. \
Work step by step: look before you change things, keep changes small and correct, \
and say briefly what you did. Paths are relative to the working directory unless absolute.";

#[derive(Debug, Clone, Default)]
pub struct PromptParts {
    /// `--system-prompt`: replaces the default (and SYSTEM.md).
    pub system_prompt: Option<String>,
    /// `--append-system-prompt`, in order.
    pub append: Vec<String>,
    pub skills: Vec<Skill>,
    /// The user's home directory: `~/.claude/CLAUDE.md`, `~/` in imports.
    pub home: Option<PathBuf>,
    /// Whether the project is trusted: only then may its `CLAUDE.md` files
    /// import files from outside their own directory (a cloned repository
    /// must not send `@~/.aws/credentials` to the model).
    pub project_trusted: bool,
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
    let home = parts.home.as_deref();
    let user_file = |f: &Path| {
        f.starts_with(zot_home) || home.is_some_and(|h| f.starts_with(h.join(".claude")))
    };
    let mut seen = HashSet::new();
    for file in context_files(zot_home, parts.home.as_deref(), cwd) {
        let real = file.canonicalize().unwrap_or_else(|_| file.clone());
        // The user's own file may import anything; a directory's stays
        // inside that directory until the project is trusted (itself too:
        // a `CLAUDE.md` that links to `~/.ssh/id_rsa` is not read).
        let claude = is_claude_file(&file);
        let confine =
            (claude && !parts.project_trusted && !user_file(&file)).then(|| owner_dir(&file));
        if confine.is_some_and(|dir| !inside(&real, dir)) {
            tracing::info!(
                "{}: left out: links outside the untrusted project",
                file.display()
            );
            continue;
        }
        // A file an earlier one imported is in the prompt already.
        if !seen.insert(real) {
            continue;
        }
        let Ok(text) = file_refs::read_capped(&file) else {
            continue;
        };
        sections.push(format!(
            "# Context from {}\n\n{}",
            file.display(),
            text.trim_end()
        ));
        if claude {
            let imports = Imports { home, confine };
            imports.follow(&file, &text, 1, &mut seen, &mut sections);
        }
    }
    let skills = manifest(&parts.skills);
    if !skills.is_empty() {
        sections.push(skills.trim_end().to_owned());
    }
    sections.join("\n\n")
}

/// The user's context file (`$ZOT_HOME/AGENTS.md`, else
/// `~/.claude/CLAUDE.md`), then each directory's from the filesystem root
/// down to `cwd` (outermost first, so nearer files come last): its
/// `AGENTS.md`, or when it has none its `CLAUDE.md` and `CLAUDE.local.md`.
pub fn context_files(zot_home: &Path, home: Option<&Path>, cwd: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let user = zot_home.join(CONTEXT_FILE);
    if user.is_file() {
        files.push(user);
    } else if let Some(home) = home {
        files.push(home.join(".claude").join(CLAUDE_FILES[0]));
    }
    let mut dirs: Vec<&Path> = cwd.ancestors().collect();
    dirs.reverse();
    for dir in dirs {
        let agents = dir.join(CONTEXT_FILE);
        if agents.is_file() {
            files.push(agents);
            continue;
        }
        if let Some(claude) = CLAUDE_FILES
            .iter()
            .map(|f| dir.join(f))
            .find(|f| f.is_file())
        {
            files.push(claude);
        }
        files.push(dir.join(CLAUDE_LOCAL_FILE));
    }
    // `~/.claude/CLAUDE.md` is also the home directory's own when the
    // project lies under it: each file once, where it first comes.
    let mut seen = HashSet::new();
    files.retain(|f| f.is_file() && seen.insert(f.clone()));
    files
}

/// The directory a context file belongs to (`.claude/CLAUDE.md` belongs to the one above).
fn owner_dir(file: &Path) -> &Path {
    let dir = file.parent().unwrap_or(file);
    match dir.file_name() {
        Some(name) if name == ".claude" => dir.parent().unwrap_or(dir),
        _ => dir,
    }
}

/// Whether the canonical path `real` lies in `dir`.
fn inside(real: &Path, dir: &Path) -> bool {
    real.starts_with(dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()))
}

fn is_claude_file(file: &Path) -> bool {
    file.file_name()
        .is_some_and(|n| n == CLAUDE_FILES[0] || n == CLAUDE_LOCAL_FILE)
}

/// Following a `CLAUDE.md`'s `@path` imports.
struct Imports<'a> {
    home: Option<&'a Path>,
    /// Imports must resolve inside this directory when set.
    confine: Option<&'a Path>,
}

impl Imports<'_> {
    /// Adds each file `text` (read from `file`) imports as a section after
    /// it, then what that one imports, up to [`MAX_IMPORT_DEPTH`] hops. A
    /// file already in the prompt is not added again, which also ends cycles.
    fn follow(
        &self,
        file: &Path,
        text: &str,
        depth: usize,
        seen: &mut HashSet<PathBuf>,
        sections: &mut Vec<String>,
    ) {
        if depth > MAX_IMPORT_DEPTH {
            return;
        }
        let base = file.parent().unwrap_or(file);
        for reference in file_refs::references(text) {
            let Some(target) = file_refs::resolve(&reference.path, base, self.home) else {
                continue;
            };
            let Ok(real) = target.canonicalize() else {
                continue;
            };
            if let Some(root) = self.confine
                && !inside(&real, root)
            {
                tracing::info!(
                    "{}: import {} left out: outside the untrusted project",
                    file.display(),
                    reference.path
                );
                continue;
            }
            if !seen.insert(real.clone()) {
                continue;
            }
            let Ok(imported) = file_refs::read_capped(&real) else {
                continue;
            };
            sections.push(format!(
                "# Context from {} (imported by {})\n\n{}",
                target.display(),
                file.display(),
                imported.trim_end()
            ));
            self.follow(&target, &imported, depth + 1, seen, sections);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt(zot_home: &Path, home: &Path, cwd: &Path, trusted: bool) -> String {
        let parts = PromptParts {
            home: Some(home.to_path_buf()),
            project_trusted: trusted,
            ..PromptParts::default()
        };
        assemble(zot_home, cwd, &parts)
    }

    #[test]
    fn claude_files_stand_in_where_a_directory_has_no_agents_md() {
        let dir = tempfile::tempdir().unwrap();
        let (zot_home, home) = (dir.path().join("zot"), dir.path().join("home"));
        let (outer, cwd) = (dir.path().join("outer"), dir.path().join("outer/project"));
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::create_dir_all(home.join(".claude")).unwrap();
        std::fs::write(home.join(".claude/CLAUDE.md"), "USER CLAUDE").unwrap();
        std::fs::write(outer.join("AGENTS.md"), "OUTER AGENTS").unwrap();
        std::fs::write(outer.join("CLAUDE.md"), "OUTER CLAUDE").unwrap();
        std::fs::write(cwd.join("CLAUDE.md"), "PROJECT CLAUDE").unwrap();
        std::fs::write(cwd.join("CLAUDE.local.md"), "PROJECT LOCAL").unwrap();
        let text = prompt(&zot_home, &home, &cwd, false);
        let at = |s: &str| {
            text.find(s)
                .unwrap_or_else(|| panic!("{s} missing:\n{text}"))
        };
        assert!(at("USER CLAUDE") < at("OUTER AGENTS"));
        assert!(at("OUTER AGENTS") < at("PROJECT CLAUDE"));
        assert!(at("PROJECT CLAUDE") < at("PROJECT LOCAL"));
        assert!(
            !text.contains("OUTER CLAUDE"),
            "AGENTS.md wins in its directory"
        );

        // A project under the home directory reads the user's file once.
        let nested = home.join("work");
        std::fs::create_dir_all(&nested).unwrap();
        let text = prompt(&zot_home, &home, &nested, false);
        assert_eq!(text.matches("USER CLAUDE").count(), 1, "{text}");

        std::fs::create_dir_all(&zot_home).unwrap();
        std::fs::write(zot_home.join("AGENTS.md"), "ZOT USER").unwrap();
        let text = prompt(&zot_home, &home, &cwd, false);
        assert!(text.contains("ZOT USER") && !text.contains("USER CLAUDE"));
    }

    #[test]
    fn imports_chain_once_each_within_depth_and_the_project() {
        let dir = tempfile::tempdir().unwrap();
        let (zot_home, home, cwd) = (
            dir.path().join("zot"),
            dir.path().join("home"),
            dir.path().join("project"),
        );
        std::fs::create_dir_all(cwd.join("docs")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join("secret.txt"), "SECRET").unwrap();
        std::fs::write(
            cwd.join("CLAUDE.md"),
            "Read @docs/a.md and @~/secret.txt.\n`@docs/skipped.md`",
        )
        .unwrap();
        std::fs::write(cwd.join("docs/skipped.md"), "SKIPPED").unwrap();
        // a → b → a (a cycle) and a chain 1 → … → 7 deeper than allowed.
        std::fs::write(cwd.join("docs/a.md"), "A imports @b.md @c1.md").unwrap();
        std::fs::write(cwd.join("docs/b.md"), "B imports @a.md").unwrap();
        for i in 1..=7 {
            let next = i + 1;
            std::fs::write(
                cwd.join(format!("docs/c{i}.md")),
                format!("C{i}; @c{next}.md"),
            )
            .unwrap();
        }
        let text = prompt(&zot_home, &home, &cwd, false);
        assert_eq!(text.matches("A imports").count(), 1, "{text}");
        assert!(text.contains("B imports"));
        assert!(text.contains("(imported by"));
        assert!(!text.contains("SKIPPED"), "code spans are no imports");
        assert!(
            !text.contains("SECRET"),
            "an untrusted project stays inside itself"
        );
        // CLAUDE.md (0) → a (1) → c1 (2) → … → c4 (5); c5 would be a sixth hop.
        assert!(text.contains("C4;") && !text.contains("C5;"), "{text}");
        let trusted = prompt(&zot_home, &home, &cwd, true);
        assert!(trusted.contains("SECRET"));

        // A CLAUDE.local.md that is a link out of the project is read only once trusted.
        std::os::unix::fs::symlink(home.join("secret.txt"), cwd.join("CLAUDE.local.md")).unwrap();
        assert!(!prompt(&zot_home, &home, &cwd, false).contains("SECRET"));
        assert!(prompt(&zot_home, &home, &cwd, true).contains("SECRET"));
    }
}
