//! `zot ext install`: path and git sources, staging, validation, rollback.

use std::path::Path;

use super::support::{World, git};

/// Entries of `dir` (names), to prove nothing was left behind.
fn entries(dir: &Path) -> Vec<String> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = read
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn path_install_copies_recursively_keeping_symlinks_as_links() {
    let w = World::new();
    let src = w.ext(
        &w.scratch,
        "hello",
        &[r#"{"type":"register_command","name":"hi"}"#],
    );
    std::fs::create_dir_all(src.join("lib/deep")).unwrap();
    std::fs::write(src.join("lib/deep/data.txt"), "payload").unwrap();
    let outside = w.scratch.join("secret.txt");
    std::fs::write(&outside, "outside").unwrap();
    std::os::unix::fs::symlink(&outside, src.join("link-out")).unwrap();
    std::os::unix::fs::symlink("lib/deep/data.txt", src.join("link-in")).unwrap();

    let run = w.zot(&["ext", "install", src.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("installed hello 1.0.0 into"), "{run:?}");
    let dest = w.global().join("hello");
    assert_eq!(
        std::fs::read_to_string(dest.join("lib/deep/data.txt")).unwrap(),
        "payload"
    );
    assert_eq!(
        std::fs::read_link(dest.join("link-out")).unwrap(),
        outside,
        "copied as a link"
    );
    assert!(
        std::fs::symlink_metadata(dest.join("link-in"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(dest.join("ext.sh"))
            .unwrap()
            .permissions()
            .mode()
            & 0o111,
        0o111
    );
    assert_eq!(entries(&w.global()), ["hello"]);

    // It works: doctor loads it.
    let run = w.zot(&["ext", "doctor"]);
    assert_eq!(run.code, 0, "{run:?}");

    // A second install refuses, and changes nothing.
    let run = w.zot(&["ext", "install", src.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.starts_with("zot: destination"), "{run:?}");
    assert!(run.stderr.contains("already exists"), "{run:?}");
    assert_eq!(entries(&w.global()), ["hello"]);

    // --project installs into ./.zot/extensions.
    let run = w.zot(&["ext", "install", "--project", src.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(w.project_root().join("hello/extension.json").is_file());
    assert!(run.stderr.contains("zot trust"), "{run:?}");
}

#[test]
fn bad_sources_fail_and_leave_nothing_behind() {
    let w = World::new();
    // Invalid manifest.
    let bad = w.scratch.join("bad");
    std::fs::create_dir_all(bad.join("sub")).unwrap();
    std::fs::write(bad.join("extension.json"), r#"{"exec":"./x"}"#).unwrap();
    std::fs::write(bad.join("sub/file"), "x").unwrap();
    let run = w.zot(&["ext", "install", bad.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("field \"name\" is required"), "{run:?}");
    assert!(
        entries(&w.global()).is_empty(),
        "{:?}",
        entries(&w.global())
    );

    // No manifest at all.
    let none = w.scratch.join("none");
    std::fs::create_dir_all(&none).unwrap();
    let run = w.zot(&["ext", "install", none.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("extension.json") && run.stderr.contains("cannot read"),
        "{run:?}"
    );
    assert!(entries(&w.global()).is_empty());

    // Not a directory.
    let run = w.zot(&[
        "ext",
        "install",
        w.scratch.join("missing").to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("is not a directory"), "{run:?}");
}

/// A bare repo at `<scratch>/<name>.git` holding the extension in `work`.
fn bare_repo(w: &World, name: &str, work: &Path) -> String {
    git(work, &["init", "-q"]);
    git(work, &["add", "-A"]);
    git(work, &["commit", "-q", "-m", "ext"]);
    let bare = w.scratch.join(format!("{name}.git"));
    git(
        &w.scratch,
        &[
            "clone",
            "-q",
            "--bare",
            work.to_str().unwrap(),
            bare.to_str().unwrap(),
        ],
    );
    format!("file://{}", bare.display())
}

#[test]
fn git_install_clones_validates_and_rolls_back() {
    let w = World::new();
    let work = w.ext(&w.scratch, "clock-src", &[]);
    std::fs::write(
        work.join("extension.json"),
        r#"{"name":"clock","exec":"./ext.sh"}"#,
    )
    .unwrap();
    std::fs::write(work.join("ext.sh"), super::support::sh_ext("clock", &[])).unwrap();
    let url = bare_repo(&w, "good-ext", &work);
    let run = w.zot(&["ext", "install", &url]);
    assert_eq!(run.code, 0, "{run:?}");
    let dest = w.global().join("good-ext");
    assert!(dest.join("extension.json").is_file());
    // Installed under the URL's name; found by either name.
    let run = w.zot(&["ext", "disable", "clock"]);
    assert_eq!(run.code, 0, "{run:?}");
    let run = w.zot(&["ext", "enable", "good-ext"]);
    assert_eq!(run.code, 0, "{run:?}");

    // A repo without a manifest: cloned, rejected, removed.
    let empty = w.scratch.join("empty-src");
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::write(empty.join("README"), "no manifest").unwrap();
    let url = bare_repo(&w, "empty", &empty);
    let run = w.zot(&["ext", "install", &url]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("extension.json"), "{run:?}");
    assert_eq!(entries(&w.global()), ["good-ext"]);

    // A clone that fails.
    let url = format!("file://{}", w.scratch.join("nope.git").display());
    let run = w.zot(&["ext", "install", &url]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("git clone") && run.stderr.contains("failed"),
        "{run:?}"
    );
    assert_eq!(entries(&w.global()), ["good-ext"]);
}

#[test]
fn a_second_extension_of_the_same_name_is_refused_unless_forced() {
    let w = World::new();
    let first = w.ext(&w.scratch, "hello", &[]);
    assert_eq!(w.zot(&["ext", "install", first.to_str().unwrap()]).code, 0);
    // Another directory whose manifest has the same name.
    let fork = w.ext_in(
        &w.scratch,
        "hello-fork",
        r#"{"name":"hello","version":"2.0.0","exec":"./ext.sh"}"#,
        &super::support::sh_ext("hello", &[]),
    );
    let run = w.zot(&["ext", "install", fork.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("an extension named \"hello\" is already installed in")
            && run
                .stderr
                .contains(&w.global().join("hello").display().to_string())
            && run.stderr.contains("--force"),
        "{run:?}"
    );
    assert_eq!(entries(&w.global()), ["hello"], "nothing left behind");

    let run = w.zot(&["ext", "install", "--force", fork.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(entries(&w.global()), ["hello", "hello-fork"]);

    // The nimlet root of the same scope counts too (`~/.agents/extensions`).
    let nimlet = w.scratch.join(".agents/extensions/notes");
    std::fs::create_dir_all(&nimlet).unwrap();
    std::fs::write(
        nimlet.join("extension.json"),
        r#"{"name":"notes","command":["./x"]}"#,
    )
    .unwrap();
    let twin = w.ext(&w.scratch, "notes", &[]);
    let run = w.zot(&["ext", "install", twin.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains(&nimlet.display().to_string()),
        "{run:?}"
    );
}

#[test]
fn a_local_directory_ending_in_dot_git_is_a_path() {
    let w = World::new();
    let src = w.ext_in(
        &w.scratch,
        "tool.git",
        r#"{"name":"tool","exec":"./ext.sh"}"#,
        &super::support::sh_ext("tool", &[]),
    );
    let run = w.zot(&["ext", "install", src.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(w.global().join("tool/extension.json").is_file(), "{run:?}");
}

#[test]
fn a_project_install_through_a_symlink_out_of_the_project_is_refused() {
    let w = World::new();
    let src = w.ext(&w.scratch, "hello", &[]);
    let elsewhere = w.scratch.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();

    std::os::unix::fs::symlink(&elsewhere, w.project.join(".zot")).unwrap();
    let run = w.zot(&["ext", "install", "--project", src.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("is a symlink that leads out of the project"),
        "{run:?}"
    );
    assert!(entries(&elsewhere).is_empty());

    // The same for .zot/extensions, even when the target does not exist yet.
    std::fs::remove_file(w.project.join(".zot")).unwrap();
    std::fs::create_dir_all(w.project.join(".zot")).unwrap();
    std::os::unix::fs::symlink(elsewhere.join("missing"), w.project_root()).unwrap();
    let run = w.zot(&["ext", "install", "--project", src.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("leads out of the project"), "{run:?}");
    assert!(!elsewhere.join("missing").exists());

    // A link that stays inside the project is fine.
    std::fs::remove_file(w.project_root()).unwrap();
    std::fs::create_dir_all(w.project.join("shared")).unwrap();
    std::os::unix::fs::symlink("../shared", w.project_root()).unwrap();
    let run = w.zot(&["ext", "install", "--project", src.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(w.project.join("shared/hello/extension.json").is_file());
}
