//! From a scope to absolute paths for one program: the places a scope names,
//! plus what every scoped process is always granted (system directories,
//! its own directory, its executable and the interpreter of a script).

use std::ffi::OsStr;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::scope::{Net, Place, Scope};

/// Read and execute, always, for every scoped process: where programs,
/// libraries and system configuration live (`/sys/fs/cgroup`: node reads
/// its memory limit there).
const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/bin",
    "/sbin",
    "/etc",
    "/opt",
    "/proc",
    "/sys/fs/cgroup",
];

/// Read and write, always: the harmless devices. (Not `/dev/tty`: a
/// confined process has no controlling terminal.)
pub(crate) const DEVICES_RW: &[&str] = &["/dev/null", "/dev/zero"];

/// Read, always.
const DEVICES_READ: &[&str] = &["/dev/urandom"];

/// Interpreters a launcher script may start without naming them in a `#!`
/// line (`exec python3 main.py`): their installs found on `PATH` are always
/// readable, so a version-manager install (pyenv, nvm) works in a scope.
const INTERPRETERS: &[&str] = &["python3", "python", "node"];

/// How many `#!` hops are followed to find the real interpreter (a
/// version-manager shim is a script whose interpreter is `env`).
const MAX_SHEBANG_HOPS: usize = 4;

/// The longest `#!` line read; the kernel's own limit is 256 bytes.
const MAX_SHEBANG_BYTES: usize = 256;

/// What the named places mean for one process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Places {
    pub project: PathBuf,
    pub data: PathBuf,
    pub tmp: PathBuf,
    pub home: PathBuf,
}

impl Places {
    /// The absolute path of `place` (`~` expanded), lexically normalised,
    /// then with every symbolic link along it resolved: the path the kernel
    /// will grant, so a link under the project to a directory outside it is
    /// not taken for a place under the project.
    pub fn path(&self, place: &Place) -> PathBuf {
        real(&self.lexical(place))
    }

    /// `scope` with each of its paths ([`Place::Path`]) as [`Places::path`]
    /// resolves it: what narrowing and `zot ext permissions` work on.
    pub fn resolved(&self, scope: &Scope) -> Scope {
        let resolve = |places: &[Place]| -> Vec<Place> {
            places
                .iter()
                .map(|place| match place {
                    Place::Path(_) => Place::Path(self.path(place).display().to_string()),
                    named => named.clone(),
                })
                .collect()
        };
        Scope {
            read: resolve(&scope.read),
            write: resolve(&scope.write),
            ..scope.clone()
        }
    }

    /// `place` as an absolute path, lexically normalised.
    fn lexical(&self, place: &Place) -> PathBuf {
        let path = match place {
            Place::Project => self.project.clone(),
            Place::Data => self.data.clone(),
            Place::Tmp => self.tmp.clone(),
            Place::Home => self.home.clone(),
            Place::Path(p) if p == "~" => self.home.clone(),
            Place::Path(p) => match p.strip_prefix("~/") {
                Some(rest) => self.home.join(rest),
                None => PathBuf::from(p),
            },
        };
        normalise(&path)
    }

    /// Whether `inner` lies under (or is) `outer`: what policy narrowing asks.
    pub fn under(&self, inner: &Place, outer: &Place) -> bool {
        self.path(inner).starts_with(self.path(outer))
    }
}

/// `path` with its symbolic links resolved: its longest existing ancestor
/// made canonical, the rest appended as written.
fn real(path: &Path) -> PathBuf {
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        if let Ok(mut real) = existing.canonicalize() {
            real.extend(rest.iter().rev());
            return real;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name);
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// Drops `.` and resolves `..` without touching the file system, so a path
/// written as `/allowed/../etc` is not mistaken for one under `/allowed`.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// A scope made concrete for one process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Read and execute.
    pub read: Vec<PathBuf>,
    /// Read, write and execute.
    pub write: Vec<PathBuf>,
    /// Read and write, device files.
    pub devices: Vec<PathBuf>,
    pub net: Net,
}

