//! Managing installed extensions on disk: finding one by name, installing
//! from a path or a git URL (staged beside the destination, validated, then
//! renamed into place), removing, and enabling or disabling.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::atomic_file::write_atomically;
use crate::config::HostConfig;
use crate::manifest::{Dialect, MANIFEST_FILE, Manifest, ManifestError};
use crate::scope::Scope;

#[derive(Debug, thiserror::Error)]
pub enum ManageError {
    #[error("no extension named \"{name}\" (looked in {})", looked.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" and "))]
    NotFound { name: String, looked: Vec<PathBuf> },
    #[error(
        "\"{name}\" is installed in both scopes: project ({}) and global ({}); pass --project or --global",
        project.display(),
        global.display()
    )]
    BothScopes {
        name: String,
        project: PathBuf,
        global: PathBuf,
    },
    #[error("\"{name}\" matches several extensions: {}", dirs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    Several { name: String, dirs: Vec<PathBuf> },
    #[error("destination {} already exists; remove it first", .0.display())]
    Exists(PathBuf),
    #[error("{} is not a directory", .0.display())]
    NotADirectory(PathBuf),
    #[error("cannot tell the extension's name from \"{0}\"")]
    NoName(String),
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("git clone {url} failed: {detail}")]
    Clone { url: String, detail: String },
    /// An installed ecosystem's own answer about one of its extensions
    /// (`crate::ecosystem`), in its words.
    #[error("{0}")]
    Ecosystem(String),
    #[error(
        "an extension named \"{name}\" is already installed in {}; installing a second one would change which of them loads (pass --force to install it anyway)",
        existing.display()
    )]
    NameClash { name: String, existing: PathBuf },
    #[error(
        "refusing to install into {}: {} is a symlink that leads out of the project ({})",
        root.display(),
        link.display(),
        target.display()
    )]
    LinkOutOfProject {
        root: PathBuf,
        link: PathBuf,
        target: PathBuf,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ManageError + '_ {
    move |error| ManageError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// Which scope a name is looked up in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    Either,
    Project,
    Global,
}

/// An installed extension directory.
#[derive(Debug, Clone)]
pub struct Installed {
    pub scope: Scope,
    pub dir: PathBuf,
}

/// Finds an installed extension by manifest name or directory name (the
/// same rule for every subcommand). An invalid manifest still matches by
/// directory name, so a broken extension can be removed.
pub fn find(config: &HostConfig, name: &str, which: Which) -> Result<Installed, ManageError> {
    let roots = [
        (
            Scope::Project,
            config.project_root(),
            which != Which::Global,
        ),
        (Scope::Global, config.global_root(), which != Which::Project),
    ];
    let mut hits: Vec<Installed> = Vec::new();
    for (scope, root, wanted) in &roots {
        if !wanted {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(root) else {
            continue;
        };
        let mut dirs: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
        dirs.sort();
        for dir in dirs.into_iter().filter(|d| d.is_dir()) {
            let by_dir = dir.file_name().is_some_and(|n| n == name);
            let by_manifest = Manifest::load(&dir).is_ok_and(|m| m.name == name);
            if by_dir || by_manifest {
                hits.push(Installed { scope: *scope, dir });
            }
        }
    }
    let project: Vec<&Installed> = hits.iter().filter(|h| h.scope == Scope::Project).collect();
    let global: Vec<&Installed> = hits.iter().filter(|h| h.scope == Scope::Global).collect();
    match (project.as_slice(), global.as_slice()) {
        ([], []) => Err(ManageError::NotFound {
            name: name.to_owned(),
            looked: roots.iter().filter(|r| r.2).map(|r| r.1.clone()).collect(),
        }),
        ([one], []) | ([], [one]) => Ok((*one).clone()),
        ([p], [g]) => Err(ManageError::BothScopes {
            name: name.to_owned(),
            project: p.dir.clone(),
            global: g.dir.clone(),
        }),
        _ => Err(ManageError::Several {
            name: name.to_owned(),
            dirs: hits.into_iter().map(|h| h.dir).collect(),
        }),
    }
}

/// Sets `enabled` in `<dir>/extension.json`, keeping every other field and
/// the key order; written atomically.
pub fn set_enabled(dir: &Path, enabled: bool) -> Result<(), ManageError> {
    let path = dir.join(MANIFEST_FILE);
    let text = std::fs::read_to_string(&path).map_err(io(&path))?;
    let mut value: Value = serde_json::from_str(&text).map_err(|e| {
        ManageError::Manifest(ManifestError {
            path: path.clone(),
            field: None,
            message: format!("invalid JSON: {e}"),
        })
    })?;
    let Some(map) = value.as_object_mut() else {
        return Err(ManageError::Manifest(ManifestError {
            path,
            field: None,
            message: "must be a JSON object".into(),
        }));
    };
    map.insert("enabled".to_owned(), Value::Bool(enabled));
    let mut out = serde_json::to_vec_pretty(&value).map_err(|e| io(&path)(e.into()))?;
    out.push(b'\n');
    write_atomically(&path, &out).map_err(io(&path))
}

/// Deletes an installed extension directory (a symlinked one loses only the link).
pub fn remove(dir: &Path) -> Result<(), ManageError> {
    let meta = std::fs::symlink_metadata(dir).map_err(io(dir))?;
    if meta.file_type().is_symlink() {
        std::fs::remove_file(dir).map_err(io(dir))
    } else {
        std::fs::remove_dir_all(dir).map_err(io(dir))
    }
}

/// Where an install comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Path(PathBuf),
    Git(String),
}

