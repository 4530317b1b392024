//! `zot ext new <name> --lang rust|python|ts|sh [--dir PATH]`: writes a
//! starter extension that `zot ext doctor --ext <dir>` reports ready as it
//! is: a manifest, code registering one slash command (a `display` answer)
//! and one tool and handling shutdown, and a short README. The texts live in
//! `crates/cli/templates/<lang>/`.
//!
//! The files are written into a temp directory beside the target and then
//! moved into place, so a failure leaves nothing half-written behind.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, anyhow, bail};
use zot_extensions::zot_protocol::ui::BUILTIN_COMMANDS;

use crate::args::Lang;
use crate::context::{Context, display};

// `Lang` itself is a clap value type and lives in `args.rs`; what only
// scaffolding needs to know about each language stays here.
impl Lang {
    fn as_str(self) -> &'static str {
        match self {
            Self::Rust => "rust",
            Self::Python => "python",
            Self::Ts => "ts",
            Self::Sh => "sh",
        }
    }

    /// Where this language's SDK sits in a zot checkout, and a file that
    /// shows it is really there.
    fn sdk(self) -> Option<(&'static str, &'static str)> {
        match self {
            Self::Rust => Some(("crates/ext", "Cargo.toml")),
            Self::Python => Some(("sdk/python", "zot_ext/__init__.py")),
            Self::Ts => Some(("sdk/typescript", "package.json")),
            Self::Sh => None,
        }
    }
}

/// Names a zot checkout to take the SDKs from, for a `zot` binary that does
/// not sit in (and was not built from) one.
const CHECKOUT_ENV: &str = "ZOT_CHECKOUT";

/// Appended to the name (with `-` as `_`) to name the tool.
const TOOL_SUFFIX: &str = "_greet";

/// Model APIs cap tool names at 64 characters, and the tool is the name plus
/// [`TOOL_SUFFIX`].
const MAX_NAME: usize = 64 - TOOL_SUFFIX.len();

/// One file of a template: its path in the new extension, its text with
/// `__NAME__`, `__CRATE__`, `__TOOL__` and `__SDK__` placeholders, and
/// whether it is a program.
struct Template {
    path: &'static str,
    text: &'static str,
    executable: bool,
}

const fn file(path: &'static str, text: &'static str) -> Template {
    Template {
        path,
        text,
        executable: false,
    }
}

const fn program(path: &'static str, text: &'static str) -> Template {
    Template {
        path,
        text,
        executable: true,
    }
}

const SH: &[Template] = &[
    file(
        "extension.json",
        include_str!("../templates/sh/extension.json.tmpl"),
    ),
    program("main.sh", include_str!("../templates/sh/main.sh.tmpl")),
    file("README.md", include_str!("../templates/sh/README.md.tmpl")),
];

const PYTHON: &[Template] = &[
    file(
        "extension.json",
        include_str!("../templates/python/extension.json.tmpl"),
    ),
    program("run", include_str!("../templates/python/run.tmpl")),
    file("main.py", include_str!("../templates/python/main.py.tmpl")),
    file(
        "README.md",
        include_str!("../templates/python/README.md.tmpl"),
    ),
];

const TS: &[Template] = &[
    file(
        "extension.json",
        include_str!("../templates/ts/extension.json.tmpl"),
    ),
    program(
        "launch.mjs",
        include_str!("../templates/ts/launch.mjs.tmpl"),
    ),
    file("main.mjs", include_str!("../templates/ts/main.mjs.tmpl")),
    file("README.md", include_str!("../templates/ts/README.md.tmpl")),
    file(".gitignore", include_str!("../templates/ts/gitignore.tmpl")),
];

const RUST: &[Template] = &[
    file(
        "extension.json",
        include_str!("../templates/rust/extension.json.tmpl"),
    ),
    file(
        "Cargo.toml",
        include_str!("../templates/rust/Cargo.toml.tmpl"),
    ),
    file(
        "src/main.rs",
        include_str!("../templates/rust/main.rs.tmpl"),
    ),
    program("build", include_str!("../templates/rust/build.tmpl")),
    program("run", include_str!("../templates/rust/run.tmpl")),
    file(
        "README.md",
        include_str!("../templates/rust/README.md.tmpl"),
    ),
    file(
        ".gitignore",
        include_str!("../templates/rust/gitignore.tmpl"),
    ),
];

fn templates(lang: Lang) -> &'static [Template] {
    match lang {
        Lang::Rust => RUST,
        Lang::Python => PYTHON,
        Lang::Ts => TS,
        Lang::Sh => SH,
    }
}

