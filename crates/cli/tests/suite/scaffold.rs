//! `zot ext new`: each language's template is ready as generated (doctor
//! says `ready` with its command and tool, the command answers, the model can
//! call the tool, shutdown is clean), and the error paths write nothing.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{Value, json};
use zot_testkit::{MockModel, anthropic};

use super::support::{Run, World, json};

/// `zot ext new <name> --lang <lang> --dir <scratch>/<name>`; returns the dir.
fn generate(w: &World, name: &str, lang: &str) -> PathBuf {
    let dir = w.scratch.join(name);
    let run = w.zot(&[
        "ext",
        "new",
        name,
        "--lang",
        lang,
        "--dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0, "{lang}: {run:?}");
    assert!(
        run.stderr
            .contains(&format!("created {lang} extension \"{name}\"")),
        "{run:?}"
    );
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("extension.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["name"], name);
    assert!(dir.join("README.md").is_file());
    dir
}

/// Runs `zot` against the mock `model` with the extension in `dir` loaded.
fn zot_with(w: &World, model: &MockModel, dir: &Path, args: &[&str]) -> Run {
    let mut cmd = w.against(
        model,
        "anthropic",
        &["--no-session", "--ext", dir.to_str().unwrap()],
    );
    cmd.args(args);
    cmd.output().unwrap().into()
}

/// What every template must do without edits: load ready with its command
/// and tool, answer the command with a note, greet through the tool, and
/// acknowledge shutdown.
async fn assert_works(w: &World, dir: &Path, name: &str, tool: &str) {
    let run = w.zot(&["ext", "doctor", "--json", "--ext", dir.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{name}: {run:?}\nlog:\n{}", w.log(name));
    let doc = json(&run);
    assert_eq!(doc["ok"], true, "{doc:#}");
    let entry = &doc["extensions"][0];
    assert_eq!(doc["extensions"].as_array().unwrap().len(), 1, "{doc:#}");
    assert_eq!(entry["name"], name, "{doc:#}");
    assert_eq!(entry["scope"], "explicit", "{doc:#}");
    assert_eq!(entry["state"], "ready", "{doc:#}\nlog:\n{}", w.log(name));
    assert_eq!(entry["error"], Value::Null, "{doc:#}");
    assert_eq!(entry["warnings"], json!([]), "{doc:#}");
    let names = |key: &str| -> Vec<String> {
        entry[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names("commands"), [name], "{doc:#}");
    assert_eq!(names("tools"), [tool], "{doc:#}");
    // It acknowledged shutdown and exited by itself, not by signal.
    assert!(
        w.log(name).contains("stopped (exit status: 0)"),
        "{}",
        w.log(name)
    );

    // The command answers with a note, without calling the model.
    let model = MockModel::start([]).await;
    let run = zot_with(w, &model, dir, &["-p", &format!("/{name} Ada")]);
    assert_eq!(run.code, 0, "{name}: {run:?}");
    assert!(
        run.stdout
            .starts_with(&format!("Hello, Ada! (from {name} in ")),
        "{name}: {run:?}"
    );
    assert!(model.requests().is_empty());

    // The model sees the tool with its schema, calls it, and gets the greeting.
    let model = MockModel::start([
        anthropic::tool_call("g1", tool, r#"{"who":"Grace"}"#),
        anthropic::text("Greeted."),
    ])
    .await;
    let run = zot_with(w, &model, dir, &["-p", "greet Grace"]);
    assert_eq!(run.code, 0, "{name}: {run:?}\nlog:\n{}", w.log(name));
    assert_eq!(run.stdout, "Greeted.\n", "{name}: {run:?}");
    let requests = model.requests();
    let offered = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == tool)
        .unwrap_or_else(|| panic!("{name}: no {tool} in {}", requests[0].body))
        .clone();
    assert_eq!(offered["input_schema"]["required"], json!(["who"]));
    assert_eq!(
        offered["input_schema"]["properties"]["who"]["type"],
        "string"
    );
    let second = requests[1].body.to_string();
    assert!(second.contains("Hello, Grace!"), "{name}: {second}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sh_template_works_as_generated() {
    let w = World::new();
    let dir = generate(&w, "shdemo", "sh");
    assert!(is_executable(&dir.join("main.sh")));
    assert_works(&w, &dir, "shdemo", "shdemo_greet").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn python_template_works_as_generated() {
    let w = World::new();
    let dir = generate(&w, "py-demo", "python");
    // It finds the repository's Python SDK as examples/extensions/weather does.
    let run = std::fs::read_to_string(dir.join("run")).unwrap();
    let sdk = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../sdk/python")
        .canonicalize()
        .unwrap();
    assert!(run.contains(&format!("sdk='{}'", sdk.display())), "{run}");
    assert_works(&w, &dir, "py-demo", "py_demo_greet").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn ts_template_works_as_generated() {
    let w = World::new();
    let dir = generate(&w, "tsdemo", "ts");
    assert_works(&w, &dir, "tsdemo", "tsdemo_greet").await;
}

/// Builds the generated crate for real (release, offline, a target dir of its
/// own): about 15 s of CPU on 2 cores, since only serde, schemars and the SDK
/// are compiled.
#[tokio::test(flavor = "multi_thread")]
async fn rust_template_builds_and_works() {
    let w = World::new();
    let dir = generate(&w, "RsDemo", "rust");
    let run = w.zot(&["ext", "doctor", "--json", "--ext", dir.to_str().unwrap()]);
    // Before ./build the launcher says what to do.
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        w.log("RsDemo").contains("run ./build in"),
        "{}",
        w.log("RsDemo")
    );

    let started = Instant::now();
    let build = std::process::Command::new(dir.join("build"))
        .arg("--offline")
        .env("CARGO_TARGET_DIR", w.scratch.join("target"))
        .output()
        .unwrap();
    assert!(
        build.status.success(),
        "{}",
        String::from_utf8_lossy(&build.stderr)
    );
    eprintln!("rust template built in {:?}", started.elapsed());
    assert!(is_executable(&dir.join("bin/RsDemo")));
    assert_works(&w, &dir, "RsDemo", "RsDemo_greet").await;
}

#[test]
fn existing_directory_is_refused_and_left_alone() {
    let w = World::new();
    let dir = w.scratch.join("taken");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("keep.txt"), "mine").unwrap();
    let run = w.zot(&[
        "ext",
        "new",
        "taken",
        "--lang",
        "sh",
        "--dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("already exists and is not empty"),
        "{run:?}"
    );
    assert!(run.stderr.contains("nothing was written"), "{run:?}");
    assert_eq!(entries(&dir), ["keep.txt"]);
    assert_eq!(entries(&w.scratch), ["taken"]);

    // A file in the way is refused too.
    let file = w.scratch.join("file");
    std::fs::write(&file, "x").unwrap();
    let run = w.zot(&[
        "ext",
        "new",
        "file",
        "--lang",
        "sh",
        "--dir",
        file.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("is not a directory"), "{run:?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
}

#[test]
fn empty_directory_and_default_dir_and_missing_parents() {
    let w = World::new();
    // An existing empty directory is filled in place.
    let empty = w.scratch.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let run = w.zot(&[
        "ext",
        "new",
        "filled",
        "--lang",
        "sh",
        "--dir",
        empty.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(entries(&empty), ["README.md", "extension.json", "main.sh"]);
    assert_eq!(entries(&w.scratch), ["empty"], "no temp dir left behind");

    // Without --dir it lands in ./<name> (the project is the working directory).
    let run = w.zot(&["ext", "new", "here", "--lang", "sh"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(w.project.join("here/extension.json").is_file());
    assert_eq!(entries(&w.project), ["here"]);

    // Missing parents are created.
    let deep = w.scratch.join("a/b/deep");
    let run = w.zot(&[
        "ext",
        "new",
        "deep",
        "--lang",
        "python",
        "--dir",
        deep.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(deep.join("main.py").is_file());
    assert_eq!(entries(&w.scratch.join("a/b")), ["deep"]);
}

#[test]
fn bad_names_and_languages_are_refused_before_writing() {
    let w = World::new();
    for (name, lang, needle) in [
        ("1st", "sh", "invalid extension name"),
        ("has space", "python", "invalid extension name"),
        ("../escape", "sh", "invalid extension name"),
        ("a/b", "ts", "invalid extension name"),
        ("", "sh", "invalid extension name"),
        ("Help", "sh", "shadowed by zot's built-in /help"),
        ("test", "rust", "cargo does not accept"),
        ("zot_ext", "rust", "cargo does not accept"),
    ] {
        let run = w.zot(&["ext", "new", name, "--lang", lang]);
        assert_eq!(run.code, 1, "{name}: {run:?}");
        assert!(run.stderr.contains(needle), "{name}: {run:?}");
    }
    let long = "x".repeat(59);
    let run = w.zot(&["ext", "new", &long, "--lang", "sh"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("at most 58 characters"), "{run:?}");

    // An unknown language is a usage error that lists the choices.
    let run = w.zot(&["ext", "new", "demo", "--lang", "go"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("invalid value 'go'"), "{run:?}");
    assert!(
        run.stderr
            .contains("[possible values: rust, python, ts, sh]"),
        "{run:?}"
    );
    let run = w.zot(&["ext", "new", "demo"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("--lang"), "{run:?}");

    // A checkout without the SDK is refused for Rust, which needs its path.
    let mut cmd = w.cmd(&["ext", "new", "demo", "--lang", "rust"]);
    cmd.env("ZOT_CHECKOUT", &w.scratch);
    let run: Run = cmd.output().unwrap().into();
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("ZOT_CHECKOUT="), "{run:?}");

    assert!(entries(&w.project).is_empty(), "{:?}", entries(&w.project));
    assert!(entries(&w.scratch).is_empty(), "{:?}", entries(&w.scratch));
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}
