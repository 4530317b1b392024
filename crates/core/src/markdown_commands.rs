//! Markdown commands: Claude Code's custom slash commands, `.md` files under
//! `.claude/commands/` (the project's) and `~/.claude/commands/` (the
//! user's). Owns finding them, their names (`/name`, `/folder:name`), and
//! expanding one into the prompt it stands for: `$ARGUMENTS` and `$1`…,
//! `@path` file contents and `` !`cmd` `` output. Which command wins a
//! name is the front end's registry's business, not this module's.

use std::path::{Path, PathBuf};
use std::time::Duration;

use zot_protocol::frontmatter;
use zot_protocol::markdown_command::{Piece, pieces};
use zot_sandbox::{Ended, ShellCall};

use crate::file_refs;

/// The variable Claude Code's commands and hooks find the project in.
pub const CLAUDE_PROJECT_DIR_ENV: &str = "CLAUDE_PROJECT_DIR";

/// Where the commands live (named in `zot-protocol`, which the host's trust
/// gate shares).
pub use zot_protocol::layout::COMMANDS_DIR;

/// How deep folders under [`COMMANDS_DIR`] are searched (`/a:b:c:d:name`);
/// deeper folders are noise, and the bound keeps a symlink loop finite.
pub const MAX_FOLDER_DEPTH: usize = 4;

/// How long one `` !`cmd` `` may run before it is killed. Such commands
/// gather context (`git status`, `git diff`); half a minute covers a slow
/// repository, and the user is waiting for the prompt meanwhile.
pub const SHELL_TIMEOUT: Duration = Duration::from_secs(30);

/// The most bytes of one `` !`cmd` ``'s stdout (and of its stderr) that go
/// into the prompt; the bash tool's cap for the model is the same.
pub const MAX_SHELL_OUTPUT: usize = crate::tools::bash::MAX_OUTPUT_BYTES;

/// The most characters of a body's first line used as a description when
/// the front matter has none.
const DESCRIPTION_FROM_BODY: usize = 80;

/// Whose command it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `<project>/.claude/commands`: `` !`cmd` `` runs only in a trusted project.
    Project,
    /// `~/.claude/commands`.
    User,
}

impl Scope {
    pub fn label(self) -> &'static str {
        match self {
            Self::Project => "project",
            Self::User => "user",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkdownCommand {
    /// `name`, or `folder:name` for a file in a subfolder.
    pub name: String,
    pub description: Option<String>,
    /// Front matter `argument-hint`: what arguments it takes.
    pub argument_hint: Option<String>,
    pub path: PathBuf,
    pub scope: Scope,
}

/// Every command of the project, then the user's, sorted by name within
/// each; a project command hides a user command of the same name (names
/// match case-insensitively, as every slash command does). The second value
/// lists files skipped because their name cannot be typed as a command.
pub fn discover(project: &Path, home: Option<&Path>) -> (Vec<MarkdownCommand>, Vec<String>) {
    let mut commands: Vec<MarkdownCommand> = Vec::new();
    let mut skipped = Vec::new();
    let dirs = [(Some(project), Scope::Project), (home, Scope::User)];
    for (base, scope) in dirs {
        let Some(base) = base else { continue };
        let root = base.join(COMMANDS_DIR);
        let mut found = Vec::new();
        collect(&root, &[], &mut found);
        found.sort();
        for (parts, path) in found {
            let name = parts.join(":");
            if !valid_name(&name) {
                skipped.push(format!(
                    "{}: not a command name (letters, digits, `-`, `_` only)",
                    path.display()
                ));
                continue;
            }
            if commands.iter().any(|c| c.name.eq_ignore_ascii_case(&name)) {
                continue;
            }
            commands.push(load(name, path, scope));
        }
    }
    (commands, skipped)
}

/// `(name parts, file)` of every `.md` file below `dir`.
fn collect(dir: &Path, folders: &[String], out: &mut Vec<(Vec<String>, PathBuf)>) {
    if folders.len() > MAX_FOLDER_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let mut parts = folders.to_vec();
        if path.is_dir() {
            parts.push(name);
            collect(&path, &parts, out);
        } else if let Some(stem) = name.strip_suffix(".md")
            && path.is_file()
        {
            parts.push(stem.to_owned());
            out.push((parts, path));
        }
    }
}

fn valid_name(name: &str) -> bool {
    name.split(':').all(|part| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    })
}

fn load(name: String, path: PathBuf, scope: Scope) -> MarkdownCommand {
    let text = file_refs::read_capped(&path).unwrap_or_default();
    let front = frontmatter::parse(&text);
    let field = |key: &str| {
        front
            .get(key)
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let description = field("description").or_else(|| {
        let first = front.body.lines().map(str::trim).find(|l| !l.is_empty())?;
        let first = first.trim_start_matches('#').trim();
        Some(first.chars().take(DESCRIPTION_FROM_BODY).collect())
    });
    MarkdownCommand {
        name,
        description,
        argument_hint: field("argument-hint"),
        path,
        scope,
    }
}

/// What an expansion may do beyond substituting arguments.
#[derive(Debug, Clone, Copy)]
pub struct Expansion<'a> {
    /// The project directory: `` !`cmd` `` runs there, `@path` is relative to it.
    pub cwd: &'a Path,
    pub home: Option<&'a Path>,
    /// Whether the project is trusted: a project command runs `` !`cmd` ``
    /// and reads files outside the project only then.
    pub project_trusted: bool,
}

