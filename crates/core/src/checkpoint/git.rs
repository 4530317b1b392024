//! The system `git`, run on zot's own checkpoint repository with the
//! project as its work tree: no configuration, hooks, filters or fsmonitor
//! of the user's, and never the project's own `.git`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::error::CheckpointError;

/// Attributes that beat every `.gitattributes` of the project: files are
/// stored byte for byte (no end-of-line conversion, no filter such as LFS,
/// no encoding change), so a restore writes back exactly what was there.
const ATTRIBUTES: &str = "* -text !eol -filter -ident !working-tree-encoding\n";

/// `git` on one checkpoint repository, one work tree and one index.
#[derive(Debug, Clone)]
pub(super) struct Git {
    pub(super) git_dir: PathBuf,
    pub(super) work_tree: PathBuf,
    pub(super) index: PathBuf,
}

impl Git {
    /// Creates the repository when it is missing (private: 0700
    /// directories, 0600 files) and writes its attributes.
    pub(super) fn init(&self) -> Result<(), CheckpointError> {
        if !self.git_dir.join("HEAD").exists() {
            let dir = self.git_dir.display().to_string();
            let args = ["init", "--quiet", "--bare", "--template=", dir.as_str()];
            let mut cmd = self.command(&args);
            // `init` takes the directory as its argument, with no work tree.
            cmd.env_remove("GIT_DIR")
                .env_remove("GIT_WORK_TREE")
                .env_remove("GIT_INDEX_FILE");
            let out = cmd
                .output()
                .map_err(|e| CheckpointError::Git(format!("git init: {e}")))?;
            if !out.status.success() {
                return Err(failure(&args, &out));
            }
        }
        let info = self.git_dir.join("info");
        crate::private_files::private_dir(&info).map_err(|e| CheckpointError::io(&info, e))?;
        crate::private_files::write_atomically(
            &info.join("attributes"),
            ATTRIBUTES.as_bytes(),
            0o600,
        )
        .map_err(|e| CheckpointError::io(&info, e))
    }

    /// A command with the controlled environment: only `PATH` is kept of
    /// zot's, so no `GIT_*` variable, configuration file or template of
    /// the user's reaches it.
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("git");
        cmd.env_clear();
        if let Some(path) = std::env::var_os("PATH") {
            cmd.env("PATH", path);
        }
        cmd.env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_DIR", &self.git_dir)
            .env("GIT_WORK_TREE", &self.work_tree)
            .env("GIT_INDEX_FILE", &self.index)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_NO_REPLACE_OBJECTS", "1")
            // Paths are file names, never patterns.
            .env("GIT_LITERAL_PATHSPECS", "1")
            .env("LC_ALL", "C")
            .env("GIT_AUTHOR_NAME", "zot")
            .env("GIT_AUTHOR_EMAIL", "zot@localhost")
            .env("GIT_COMMITTER_NAME", "zot")
            .env("GIT_COMMITTER_EMAIL", "zot@localhost");
        for setting in [
            "core.hooksPath=/dev/null",
            "core.fsmonitor=false",
            "core.untrackedCache=false",
            "core.autocrlf=false",
            "core.safecrlf=false",
            "core.symlinks=true",
            "core.quotePath=false",
            "core.sharedRepository=0600",
            "gc.auto=0",
            "maintenance.auto=false",
            "advice.addEmbeddedRepo=false",
        ] {
            cmd.args(["-c", setting]);
        }
        cmd.args(args)
            .current_dir(&self.work_tree)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// Runs `git args` and returns its stdout.
    pub(super) fn output(&self, args: &[&str]) -> Result<Vec<u8>, CheckpointError> {
        let failed =
            |e: std::io::Error| CheckpointError::Git(format!("git {}: {e}", args.join(" ")));
        let out = self.command(args).output().map_err(failed)?;
        if out.status.success() {
            return Ok(out.stdout);
        }
        Err(failure(args, &out))
    }

    /// `git args` whose output is one line (an object id).
    pub(super) fn line(&self, args: &[&str]) -> Result<String, CheckpointError> {
        let out = self.output(args)?;
        Ok(String::from_utf8_lossy(&out).trim().to_owned())
    }

    /// `git add --ignore-errors args`: a file it could not read (exit 1)
    /// is left out with a warning in the log, not a failed snapshot.
    pub(super) fn add(&self, args: &[&str]) -> Result<(), CheckpointError> {
        let mut all = vec!["add", "--ignore-errors"];
        all.extend_from_slice(args);
        let failed =
            |e: std::io::Error| CheckpointError::Git(format!("git {}: {e}", all.join(" ")));
        let out = self.command(&all).output().map_err(failed)?;
        match out.status.code() {
            Some(0) => Ok(()),
            Some(1) => {
                let stderr = String::from_utf8_lossy(&out.stderr);
                tracing::warn!(stderr = %stderr.trim(), "checkpoint left out unreadable files");
                Ok(())
            }
            _ => Err(failure(&all, &out)),
        }
    }
}

fn failure(args: &[&str], out: &std::process::Output) -> CheckpointError {
    let stderr = String::from_utf8_lossy(&out.stderr);
    CheckpointError::Git(format!(
        "git {} failed: {}",
        args.first().copied().unwrap_or_default(),
        stderr.trim()
    ))
}

/// The NUL-separated fields of `-z` output.
pub(super) fn nul_fields(out: &[u8]) -> impl Iterator<Item = &[u8]> {
    out.split(|b| *b == 0).filter(|f| !f.is_empty())
}

/// Whether `path` (relative, `/`-separated, as git prints it) stays inside
/// the work tree: no absolute path, no `..`, no empty part.
pub(super) fn safe_relative(path: &str) -> bool {
    !path.is_empty()
        && !Path::new(path).is_absolute()
        && path
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != ".." && part != ".git")
}