pub fn run(ctx: &Context, name: &str, lang: Lang, dir: Option<&Path>) -> anyhow::Result<ExitCode> {
    validate_name(name, lang)?;
    let shown = dir.map_or_else(|| name.to_owned(), display);
    let target = ctx.project.join(dir.unwrap_or(Path::new(name)));
    check_target(&target)?;
    let sdk = find_sdk(lang)?;
    let files = render(lang, name, sdk.as_deref())?;
    write_all(&target, &files)
        .with_context(|| format!("cannot create {}; nothing was written", display(&target)))?;

    errln!(
        "created {} extension \"{name}\" in {}",
        lang.as_str(),
        display(&target)
    );
    let dir = shell_word(&shown);
    if sdk.is_none() {
        match lang {
            Lang::Python => errln!(
                "note: no zot checkout with sdk/python found; install the SDK with `pip install <zot checkout>/sdk/python` (or set {CHECKOUT_ENV} and run this again)"
            ),
            Lang::Ts => errln!(
                "note: no zot checkout with sdk/typescript found; install the SDK with `npm install --install-links --prefix {dir} <zot checkout>/sdk/typescript` (or set {CHECKOUT_ENV} and run this again)"
            ),
            Lang::Rust | Lang::Sh => {}
        }
    }
    errln!("next:");
    if lang == Lang::Rust {
        errln!("  compile it:       {dir}/build   (again after every change)");
    }
    errln!("  check it loads:   zot ext doctor --ext {dir}");
    errln!("  try its command:  zot --ext {dir} -p \"/{name} you\"");
    errln!("  install it:       zot ext install {dir}");
    Ok(ExitCode::SUCCESS)
}

/// The name becomes the manifest name, the slash command, the start of the
/// tool name and (for Rust) the package name, so it must suit all of them.
fn validate_name(name: &str, lang: Lang) -> anyhow::Result<()> {
    let mut chars = name.chars();
    let plain = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !plain {
        bail!(
            "invalid extension name {name:?}: use a letter, then letters, digits, '-' or '_' (it names the extension, its slash command and its tool)"
        );
    }
    if name.len() > MAX_NAME {
        bail!(
            "invalid extension name {name:?}: at most {MAX_NAME} characters (its tool name, the name plus \"{TOOL_SUFFIX}\", must fit in 64)"
        );
    }
    if let Some((builtin, _)) = BUILTIN_COMMANDS
        .iter()
        .find(|(b, _)| b.eq_ignore_ascii_case(name))
    {
        bail!(
            "invalid extension name {name:?}: its command would be shadowed by zot's built-in /{builtin}; pick another name"
        );
    }
    if lang == Lang::Rust {
        let package = crate_name(name);
        let normalized = package.replace('-', "_");
        if RUST_RESERVED.contains(&normalized.as_str()) {
            bail!(
                "invalid name {name:?} for a Rust extension: cargo does not accept \"{package}\" as a package name; pick another name"
            );
        }
    }
    Ok(())
}

/// Names cargo refuses for a package or its binary (keywords, the standard
/// crates, its own directories), and the SDK, which the package depends on.
const RUST_RESERVED: &[&str] = &[
    "abstract",
    "alloc",
    "as",
    "async",
    "await",
    "become",
    "box",
    "break",
    "build",
    "const",
    "continue",
    "core",
    "crate",
    "deps",
    "do",
    "dyn",
    "else",
    "enum",
    "examples",
    "extern",
    "false",
    "final",
    "fn",
    "for",
    "gen",
    "if",
    "impl",
    "in",
    "incremental",
    "let",
    "loop",
    "macro",
    "match",
    "mod",
    "move",
    "mut",
    "override",
    "priv",
    "proc_macro",
    "pub",
    "ref",
    "return",
    "self",
    "static",
    "std",
    "struct",
    "super",
    "test",
    "trait",
    "true",
    "try",
    "type",
    "typeof",
    "unsafe",
    "unsized",
    "use",
    "virtual",
    "where",
    "while",
    "yield",
    "zot_ext",
];

/// The Cargo package (and binary) name: lower case, as rustc expects of a
/// crate name.
fn crate_name(name: &str) -> String {
    name.to_ascii_lowercase()
}

fn tool_name(name: &str) -> String {
    format!("{}{TOOL_SUFFIX}", name.replace('-', "_"))
}

/// Refuses a target that exists and is not an empty directory, before
/// anything is written.
fn check_target(target: &Path) -> anyhow::Result<()> {
    let meta = match std::fs::metadata(target) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => bail!("cannot check {}: {e}; nothing was written", display(target)),
    };
    if !meta.is_dir() {
        bail!(
            "{} already exists and is not a directory; nothing was written (pick another --dir)",
            display(target)
        );
    }
    let mut entries = std::fs::read_dir(target)
        .with_context(|| format!("cannot read {}; nothing was written", display(target)))?;
    if entries.next().is_some() {
        bail!(
            "{} already exists and is not empty; nothing was written (pick another --dir, or remove it)",
            display(target)
        );
    }
    Ok(())
}