impl MarkdownCommand {
    /// The prompt this command stands for with `args`.
    pub async fn expand(&self, args: &str, x: Expansion<'_>) -> Result<String, String> {
        let trusted = self.scope == Scope::User || x.project_trusted;
        // A project's command that links out of it (to `~/.ssh/id_rsa`)
        // would send that file to the model: only once the project is trusted.
        if !trusted && !inside_project(&self.path, x.cwd) {
            return Err(format!(
                "{} links outside the project, which is not trusted (`zot trust`)",
                self.path.display()
            ));
        }
        let text = file_refs::read_capped(&self.path)
            .map_err(|e| format!("cannot read {}: {e}", self.path.display()))?;
        let template = frontmatter::parse(&text).body;
        let positional = split_args(args);
        let mut out = String::new();
        for piece in pieces(template) {
            match piece {
                Piece::Text(text) => {
                    let text = substitute(text, args, &positional);
                    out.push_str(&include_files(&text, x, trusted));
                }
                Piece::Shell(cmd) => {
                    let cmd = substitute(cmd, args, &positional);
                    if trusted {
                        out.push_str(&run_shell(&cmd, x.cwd, SHELL_TIMEOUT).await);
                    } else {
                        out.push_str(&format!(
                            "[!`{cmd}` not run: this project is not trusted (`zot trust`)]"
                        ));
                    }
                }
            }
        }
        if !mentions_arguments(template) && !args.trim().is_empty() {
            out = format!("{}\n\nARGUMENTS: {}", out.trim_end(), args.trim());
        }
        Ok(out.trim().to_owned())
    }
}

fn mentions_arguments(template: &str) -> bool {
    template.contains("$ARGUMENTS")
        || template
            .match_indices('$')
            .any(|(i, _)| template[i + 1..].starts_with(|c: char| c.is_ascii_digit()))
}

/// Words of `args`, shell-like: quotes group words and are removed.
fn split_args(args: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in args.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// `$ARGUMENTS` and `$1`, `$2`… replaced in one pass (so an argument that
/// contains `$1` stays as typed); a missing positional is empty.
fn substitute(text: &str, args: &str, positional: &[String]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            out.push_str(args.trim());
            rest = tail;
            continue;
        }
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        match after[..digits].parse::<usize>() {
            Ok(n) if n > 0 => {
                out.push_str(positional.get(n - 1).map_or("", String::as_str));
            }
            _ => out.push_str(&rest[i..i + 1 + digits]),
        }
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

/// Each `@path` naming a file replaced by the file, or by a note saying why not.
fn include_files(text: &str, x: Expansion<'_>, trusted: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for reference in file_refs::references(text) {
        out.push_str(&text[last..reference.range.start]);
        last = reference.range.end;
        out.push_str(&include_one(&reference.path, x, trusted));
    }
    out.push_str(&text[last..]);
    out
}

fn include_one(path: &str, x: Expansion<'_>, trusted: bool) -> String {
    let Some(file) = file_refs::resolve(path, x.cwd, x.home) else {
        return format!("[@{path}: no home directory to resolve it in]");
    };
    if file.canonicalize().is_err() {
        return format!("[@{path}: no such file]");
    }
    if !trusted && !inside_project(&file, x.cwd) {
        // No `@` left: the prompt's own references are attached when it is
        // sent (`prompt_files`), and this one must stay unread.
        return format!("[{path}: not read: outside the project, which is not trusted]");
    }
    if file.is_dir() {
        return format!("[@{path}: a directory, not a file]");
    }
    match file_refs::read_capped(&file) {
        Ok(content) => format!("<file path=\"{path}\">\n{}\n</file>", content.trim_end()),
        Err(e) => format!("[@{path}: cannot read: {e}]"),
    }
}

/// Whether `file`, links resolved, lies in the project `cwd`.
fn inside_project(file: &Path, cwd: &Path) -> bool {
    let project = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    file.canonicalize()
        .is_ok_and(|real| real.starts_with(project))
}