/// The paths `scope` grants to `program` started from `dir` (the extension
/// directory, read and execute only), with `places` giving the names their
/// meaning. `search_path` is the `PATH` used to find a bare program name
/// and a script's interpreter; `extra_read` are more read-only grants
/// (`PYTHONPATH`/`NODE_PATH` entries). Paths that do not exist are left
/// out: Landlock can only name existing files.
pub fn resolve(
    scope: &Scope,
    places: &Places,
    program: &Path,
    dir: Option<&Path>,
    search_path: Option<&OsStr>,
) -> Resolved {
    let mut read: Vec<PathBuf> = SYSTEM_READ.iter().map(PathBuf::from).collect();
    if let Some(dir) = dir {
        read.push(dir.to_path_buf());
    }
    let interpreters = INTERPRETERS.iter().map(Path::new);
    for program in std::iter::once(program).chain(interpreters) {
        for found in executables(program, search_path) {
            read.push(install_root(&found));
        }
    }
    for var in ["PYTHONPATH", "NODE_PATH"] {
        if let Some(value) = std::env::var_os(var) {
            read.extend(std::env::split_paths(&value).filter(|p| p.is_absolute()));
        }
    }
    read.extend(scope.read.iter().map(|p| places.path(p)));
    let mut write: Vec<PathBuf> = scope.write.iter().map(|p| places.path(p)).collect();
    // Its own data and temporary directories are always its to keep.
    write.push(places.data.clone());
    write.push(places.tmp.clone());
    let mut devices: Vec<PathBuf> = DEVICES_RW.iter().map(PathBuf::from).collect();
    let device_reads = DEVICES_READ.iter().map(PathBuf::from);
    read.extend(device_reads);
    read.retain(|p| p.exists());
    write.retain(|p| p.exists());
    devices.retain(|p| p.exists());
    read.sort();
    read.dedup();
    write.sort();
    write.dedup();
    Resolved {
        read,
        write,
        devices,
        net: scope.net.clone(),
    }
}

/// What a scoped program needs to be able to run: where its executable
/// lives and, for a script, each interpreter along its `#!` chain.
fn executables(program: &Path, search_path: Option<&OsStr>) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut next = find_program(program, search_path);
    for _ in 0..MAX_SHEBANG_HOPS {
        let Some(path) = next.take() else { break };
        let real = path.canonicalize().unwrap_or_else(|_| path.clone());
        next = shebang(&real).and_then(|(interp, arg)| {
            let is_env = interp.file_name() == Some(OsStr::new("env"));
            match arg {
                Some(name) if is_env => {
                    found.push(interp);
                    find_program(Path::new(&name), search_path)
                }
                _ => Some(interp),
            }
        });
        if real != path {
            found.push(path);
        }
        found.push(real);
    }
    found
}

