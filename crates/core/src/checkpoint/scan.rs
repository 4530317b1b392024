//! A bounded walk of the project before a snapshot: whether it is small
//! enough for whole snapshots, and which files are too large to keep.
//! It honours the same ignores as the snapshot (the project's `.gitignore`
//! files and [`BUILTIN_EXCLUDES`]) and stops at the first limit passed, so
//! a home directory costs no more than a project at the limit.

use std::path::Path;

/// Folders no snapshot holds, wherever they are: dependencies, virtual
/// environments and build caches, which their tools rebuild.
pub const BUILTIN_EXCLUDES: &[&str] = &[
    "node_modules",
    "target",
    ".venv",
    "venv",
    "__pycache__",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".tox",
    ".gradle",
    ".next",
    ".cache",
    ".zig-cache",
];

/// How big a project may be for whole snapshots (the issue: a home
/// directory falls back to copies of the files `edit` and `write` change).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Files a whole snapshot covers at most: ten times the 10,000-file
    /// project the benchmark snapshots in well under its 200 ms budget.
    pub max_files: usize,
    /// Bytes of those files at most: the first snapshot copies them all
    /// into `$ZOT_HOME`.
    pub max_bytes: u64,
    /// A file larger than this is named in the checkpoint but not kept
    /// (a data set, a build artifact), so it is not restorable.
    pub max_file_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_files: 100_000,
            max_bytes: 1 << 30,
            max_file_bytes: 16 << 20,
        }
    }
}

impl Limits {
    /// The limits in force. Debug builds read `ZOT_TEST_CHECKPOINT_LIMITS`
    /// (`FILES,BYTES,FILE_BYTES`), so tests reach the fallback with a small
    /// project; release builds never read it.
    pub fn current() -> Self {
        #[cfg(debug_assertions)]
        if let Some(limits) = std::env::var("ZOT_TEST_CHECKPOINT_LIMITS")
            .ok()
            .and_then(|v| parse_limits(&v))
        {
            return limits;
        }
        Self::default()
    }
}

#[cfg(debug_assertions)]
fn parse_limits(value: &str) -> Option<Limits> {
    let mut parts = value.split(',').map(|p| p.trim().parse::<u64>().ok());
    Some(Limits {
        max_files: usize::try_from(parts.next()??).ok()?,
        max_bytes: parts.next()??,
        max_file_bytes: parts.next()??,
    })
}

/// What a walk found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Scan {
    /// A limit was passed: the walk stopped there.
    pub(super) oversized: bool,
    /// Files over [`Limits::max_file_bytes`] (`/`-separated, relative),
    /// with their size and modification time in nanoseconds.
    pub(super) large: Vec<(String, u64, u128)>,
    /// Folders holding a repository of their own (submodules, nested
    /// clones): left alone.
    pub(super) nested: Vec<String>,
}

/// Walks `root` within `limits`.
pub(super) fn scan(root: &Path, limits: &Limits) -> Scan {
    let mut found = Scan::default();
    let mut files = 0usize;
    let mut bytes = 0u64;
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .ignore(false)
        .parents(false)
        .git_global(false)
        .git_exclude(false)
        .git_ignore(true)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|entry| {
            let name = entry.file_name().to_string_lossy();
            let dir = entry.file_type().is_some_and(|t| t.is_dir());
            name != ".git" && !(dir && BUILTIN_EXCLUDES.contains(&name.as_ref()))
        })
        .build();
    for entry in walker.flatten() {
        let Some(kind) = entry.file_type() else {
            continue;
        };
        let Ok(relative) = entry.path().strip_prefix(root) else {
            continue;
        };
        if kind.is_dir() {
            if entry.depth() > 0 && entry.path().join(".git").exists() {
                found.nested.push(slashed(relative));
            }
            continue;
        }
        // A nested repository's files are its own (the walker still
        // lists them; the snapshot leaves them out).
        if found
            .nested
            .iter()
            .any(|n| relative.starts_with(Path::new(n)))
        {
            continue;
        }
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        files += 1;
        bytes += meta.len();
        if meta.len() > limits.max_file_bytes {
            let modified = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            found.large.push((slashed(relative), meta.len(), modified));
        } else if files > limits.max_files || bytes > limits.max_bytes {
            found.oversized = true;
            break;
        }
    }
    found
}

/// The sha256 of a file, hex, read in pieces (a large file is never
/// held whole).
pub(super) fn sha256(path: &Path) -> std::io::Result<String> {
    use sha2::{Digest, Sha256};
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let read = file.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// A relative path as git writes it.
pub(super) fn slashed(path: &Path) -> String {
    path.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_walk_counts_within_limits_and_names_large_files_and_nested_repositories() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/vendor/.git")).unwrap();
        std::fs::create_dir_all(root.join("node_modules/x")).unwrap();
        std::fs::write(root.join("node_modules/x/big"), vec![0u8; 4096]).unwrap();
        std::fs::write(root.join("src/a.rs"), "fn a() {}").unwrap();
        std::fs::write(root.join("data.bin"), vec![1u8; 2048]).unwrap();
        std::fs::write(root.join(".gitignore"), "ignored/\n").unwrap();
        std::fs::create_dir_all(root.join("ignored")).unwrap();
        std::fs::write(root.join("ignored/huge"), vec![0u8; 9000]).unwrap();
        let limits = Limits {
            max_files: 10,
            max_bytes: 10_000,
            max_file_bytes: 1024,
        };
        let found = scan(root, &limits);
        assert!(!found.oversized, "{found:?}");
        let large: Vec<&str> = found.large.iter().map(|l| l.0.as_str()).collect();
        assert_eq!(large, ["data.bin"]);
        assert_eq!(found.nested, ["src/vendor"]);

        let tight = Limits {
            max_files: 2,
            ..limits
        };
        assert!(scan(root, &tight).oversized);
    }
}