impl Source {
    /// `https://`, `git@`, `ssh://`, `file://` or a `.git` suffix mean git,
    /// unless a local directory of that name exists (`x.git` may be a path).
    pub fn parse(src: &str) -> Self {
        let url = ["https://", "git@", "ssh://", "file://"]
            .iter()
            .any(|p| src.starts_with(p));
        if !url && Path::new(src).is_dir() {
            return Self::Path(PathBuf::from(src));
        }
        let git = url || src.trim_end_matches('/').ends_with(".git");
        if git {
            Self::Git(src.to_owned())
        } else {
            Self::Path(PathBuf::from(src))
        }
    }

    /// The directory name the install gets: the path's or URL's last part, minus `.git`.
    pub fn dir_name(&self) -> Option<String> {
        let last = match self {
            Self::Path(path) => {
                let path = std::path::absolute(path).ok()?;
                let normal: PathBuf = path.components().collect();
                normal.file_name()?.to_string_lossy().into_owned()
            }
            Self::Git(url) => {
                let trimmed = url.trim_end_matches('/');
                trimmed.rsplit(['/', ':']).next()?.to_owned()
            }
        };
        let name = last.strip_suffix(".git").unwrap_or(&last).to_owned();
        (!name.is_empty() && name != "." && name != "..").then_some(name)
    }
}

/// How [`install_with`] may install.
#[derive(Debug, Clone, Default)]
pub struct InstallOptions {
    /// Install even when an extension of the same manifest name is already
    /// installed in the destination root.
    pub force: bool,
    /// The project a project install goes into: the root's `.zot` and
    /// `.zot/extensions` must not be symlinks that lead out of it.
    pub project: Option<PathBuf>,
    /// The nimlet root of the same scope (`~/.agents/extensions` or
    /// `./.agents/extensions`), also searched for a name clash.
    pub nimlet_root: Option<PathBuf>,
}

/// [`install_with`] with the default options: a name clash is refused.
pub fn install(src: &str, root: &Path) -> Result<(PathBuf, Manifest), ManageError> {
    install_with(src, root, &InstallOptions::default())
}

/// Installs `src` into `root/<name>`: staged in a temp dir beside it,
/// validated as a manifest, then renamed into place. Any failure removes the
/// staging dir and leaves nothing behind. Returns the installed dir and manifest.
pub fn install_with(
    src: &str,
    root: &Path,
    options: &InstallOptions,
) -> Result<(PathBuf, Manifest), ManageError> {
    if let Some(project) = &options.project {
        check_inside(project, root)?;
    }
    let source = Source::parse(src);
    let name = source
        .dir_name()
        .ok_or_else(|| ManageError::NoName(src.to_owned()))?;
    let dest = root.join(&name);
    if dest.symlink_metadata().is_ok() {
        return Err(ManageError::Exists(dest));
    }
    if let Source::Path(path) = &source
        && !path.is_dir()
    {
        return Err(ManageError::NotADirectory(path.clone()));
    }
    std::fs::create_dir_all(root).map_err(io(root))?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let staging = root.join(format!(
        ".zot-install-{name}-{}-{stamp}",
        std::process::id()
    ));
    let staged = stage(&source, &staging).and_then(|()| {
        let manifest = Manifest::load(&staging)?;
        if !options.force
            && let Some(existing) =
                same_name(root, Dialect::Zot, &manifest.name, &staging).or_else(|| {
                    let nimlet = options.nimlet_root.as_deref()?;
                    same_name(nimlet, Dialect::Nimlet, &manifest.name, &staging)
                })
        {
            return Err(ManageError::NameClash {
                name: manifest.name.clone(),
                existing,
            });
        }
        if dest.symlink_metadata().is_ok() {
            return Err(ManageError::Exists(dest.clone()));
        }
        std::fs::rename(&staging, &dest).map_err(io(&dest))?;
        Ok(manifest)
    });
    match staged {
        Ok(manifest) => {
            // The manifest was read in the staging dir; point it at its home.
            let manifest = Manifest {
                path: dest.join(MANIFEST_FILE),
                dir: dest.clone(),
                ..manifest
            };
            Ok((dest, manifest))
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            Err(e)
        }
    }
}