/// `program` itself when it has a directory part, else the first match on
/// `search_path`.
fn find_program(program: &Path, search_path: Option<&OsStr>) -> Option<PathBuf> {
    if program.components().count() > 1 {
        return Some(program.to_path_buf());
    }
    std::env::split_paths(search_path?)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// The interpreter of a `#!` script and its first argument (for
/// `#!/usr/bin/env python3`: `/usr/bin/env` and `python3`).
fn shebang(path: &Path) -> Option<(PathBuf, Option<String>)> {
    use std::io::Read;
    let mut head = [0u8; MAX_SHEBANG_BYTES];
    let n = std::fs::File::open(path).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = line.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split_whitespace();
    let interp = PathBuf::from(words.next()?);
    // `env -S python3 -u` and `env python3`: the first word that is not an option.
    let arg = words.find(|w| !w.starts_with('-')).map(str::to_owned);
    Some((interp, arg))
}

/// The directory granted for an executable: under a system directory the
/// file alone (its directory is granted anyway); elsewhere, such as a
/// version manager's install under the home directory (pyenv, nvm), the
/// install root (the parent of its `bin`), where its libraries live.
fn install_root(program: &Path) -> PathBuf {
    if SYSTEM_READ.iter().any(|dir| program.starts_with(dir)) {
        return program.to_path_buf();
    }
    match program.parent() {
        Some(bin) if bin.file_name() == Some(OsStr::new("bin")) || bin.ends_with("shims") => bin
            .parent()
            .map_or_else(|| bin.to_path_buf(), Path::to_path_buf),
        Some(dir) => dir.to_path_buf(),
        None => program.to_path_buf(),
    }
}

/// A private temporary directory, `$ZOT_HOME/tmp/<name>-<pid>-<n>/` (mode
/// 0700), removed when dropped.
#[derive(Debug)]
pub struct PrivateTmp {
    path: PathBuf,
}

impl PrivateTmp {
    /// The path it has for `name` in this zot process, less its number.
    pub fn path_for(zot_home: &Path, name: &str) -> PathBuf {
        zot_home
            .join("tmp")
            .join(format!("{name}-{}", std::process::id()))
    }

    /// Creates a new one (a leftover of an earlier zot with the same pid is
    /// removed first); each has a number of its own, so two processes of
    /// one name (hooks running side by side) never share one.
    pub fn create(zot_home: &Path, name: &str) -> io::Result<Self> {
        use std::os::unix::fs::DirBuilderExt;
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let mut path = Self::path_for(zot_home, name).into_os_string();
        path.push(format!("-{}", NEXT.fetch_add(1, Ordering::Relaxed)));
        let path = PathBuf::from(path);
        if let Some(parent) = path.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)?;
        }
        match std::fs::remove_dir_all(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        std::fs::DirBuilder::new().mode(0o700).create(&path)?;
        Ok(Self { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PrivateTmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use serde_json::json;

    use super::*;

    #[test]
    fn places_expand_and_normalise() {
        let places = Places {
            project: "/p".into(),
            data: "/d".into(),
            tmp: "/t".into(),
            home: "/h".into(),
        };
        assert_eq!(places.path(&Place::Path("~/.x".into())), Path::new("/h/.x"));
        assert_eq!(
            places.path(&Place::Path("/p/../etc".into())),
            Path::new("/etc")
        );
        assert!(!places.under(&Place::Path("/p/../etc".into()), &Place::Project));
        assert!(places.under(&Place::Path("~/a".into()), &Place::Home));
    }

    #[test]
    fn symbolic_links_are_resolved_before_narrowing() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        let (project, outside) = (root.join("project"), root.join("outside"));
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir_all(outside.join("keys")).unwrap();
        std::os::unix::fs::symlink(&outside, project.join("link")).unwrap();
        let places = Places {
            project: project.clone(),
            data: root.join("d"),
            tmp: root.join("t"),
            home: root.clone(),
        };
        let through_link = Place::Path(project.join("link/keys").display().to_string());
        assert!(!places.under(&through_link, &Place::Project));
        assert_eq!(places.path(&through_link), outside.join("keys"));
        // A path that does not exist yet resolves as far as it exists.
        let later = Place::Path(project.join("link/new/file").display().to_string());
        assert_eq!(places.path(&later), outside.join("new/file"));
        let scope = Scope::parse(&json!({"read": [through_link.as_str(), "project"]})).unwrap();
        let resolved = places.resolved(&scope);
        assert_eq!(
            resolved.read,
            [
                Place::Path(outside.join("keys").display().to_string()),
                Place::Project
            ]
        );
        let policy = Scope::parse(&json!({"read": ["project"]})).unwrap();
        let narrowed = resolved.narrow(&policy, |a, b| places.under(a, b));
        assert_eq!(narrowed.read, [Place::Project]);
    }

    #[test]
    fn a_script_grants_its_interpreter_install() {
        let root = tempfile::tempdir().unwrap();
        // A version-manager layout: <root>/versions/3/bin/python3, found on PATH via env.
        let bin = root.path().join("versions/3/bin");
        std::fs::create_dir_all(&bin).unwrap();
        let python = bin.join("python3");
        std::fs::write(&python, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
        let ext = root.path().join("ext");
        std::fs::create_dir_all(&ext).unwrap();
        let run = ext.join("run");
        std::fs::write(&run, "#!/usr/bin/env python3\nprint()\n").unwrap();
        let places = Places {
            project: root.path().into(),
            data: ext.clone(),
            tmp: root.path().join("missing"),
            home: root.path().into(),
        };
        let scope = Scope::parse(&json!({"write": ["tmp"]})).unwrap();
        let resolved = resolve(&scope, &places, &run, Some(&ext), Some(bin.as_os_str()));
        let install = root.path().join("versions/3").canonicalize().unwrap();
        assert!(resolved.read.contains(&install), "{:?}", resolved.read);
        assert!(resolved.read.contains(&ext));
        assert!(resolved.read.contains(&PathBuf::from("/usr")));
        // A place that does not exist is not granted.
        assert_eq!(resolved.write, vec![ext]);
    }

    #[test]
    fn private_tmp_is_0700_and_removed() {
        let home = tempfile::tempdir().unwrap();
        let path = {
            let tmp = PrivateTmp::create(home.path(), "x").unwrap();
            let mode = std::fs::metadata(tmp.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700);
            tmp.path().to_path_buf()
        };
        assert!(!path.exists());
    }
}