/// The directory of `lang`'s SDK in a zot checkout: `$ZOT_CHECKOUT` when it
/// is set, else the checkout this binary was built from, else one around the
/// binary. `None` for sh (no SDK) and when there is none for Python and
/// TypeScript (their launchers fall back to an installed package); an error
/// for Rust, whose `Cargo.toml` needs the path.
fn find_sdk(lang: Lang) -> anyhow::Result<Option<PathBuf>> {
    let Some((sdk, marker)) = lang.sdk() else {
        return Ok(None);
    };
    let has_sdk = |root: &Path| root.join(sdk).join(marker).is_file();
    if let Some(root) = std::env::var_os(CHECKOUT_ENV).filter(|v| !v.is_empty()) {
        let root = PathBuf::from(root);
        if !has_sdk(&root) {
            bail!(
                "{CHECKOUT_ENV}={} is not a zot checkout with {sdk}/{marker}; nothing was written",
                display(&root)
            );
        }
        return canonical(&root.join(sdk)).map(Some);
    }
    let built_from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let around_binary: Vec<PathBuf> = std::env::current_exe()
        .and_then(|exe| exe.canonicalize())
        .ok()
        .map(|exe| exe.ancestors().skip(1).map(Path::to_path_buf).collect())
        .unwrap_or_default();
    let found = std::iter::once(built_from)
        .chain(around_binary)
        .find(|root| has_sdk(root));
    match (found, lang) {
        (Some(root), _) => canonical(&root.join(sdk)).map(Some),
        (None, Lang::Rust) => bail!(
            "cannot find the Rust SDK (zot-ext) for the new extension's Cargo.toml: this zot was not built from a checkout that is still there; set {CHECKOUT_ENV} to a zot checkout; nothing was written"
        ),
        (None, _) => Ok(None),
    }
}

fn canonical(path: &Path) -> anyhow::Result<PathBuf> {
    path.canonicalize()
        .with_context(|| format!("cannot resolve {}", display(path)))
}

/// A file ready to write.
struct Rendered {
    path: &'static str,
    text: String,
    executable: bool,
}

fn render(lang: Lang, name: &str, sdk: Option<&Path>) -> anyhow::Result<Vec<Rendered>> {
    let sdk_text = match sdk {
        Some(path) => Some(
            path.to_str()
                .ok_or_else(|| anyhow!("the SDK path {} is not UTF-8", display(path)))?,
        ),
        None => None,
    };
    // Each file embeds the SDK path in its own syntax; an empty value means
    // "none found" to the launchers.
    let quoted = |path: &'static str| -> anyhow::Result<String> {
        Ok(match (lang, path) {
            (Lang::Python, "run") => shell_quote(sdk_text.unwrap_or_default()),
            // A JSON string is a valid JavaScript and TOML string too.
            _ => serde_json::to_string(sdk_text.unwrap_or_default())?,
        })
    };
    templates(lang)
        .iter()
        .map(|t| {
            let text = t
                .text
                .replace("__NAME__", name)
                .replace("__CRATE__", &crate_name(name))
                .replace("__TOOL__", &tool_name(name))
                .replace("__SDK__", &quoted(t.path)?);
            Ok(Rendered {
                path: t.path,
                text,
                executable: t.executable,
            })
        })
        .collect()
}

/// `text` as one sh word: as it is when that is safe, else single-quoted.
fn shell_word(text: &str) -> String {
    let safe = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./+:,@%=".contains(c));
    if safe {
        text.to_owned()
    } else {
        shell_quote(text)
    }
}

/// Single-quotes `text` for sh.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Writes `files` into a temp directory beside `target` and renames it into
/// place; on failure removes the temp directory and any parent it created.
fn write_all(target: &Path, files: &[Rendered]) -> anyhow::Result<()> {
    let parent = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .ok_or_else(|| anyhow!("{} has no parent directory", display(target)))?;
    let leaf = target
        .file_name()
        .ok_or_else(|| anyhow!("{} does not end in a directory name", display(target)))?
        .to_string_lossy()
        .into_owned();
    let created_parents = create_parents(parent)?;
    let result = (|| {
        let tmp = temp_dir(parent, &leaf)?;
        let written = write_files(&tmp, files).and_then(|()| {
            if target.is_dir() {
                move_into(&tmp, target)
            } else {
                std::fs::rename(&tmp, target)
                    .with_context(|| format!("cannot rename {} into place", display(&tmp)))
            }
        });
        let _ = std::fs::remove_dir_all(&tmp);
        written
    })();
    if result.is_err() {
        for dir in created_parents.iter().rev() {
            let _ = std::fs::remove_dir(dir);
        }
    }
    result
}

