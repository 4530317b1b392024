//! What a project command line runs from the project, for the trust
//! fingerprint: the files its words name (a hook's `sh tools/check.sh`, a
//! configured server's `node ./server.js`) and the module a `python3 -m` names.
//! Trust pins each of them with the directory it lies in (`docs/trust.md`).
//! Also [`Pins`], the pinned files as trusted for a run, which the host
//! config carries and the trust gate compares against.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The pinned files of a project as trusted for this run (path → hash).
pub type Pins = Arc<BTreeMap<String, String>>;

/// The paths in `base` (or below it) that `words` may run: each word that
/// is no option (`-x`) nor an existing directory, as a path, and for
/// `-m <module>` (or `-m<module>`) the module's top-level package
/// directory, or its `.py` file when there is no such directory. Paths that
/// do not exist (yet) are kept: trust watches them, since a file created
/// there later would run. Nothing is expanded.
pub fn named<'a>(words: impl IntoIterator<Item = &'a str>, base: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut module_next = false;
    for word in words {
        if std::mem::take(&mut module_next) {
            out.extend(module(word, base));
            continue;
        }
        if word == "-m" {
            module_next = true;
        } else if let Some(name) = word.strip_prefix("-m") {
            out.extend(module(name, base));
        } else if !word.is_empty() && !word.starts_with('-') {
            let path = base.join(word);
            if !path.is_dir() {
                out.push(path);
            }
        }
    }
    out
}

/// Where Python finds module `name` (`pkg.sub`) in `base`, the first entry
/// of `sys.path` for `python -m` run there: the package directory `pkg/`
/// (all of it runs or may be imported) or the file `pkg.py`.
fn module(name: &str, base: &Path) -> Vec<PathBuf> {
    let Some(top) = name
        .split('.')
        .next()
        .filter(|top| !top.is_empty() && top.chars().all(|c| c.is_alphanumeric() || c == '_'))
    else {
        return Vec::new();
    };
    let package = base.join(top);
    if package.is_dir() {
        return vec![package];
    }
    vec![package, base.join(format!("{top}.py"))]
}

/// The words of a shell command line as far as naming files goes:
/// `$CLAUDE_PROJECT_DIR` and `$ZOT_PROJECT_DIR` expanded to `project`,
/// quotes dropped (they join the pieces of a word in sh), split at blanks
/// and shell operators. The target of an output redirection (`> out.log`)
/// is written, not run, so it is left out (as is a descriptor, `2>`).
fn shell_words(command: &str, project: &Path) -> Vec<String> {
    let root = project.display().to_string();
    let mut line = command.to_owned();
    for var in ["CLAUDE_PROJECT_DIR", "ZOT_PROJECT_DIR"] {
        line = line
            .replace(&format!("${{{var}}}"), &root)
            .replace(&format!("${var}"), &root);
    }
    line.retain(|c| c != '"' && c != '\'');
    let mut words = Vec::new();
    let (mut word, mut written) = (String::new(), false);
    for c in line.chars().chain([' ']) {
        if c.is_whitespace() || "`;|&()<>=".contains(c) {
            // `2>`: a descriptor, no word.
            let descriptor = c == '>' && word.chars().all(|d| d.is_ascii_digit());
            if !word.is_empty() && !descriptor && !std::mem::take(&mut written) {
                words.push(std::mem::take(&mut word));
            }
            word.clear();
            written |= c == '>';
        } else {
            word.push(c);
        }
    }
    words
}

/// The files and modules in `project` a shell command line names (a
/// hook's command, a Markdown command's `` !`cmd` ``), relative ones taken
/// from the project, where those run.
pub fn named_by_shell(command: &str, project: &Path) -> Vec<PathBuf> {
    let words = shell_words(command, project);
    named(words.iter().map(String::as_str), project)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_and_python_modules_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path();
        std::fs::create_dir_all(base.join("tools")).unwrap();
        std::fs::write(base.join("tools/check.sh"), ". tools/helper.sh").unwrap();
        std::fs::create_dir_all(base.join("srv/api")).unwrap();
        std::fs::write(base.join("srv/__main__.py"), "").unwrap();
        std::fs::write(base.join("single.py"), "").unwrap();
        let found = named_by_shell(
            "sh \"$CLAUDE_PROJECT_DIR\"/tools/check.sh && python3 -m srv.api >>out.log; python3 -msingle --x -m missing 2> err",
            base,
        );
        let rel: Vec<_> = found
            .iter()
            .map(|p| p.strip_prefix(base).unwrap().display().to_string())
            .collect();
        assert_eq!(
            rel,
            [
                "sh",
                "tools/check.sh",
                "python3",
                "srv",
                "python3",
                "single",
                "single.py",
                "missing",
                "missing.py"
            ]
        );
    }
}