/// Runs `cmd` with zot-sandbox's shell runner in `cwd` (stdin closed,
/// `CLAUDE_PROJECT_DIR` and `ZOT_PROJECT_DIR` set, otherwise the environment
/// the bash tool gets) and returns its output for the prompt: stdout, then
/// stderr, each with a note when it was cut, and a note when it failed.
/// After `limit` it is killed with its group; what it leaves running in the
/// background goes when it exits; dropping the future (the user aborted the
/// prompt) kills its group.
async fn run_shell(cmd: &str, cwd: &Path, limit: Duration) -> String {
    let project = cwd.display().to_string();
    let env = [
        (zot_sandbox::PROJECT_DIR_ENV.to_owned(), project.clone()),
        (CLAUDE_PROJECT_DIR_ENV.to_owned(), project),
    ];
    let run = zot_sandbox::run_shell(ShellCall {
        command: cmd,
        cwd,
        // You, or a project you trusted, wrote it: `--sandbox` confines the
        // model's bash tool, not this.
        scope: None,
        env: &env,
        sandbox: None,
        input: None,
        timeout: limit,
        max_output: MAX_SHELL_OUTPUT,
    })
    .await;
    let mut text = String::new();
    for stream in [&run.stdout, &run.stderr] {
        let mut part = stream.text.trim_end().to_owned();
        if stream.dropped > 0 {
            part.push_str(&format!("\n[… cut: {} more bytes]", stream.dropped));
        }
        if part.is_empty() {
            continue;
        }
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&part);
    }
    let note = match run.ended {
        Ended::Exited(0) => return text,
        Ended::Exited(code) => format!("[!`{cmd}` exited with {code}]"),
        Ended::Signalled(_) => format!("[!`{cmd}` was killed by a signal]"),
        Ended::Failed(why) => format!("[!`{cmd}`: {why}]"),
        Ended::TimedOut => format!("[!`{cmd}` timed out after {} s]", limit.as_secs()),
    };
    if text.is_empty() {
        note
    } else {
        format!("{text}\n{note}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_substituted_once() {
        let words = split_args(r#"12 "high priority" it's"#);
        assert_eq!(words, ["12", "high priority", "its"]);
        let text = substitute(
            "PR $1 ($2) [$3] all: $ARGUMENTS; $0 $x $",
            "a $1 b",
            &split_args("a $1 b"),
        );
        assert_eq!(text, "PR a ($1) [b] all: a $1 b; $0 $x $");
    }

    #[test]
    fn shell_pieces_need_a_closing_backtick_on_their_line() {
        assert_eq!(
            pieces("a !`git status` b !`x\ny` c"),
            [
                Piece::Text("a "),
                Piece::Shell("git status"),
                Piece::Text(" b !`"),
                Piece::Text("x\ny` c"),
            ]
        );
    }

    #[tokio::test]
    async fn shell_output_and_how_it_ended_go_into_the_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        let text = run_shell(
            "head -c 60000 /dev/zero | tr '\\0' x; echo oops >&2; exit 3",
            cwd,
            SHELL_TIMEOUT,
        )
        .await;
        assert!(
            text.starts_with(&"x".repeat(MAX_SHELL_OUTPUT)),
            "{}",
            &text[..40]
        );
        assert!(
            text.contains(&format!(
                "[… cut: {} more bytes]\noops\n",
                60000 - MAX_SHELL_OUTPUT
            )),
            "{}",
            &text[MAX_SHELL_OUTPUT..]
        );
        assert!(text.ends_with("exited with 3]"));

        // Past the limit it is killed (zot-sandbox's runner kills its group
        // and is tested there), with what it printed so far.
        let text = run_shell("echo started; sleep 600", cwd, Duration::from_secs(1)).await;
        assert_eq!(
            text,
            "started\n[!`echo started; sleep 600` timed out after 1 s]"
        );
        let text = run_shell("kill -TERM $$", cwd, SHELL_TIMEOUT).await;
        assert_eq!(text, "[!`kill -TERM $$` was killed by a signal]");
    }

    proptest::proptest! {
        #[test]
        fn any_template_and_arguments_expand_without_panicking(template in "[ -~\n$!`@é]{0,120}", args in "[ -~\"'é]{0,40}") {
            let words = split_args(&args);
            for piece in pieces(&template) {
                let (Piece::Text(text) | Piece::Shell(text)) = piece;
                proptest::prop_assert!(template.contains(text));
                let _ = substitute(text, &args, &words);
            }
            let _ = mentions_arguments(&template);
        }
    }

    #[test]
    fn names_come_from_paths_and_the_project_wins() {
        let dir = tempfile::tempdir().unwrap();
        let (project, home) = (dir.path().join("p"), dir.path().join("h"));
        let write = |path: PathBuf, text: &str| {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(
            project.join(".claude/commands/Review.md"),
            "---\ndescription: project review\n---\nbody",
        );
        write(
            project.join(".claude/commands/git/commit.md"),
            "# Commit it\n\nbody",
        );
        write(project.join(".claude/commands/bad name.md"), "x");
        write(home.join(".claude/commands/review.md"), "user review");
        write(
            home.join(".claude/commands/mine.md"),
            "---\nargument-hint: [file]\n---\nmine",
        );
        let (commands, skipped) = discover(&project, Some(&home));
        let rows: Vec<(&str, Option<&str>, Scope)> = commands
            .iter()
            .map(|c| (c.name.as_str(), c.description.as_deref(), c.scope))
            .collect();
        assert_eq!(
            rows,
            [
                ("Review", Some("project review"), Scope::Project),
                ("git:commit", Some("Commit it"), Scope::Project),
                ("mine", Some("mine"), Scope::User),
            ]
        );
        assert_eq!(commands[2].argument_hint.as_deref(), Some("[file]"));
        assert_eq!(skipped.len(), 1, "{skipped:?}");
    }
}