/// Moves the entries of `tmp` into the existing (empty) directory `target`
/// one by one rather than renaming over it, so the directory itself (maybe
/// the user's working directory) stays the same; on failure takes back what
/// it moved.
fn move_into(tmp: &Path, target: &Path) -> anyhow::Result<()> {
    let mut moved: Vec<PathBuf> = Vec::new();
    let result = (|| {
        for entry in
            std::fs::read_dir(tmp).with_context(|| format!("cannot read {}", display(tmp)))?
        {
            let from = entry
                .with_context(|| format!("cannot read {}", display(tmp)))?
                .path();
            let Some(leaf) = from.file_name() else {
                continue;
            };
            let to = target.join(leaf);
            std::fs::rename(&from, &to)
                .with_context(|| format!("cannot move {} into place", display(&to)))?;
            moved.push(to);
        }
        Ok(())
    })();
    if result.is_err() {
        for path in &moved {
            let _ = if path.is_dir() {
                std::fs::remove_dir_all(path)
            } else {
                std::fs::remove_file(path)
            };
        }
    }
    result
}

/// Creates the missing ancestors of `dir` (and `dir`); returns them, outermost first.
fn create_parents(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut missing: Vec<PathBuf> = dir
        .ancestors()
        .take_while(|a| !a.as_os_str().is_empty() && std::fs::symlink_metadata(a).is_err())
        .map(Path::to_path_buf)
        .collect();
    missing.reverse();
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", display(dir)))?;
    Ok(missing)
}

/// A fresh hidden directory in `parent`, named after the target.
fn temp_dir(parent: &Path, leaf: &str) -> anyhow::Result<PathBuf> {
    let pid = std::process::id();
    for attempt in 0..100 {
        let tmp = parent.join(format!(".{leaf}.zot-new-{pid}-{attempt}"));
        match std::fs::create_dir(&tmp) {
            Ok(()) => return Ok(tmp),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("cannot create {}", display(&tmp))),
        }
    }
    bail!("cannot create a temp directory in {}", display(parent))
}

fn write_files(dir: &Path, files: &[Rendered]) -> anyhow::Result<()> {
    for f in files {
        let path = dir.join(f.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", display(parent)))?;
        }
        std::fs::write(&path, &f.text)
            .with_context(|| format!("cannot write {}", display(&path)))?;
        if f.executable {
            make_executable(&path)?;
        }
    }
    Ok(())
}

#[cfg(unix)]
fn make_executable(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("cannot make {} executable", display(path)))
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> anyhow::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for ok in ["a", "hello", "my-ext", "My_Ext2"] {
            assert!(validate_name(ok, Lang::Rust).is_ok(), "{ok}");
        }
        for bad in ["", "1x", "-x", "a b", "a/b", ".", "..", "é", "x.y"] {
            assert!(validate_name(bad, Lang::Sh).is_err(), "{bad:?}");
        }
        assert!(validate_name(&"a".repeat(MAX_NAME), Lang::Sh).is_ok());
        assert!(validate_name(&"a".repeat(MAX_NAME + 1), Lang::Sh).is_err());
        for builtin in ["help", "Reload-Ext"] {
            assert!(validate_name(builtin, Lang::Sh).is_err(), "{builtin}");
        }
        for reserved in ["test", "fn", "Self", "zot-ext", "proc-macro"] {
            assert!(validate_name(reserved, Lang::Rust).is_err(), "{reserved}");
            assert!(validate_name(reserved, Lang::Python).is_ok(), "{reserved}");
        }
    }

    #[test]
    fn tool_names_use_underscores() {
        assert_eq!(tool_name("my-ext"), "my_ext_greet");
        assert_eq!(crate_name("My-Ext"), "my-ext");
    }

    #[test]
    fn every_placeholder_is_filled() {
        for lang in [Lang::Rust, Lang::Python, Lang::Ts, Lang::Sh] {
            let files = render(lang, "demo", Some(Path::new("/it's/sdk"))).unwrap();
            for f in &files {
                for placeholder in ["__NAME__", "__CRATE__", "__TOOL__", "__SDK__"] {
                    assert!(
                        !f.text.contains(placeholder),
                        "{lang:?} {}: {}",
                        f.path,
                        f.text
                    );
                }
            }
            let manifest: serde_json::Value = serde_json::from_str(&files[0].text).unwrap();
            assert_eq!(manifest["name"], "demo");
        }
        let python = render(Lang::Python, "demo", Some(Path::new("/it's/sdk"))).unwrap();
        let run = python.iter().find(|f| f.path == "run").unwrap();
        assert!(run.text.contains(r"sdk='/it'\''s/sdk'"), "{}", run.text);
    }

    #[test]
    fn shell_quoting() {
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_word("a/b-c.d"), "a/b-c.d");
        assert_eq!(shell_word("my dir"), "'my dir'");
    }
}