/// An extension directory in `root` (other than `except`) whose manifest,
/// read as discovery reads it, has the name `name`.
fn same_name(root: &Path, dialect: Dialect, name: &str, except: &Path) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|d| d != except && d.is_dir())
        .collect();
    dirs.sort();
    dirs.into_iter()
        .find(|dir| Manifest::load_in(dir, dialect).is_ok_and(|m| m.name == name))
}

/// Refuses a root whose components below `project` (`.zot`,
/// `.zot/extensions`) are symlinks leading out of the project.
fn check_inside(project: &Path, root: &Path) -> Result<(), ManageError> {
    let Ok(below) = root.strip_prefix(project) else {
        return Ok(());
    };
    let home = project.canonicalize().map_err(io(project))?;
    let mut path = project.to_path_buf();
    for part in below.components() {
        path.push(part);
        let Ok(meta) = path.symlink_metadata() else {
            break;
        };
        if !meta.file_type().is_symlink() {
            continue;
        }
        let target = std::fs::read_link(&path).map_err(io(&path))?;
        // A dangling link is judged by where it points, read lexically.
        let resolved = path.canonicalize().unwrap_or_else(|_| {
            let base = path
                .parent()
                .map(|p| p.canonicalize().unwrap_or(p.to_path_buf()));
            lexical(&base.unwrap_or_default().join(&target))
        });
        if !resolved.starts_with(&home) {
            return Err(ManageError::LinkOutOfProject {
                root: root.to_path_buf(),
                link: path,
                target: resolved,
            });
        }
    }
    Ok(())
}

/// `path` with `.` and `..` resolved as text.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

fn stage(source: &Source, staging: &Path) -> Result<(), ManageError> {
    match source {
        Source::Path(path) => copy_tree(path, staging),
        Source::Git(url) => {
            let output = Command::new("git")
                .args(["clone", "--depth", "1", "--quiet", "--", url])
                .arg(staging)
                .stdin(std::process::Stdio::null())
                .output()
                .map_err(|e| ManageError::Clone {
                    url: url.clone(),
                    detail: format!("cannot run git: {e}"),
                })?;
            if output.status.success() {
                Ok(())
            } else {
                let stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
                Err(ManageError::Clone {
                    url: url.clone(),
                    detail: format!("{} ({})", stderr, output.status),
                })
            }
        }
    }
}

/// Copies a directory tree; symlinks are copied as links, never followed.
fn copy_tree(from: &Path, to: &Path) -> Result<(), ManageError> {
    std::fs::create_dir(to).map_err(io(to))?;
    let mut entries: Vec<_> = std::fs::read_dir(from)
        .map_err(io(from))?
        .collect::<Result<_, _>>()
        .map_err(io(from))?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let src = entry.path();
        let dst = to.join(entry.file_name());
        let kind = entry.file_type().map_err(io(&src))?;
        if kind.is_symlink() {
            let target = std::fs::read_link(&src).map_err(io(&src))?;
            std::os::unix::fs::symlink(&target, &dst).map_err(io(&dst))?;
        } else if kind.is_dir() {
            copy_tree(&src, &dst)?;
        } else if kind.is_file() {
            std::fs::copy(&src, &dst).map_err(io(&src))?;
        } else {
            return Err(ManageError::Io {
                path: src,
                error: std::io::Error::other("not a regular file, directory or symlink"),
            });
        }
    }
    Ok(())
}
