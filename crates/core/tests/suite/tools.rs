//! The built-in tools against real files and real processes.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};
use zot_core::message::Block;
use zot_core::tool::{PROGRESS_BUFFER_BYTES, Tool, ToolContext, ToolOutput, progress_channel};
use zot_core::tools::{self, BashTool, EditTool, ReadTool, WriteTool};

fn text(out: &ToolOutput) -> String {
    out.content
        .iter()
        .filter_map(|b| match b {
            Block::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

async fn call(tool: &dyn Tool, dir: &Path, args: Value) -> ToolOutput {
    tool.call(args, &ToolContext::new(dir)).await
}

/// Asserts the call failed and returns its text.
async fn call_err(tool: &dyn Tool, dir: &Path, args: Value) -> String {
    let out = call(tool, dir, args.clone()).await;
    assert!(out.is_error, "expected an error for {args}, got {out:?}");
    text(&out)
}

async fn call_ok(tool: &dyn Tool, dir: &Path, args: Value) -> String {
    let out = call(tool, dir, args.clone()).await;
    assert!(!out.is_error, "expected success for {args}, got {out:?}");
    text(&out)
}

fn numbered_lines(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[test]
fn builtin_tools_in_order() {
    let names: Vec<String> = tools::builtin(Default::default(), false)
        .iter()
        .map(|t| t.spec().name)
        .collect();
    assert_eq!(
        names,
        [
            "read",
            "write",
            "edit",
            "bash",
            "grep",
            "find",
            "ls",
            "web_fetch",
            "todo_write"
        ]
    );
    // The names an extension tool cannot take: these, then `skill` and `task`.
    let mut reserved = names.clone();
    reserved.push("skill".to_owned());
    reserved.push(zot_core::agent::TASK.to_owned());
    assert_eq!(tools::BUILTIN_TOOL_NAMES, reserved);
    for tool in tools::builtin(Default::default(), false) {
        let spec = tool.spec();
        assert_eq!(spec.schema["type"], "object", "{}", spec.name);
        assert!(!spec.description.is_empty());
    }
}

// ---------- read ----------

#[tokio::test]
async fn read_returns_the_file_text_resolved_against_cwd() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/a.txt"), "alpha\nbeta\n\ngamma").unwrap();
    let out = call_ok(&ReadTool, dir.path(), json!({"path": "sub/a.txt"})).await;
    assert_eq!(out, "alpha\nbeta\n\ngamma");
}

#[tokio::test]
async fn read_offset_and_limit() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), numbered_lines(10)).unwrap();

    let out = call_ok(
        &ReadTool,
        dir.path(),
        json!({"path": "f", "offset": 3, "limit": 2}),
    )
    .await;
    assert_eq!(
        out,
        "line 3\nline 4\n... [stopped at limit of 2 lines; use offset=5 to read more]"
    );

    let out = call_ok(&ReadTool, dir.path(), json!({"path": "f", "offset": 9})).await;
    assert_eq!(out, "line 9\nline 10");

    // A limit that reaches the end needs no footer.
    let out = call_ok(
        &ReadTool,
        dir.path(),
        json!({"path": "f", "offset": 8, "limit": 3}),
    )
    .await;
    assert_eq!(out, "line 8\nline 9\nline 10");

    let err = call_err(&ReadTool, dir.path(), json!({"path": "f", "offset": 11})).await;
    assert!(
        err.contains("offset 11 is past the end") && err.contains("10 lines"),
        "{err}"
    );
}

#[tokio::test]
async fn read_truncates_at_max_lines_and_offset_continues() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), numbered_lines(2500)).unwrap();

    let out = call_ok(&ReadTool, dir.path(), json!({"path": "f"})).await;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2001);
    assert_eq!(lines[0], "line 1");
    assert_eq!(lines[1999], "line 2000");
    assert_eq!(
        lines[2000],
        "... [truncated at 2000 lines; use offset=2001 to read more]"
    );

    // A limit above the cap is still capped.
    let out = call_ok(&ReadTool, dir.path(), json!({"path": "f", "limit": 5000})).await;
    assert!(out.ends_with("... [truncated at 2000 lines; use offset=2001 to read more]"));

    let out = call_ok(&ReadTool, dir.path(), json!({"path": "f", "offset": 2001})).await;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 500);
    assert_eq!(lines[0], "line 2001");
    assert_eq!(lines[499], "line 2500");
}

#[tokio::test]
async fn read_truncates_at_max_bytes_on_a_line_boundary() {
    let dir = tempfile::tempdir().unwrap();
    // 1000 lines of 100 bytes: 100 000 bytes, well under the line cap.
    let line = |i: usize| format!("{i:04}{}\n", "x".repeat(95));
    let content: String = (1..=1000).map(line).collect();
    std::fs::write(dir.path().join("f"), &content).unwrap();

    let out = call_ok(&ReadTool, dir.path(), json!({"path": "f"})).await;
    let (body, footer) = out.rsplit_once('\n').unwrap();
    // 51200 / 100 = 512 whole lines.
    assert_eq!(
        footer,
        "... [truncated at 51200 bytes; use offset=513 to read more]"
    );
    assert!(body.len() <= 51_200);
    assert_eq!(format!("{body}\n"), content[..512 * 100]);

    let out = call_ok(&ReadTool, dir.path(), json!({"path": "f", "offset": 513})).await;
    assert!(out.starts_with(&line(513)), "{}", &out[..200]);
    // The rest (488 lines) fits: no footer.
    assert_eq!(format!("{out}\n"), content[512 * 100..]);
}

#[tokio::test]
async fn read_single_line_longer_than_the_byte_cap() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), "é".repeat(40_000)).unwrap();
    let out = call_ok(&ReadTool, dir.path(), json!({"path": "f"})).await;
    let (body, footer) = out.rsplit_once('\n').unwrap();
    assert!(
        footer.starts_with("... [truncated at 51200 bytes in the middle of line 1"),
        "{footer}"
    );
    // Cut on a character boundary: no replacement character.
    assert_eq!(body, "é".repeat(25_600));
}

#[tokio::test]
async fn read_empty_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), "").unwrap();
    let out = call_ok(&ReadTool, dir.path(), json!({"path": "f"})).await;
    assert_eq!(out, "(empty file)");
}

#[tokio::test]
async fn read_images_as_image_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let bytes: Vec<u8> = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"
        .iter()
        .copied()
        .chain(0..=255)
        .collect();
    for (name, mime) in [
        ("a.png", "image/png"),
        ("b.JPG", "image/jpeg"),
        ("c.jpeg", "image/jpeg"),
        ("d.gif", "image/gif"),
        ("e.webp", "image/webp"),
    ] {
        std::fs::write(dir.path().join(name), &bytes).unwrap();
        let out = call(&ReadTool, dir.path(), json!({"path": name})).await;
        assert!(!out.is_error, "{out:?}");
        match out.content.as_slice() {
            [Block::Image { mime_type, data }] => {
                assert_eq!(mime_type, mime);
                let decoded = base64::engine::general_purpose::STANDARD
                    .decode(data)
                    .unwrap();
                assert_eq!(decoded, bytes);
            }
            other => panic!("expected one image block for {name}, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn read_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut binary = b"some text".to_vec();
    binary.push(0);
    binary.extend_from_slice(b"more");
    std::fs::write(d.join("bin.dat"), binary).unwrap();
    std::fs::write(d.join("t.txt"), "x\n").unwrap();

    let err = call_err(&ReadTool, d, json!({"path": "bin.dat"})).await;
    assert!(err.contains("looks binary"), "{err}");

    let err = call_err(&ReadTool, d, json!({"path": "nope/missing.txt"})).await;
    assert!(
        err.contains("nope/missing.txt") && err.contains("not found"),
        "{err}"
    );

    std::fs::create_dir(d.join("adir")).unwrap();
    let err = call_err(&ReadTool, d, json!({"path": "adir"})).await;
    assert!(err.contains("is a directory"), "{err}");

    let err = call_err(&ReadTool, d, json!({})).await;
    assert!(err.contains("missing required argument `path`"), "{err}");
    let err = call_err(&ReadTool, d, json!({"path": 7})).await;
    assert!(err.contains("`path` must be a string"), "{err}");
    let err = call_err(&ReadTool, d, json!({"path": "t.txt", "offset": "2"})).await;
    assert!(err.contains("`offset` must be a positive integer"), "{err}");
    let err = call_err(&ReadTool, d, json!({"path": "t.txt", "offset": 0})).await;
    assert!(err.contains("`offset` must be a positive integer"), "{err}");
    let err = call_err(&ReadTool, d, json!({"path": "t.txt", "limit": -1})).await;
    assert!(err.contains("`limit` must be a positive integer"), "{err}");
    let err = call_err(&ReadTool, d, json!({"path": "t.txt", "limit": 1.5})).await;
    assert!(err.contains("`limit` must be a positive integer"), "{err}");
    let err = call_err(&ReadTool, d, json!(["t.txt"])).await;
    assert!(err.contains("must be a JSON object"), "{err}");
}

// ---------- write ----------

#[tokio::test]
async fn write_creates_parent_directories() {
    let dir = tempfile::tempdir().unwrap();
    let out = call_ok(
        &WriteTool,
        dir.path(),
        json!({"path": "a/b/c.txt", "content": "hello\nworld\n"}),
    )
    .await;
    let path = dir.path().join("a/b/c.txt");
    assert_eq!(
        out,
        format!("wrote 12 bytes (2 lines) to {}", path.display())
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "hello\nworld\n");
}

#[tokio::test]
async fn write_overwrites_keeping_permissions_and_leaves_no_temp_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.sh");
    std::fs::write(&path, "old content that is longer\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o751)).unwrap();

    call_ok(
        &WriteTool,
        dir.path(),
        json!({"path": "run.sh", "content": "#!/bin/sh\n"}),
    )
    .await;
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "#!/bin/sh\n");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o751);

    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["run.sh"]);
}

#[tokio::test]
async fn write_through_a_symlink_keeps_the_link() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("target.txt"), "old").unwrap();
    std::os::unix::fs::symlink("target.txt", dir.path().join("link.txt")).unwrap();
    call_ok(
        &WriteTool,
        dir.path(),
        json!({"path": "link.txt", "content": "new"}),
    )
    .await;
    assert!(
        std::fs::symlink_metadata(dir.path().join("link.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("target.txt")).unwrap(),
        "new"
    );
}

#[tokio::test]
async fn write_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let err = call_err(&WriteTool, d, json!({"path": "x"})).await;
    assert!(err.contains("missing required argument `content`"), "{err}");
    let err = call_err(&WriteTool, d, json!({"content": "x"})).await;
    assert!(err.contains("missing required argument `path`"), "{err}");
    let err = call_err(&WriteTool, d, json!({"path": "x", "content": ["a"]})).await;
    assert!(err.contains("`content` must be a string"), "{err}");
    assert!(!d.join("x").exists());

    std::fs::create_dir(d.join("adir")).unwrap();
    let err = call_err(&WriteTool, d, json!({"path": "adir", "content": "x"})).await;
    assert!(err.contains("is a directory"), "{err}");
}

// ---------- edit ----------

fn edits(pairs: &[(&str, &str)]) -> Value {
    pairs
        .iter()
        .map(|(old, new)| json!({"oldText": old, "newText": new}))
        .collect()
}

#[tokio::test]
async fn edit_applies_multiple_edits_together_and_shows_a_diff() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.rs");
    std::fs::write(&path, numbered_lines(30)).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();

    let out = call_ok(
        &EditTool,
        dir.path(),
        json!({"path": "f.rs", "edits": edits(&[("line 20\n", "twenty\n"), ("line 2\n", "two\nzwei\n")])}),
    )
    .await;
    let expected: String = numbered_lines(30)
        .replace("line 2\n", "two\nzwei\n")
        .replace("line 20\n", "twenty\n");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), expected);
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777,
        0o640
    );

    assert!(out.starts_with("applied 2 edits to"), "{out}");
    let diff_lines: Vec<&str> = out.lines().collect();
    for wanted in [
        "-line 2", "+two", "+zwei", "-line 20", "+twenty", " line 1", " line 5",
    ] {
        assert!(
            diff_lines.contains(&wanted),
            "{wanted:?} missing from:\n{out}"
        );
    }
    assert!(out.contains("@@ -1,5 +1,6 @@"), "{out}");
    assert!(out.contains("@@ -17,7 +18,7 @@"), "{out}");
    // Far-away lines are not in the diff.
    assert!(!diff_lines.contains(&" line 10"), "{out}");
}

#[tokio::test]
async fn edit_errors_leave_the_file_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let original = "fn a() {}\nfn b() {}\nlet x = 1;\nlet x = 1;\n";
    std::fs::write(d.join("f"), original).unwrap();

    let cases: &[(Value, &str)] = &[
        (
            edits(&[("fn a", "fn z"), ("fn c", "fn y")]),
            "edit 2: oldText not found",
        ),
        (
            edits(&[("let x = 1;", "let x = 2;")]),
            "edit 1: oldText matches 2 times",
        ),
        (
            edits(&[("fn a", "fn z"), ("fn b", "fn b")]),
            "edit 2: oldText equals newText",
        ),
        (edits(&[("", "x")]), "edit 1: oldText is empty"),
        (
            edits(&[("fn a() {}\nfn b", "x"), ("b() {}", "y")]),
            "edits 1 and 2 overlap",
        ),
        (edits(&[("fn a", "1"), ("fn a", "2")]), "overlap"),
    ];
    for (edits, wanted) in cases {
        let err = call_err(&EditTool, d, json!({"path": "f", "edits": edits})).await;
        assert!(err.contains(wanted), "wanted {wanted:?} in {err:?}");
        assert!(err.contains("no edits were applied"), "{err}");
        assert_eq!(std::fs::read_to_string(d.join("f")).unwrap(), original);
    }

    // Every failing edit is reported at once.
    let err = call_err(
        &EditTool,
        d,
        json!({"path": "f", "edits": edits(&[("nope", "x"), ("fn a", "fn z"), ("let x", "y")])}),
    )
    .await;
    assert!(err.contains("edit 1: oldText not found"), "{err}");
    assert!(err.contains("edit 3: oldText matches 2 times"), "{err}");
    assert_eq!(std::fs::read_to_string(d.join("f")).unwrap(), original);
    assert_eq!(
        std::fs::read_dir(d).unwrap().count(),
        1,
        "no temp files left behind"
    );
}

#[tokio::test]
async fn edit_overlapping_occurrences_count_as_ambiguous() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), "aaa\n").unwrap();
    let err = call_err(
        &EditTool,
        dir.path(),
        json!({"path": "f", "edits": edits(&[("aa", "b")])}),
    )
    .await;
    assert!(err.contains("edit 1: oldText matches 2 times"), "{err}");
}

#[tokio::test]
async fn edit_keeps_bom_and_crlf() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("win.txt");
    std::fs::write(&path, "\u{FEFF}first\r\nsecond\r\nthird\r\n").unwrap();
    let out = call_ok(
        &EditTool,
        dir.path(),
        json!({"path": "win.txt", "edits": edits(&[("first\nsecond", "uno\ndos\ntres"), ("third", "cuatro")])}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "\u{FEFF}uno\r\ndos\r\ntres\r\ncuatro\r\n"
    );
    assert!(
        !out.contains('\r'),
        "diff is shown with LF endings: {out:?}"
    );
    assert!(
        out.lines().any(|l| l == "-first") && out.lines().any(|l| l == "+tres"),
        "{out}"
    );

    // CRLF in the model's text matches too.
    call_ok(
        &EditTool,
        dir.path(),
        json!({"path": "win.txt", "edits": edits(&[("dos\r\ntres", "two")])}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "\u{FEFF}uno\r\ntwo\r\ncuatro\r\n"
    );
}

#[tokio::test]
async fn edit_leaves_other_line_endings_of_a_mixed_file_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mixed.txt");
    std::fs::write(&path, "a\nb\r\nc\nd\n").unwrap();
    call_ok(
        &EditTool,
        dir.path(),
        json!({"path": "mixed.txt", "edits": edits(&[("c", "C")])}),
    )
    .await;
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "a\nb\r\nC\nd\n");
}

#[tokio::test]
async fn edit_argument_and_file_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("f"), "x\n").unwrap();
    let cases: &[(Value, &str)] = &[
        (
            json!({"edits": edits(&[("x", "y")])}),
            "missing required argument `path`",
        ),
        (json!({"path": "f"}), "missing required argument `edits`"),
        (
            json!({"path": "f", "edits": []}),
            "`edits` must not be empty",
        ),
        (
            json!({"path": "f", "edits": "x"}),
            "`edits` must be an array",
        ),
        (
            json!({"path": "f", "edits": ["x"]}),
            "edit 1: must be an object",
        ),
        (
            json!({"path": "f", "edits": [{"oldText": "x"}]}),
            "edit 1: missing newText",
        ),
        (
            json!({"path": "f", "edits": [{"oldText": 1, "newText": "y"}]}),
            "edit 1: oldText must be a string",
        ),
        (
            json!({"path": "missing.txt", "edits": edits(&[("x", "y")])}),
            "missing.txt",
        ),
    ];
    for (args, wanted) in cases {
        let err = call_err(&EditTool, d, args.clone()).await;
        assert!(err.contains(wanted), "wanted {wanted:?} in {err:?}");
    }
    assert_eq!(std::fs::read_to_string(d.join("f")).unwrap(), "x\n");

    std::fs::write(d.join("latin1"), b"caf\xe9\n").unwrap();
    let err = call_err(
        &EditTool,
        d,
        json!({"path": "latin1", "edits": edits(&[("caf", "x")])}),
    )
    .await;
    assert!(err.contains("not UTF-8"), "{err}");
}

// ---------- special files, size limits, hard links ----------

/// A FIFO at `path`, made by the real mkfifo(1).
fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

fn is_fifo(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(path)
        .unwrap()
        .file_type()
        .is_fifo()
}

/// A call that must not block; the deadline only turns a hang into a failure.
async fn call_err_soon(tool: &dyn Tool, dir: &Path, args: Value) -> String {
    tokio::time::timeout(Duration::from_secs(30), call_err(tool, dir, args))
        .await
        .expect("the call blocked")
}

#[tokio::test]
async fn read_edit_and_write_refuse_a_fifo_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    mkfifo(&d.join("pipe"));
    std::os::unix::fs::symlink("pipe", d.join("link-to-pipe")).unwrap();

    for path in ["pipe", "link-to-pipe"] {
        let err = call_err_soon(&ReadTool, d, json!({ "path": path })).await;
        assert!(
            err.contains("is a FIFO (named pipe), not a regular file"),
            "{err}"
        );
        let err = call_err_soon(
            &EditTool,
            d,
            json!({"path": path, "edits": edits(&[("a", "b")])}),
        )
        .await;
        assert!(err.contains("is a FIFO"), "{err}");
        let err = call_err_soon(&WriteTool, d, json!({"path": path, "content": "x"})).await;
        assert!(
            err.contains("is a FIFO (named pipe), not a regular file"),
            "{err}"
        );
    }
    assert!(is_fifo(&d.join("pipe")), "write replaced the FIFO");
}

#[tokio::test]
async fn read_and_write_refuse_devices_and_sockets() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let err = call_err_soon(&ReadTool, d, json!({"path": "/dev/zero"})).await;
    assert!(err.contains("is a character device"), "{err}");

    // A socket file stands in for a device node: replacing either is the bug.
    let socket = d.join("sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let err = call_err_soon(&WriteTool, d, json!({"path": "sock", "content": "x"})).await;
    assert!(err.contains("is a socket, not a regular file"), "{err}");
    use std::os::unix::fs::FileTypeExt;
    assert!(
        std::fs::symlink_metadata(&socket)
            .unwrap()
            .file_type()
            .is_socket()
    );
    let err = call_err_soon(&ReadTool, d, json!({"path": "sock"})).await;
    assert!(err.contains("is a socket"), "{err}");
}

#[tokio::test]
async fn write_and_edit_keep_hard_links() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("a.txt"), "one\ntwo\n").unwrap();
    std::fs::hard_link(d.join("a.txt"), d.join("b.txt")).unwrap();
    let inode = std::fs::metadata(d.join("a.txt")).unwrap().ino();

    call_ok(
        &WriteTool,
        d,
        json!({"path": "b.txt", "content": "written through b\n"}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(d.join("a.txt")).unwrap(),
        "written through b\n"
    );
    call_ok(
        &EditTool,
        d,
        json!({"path": "a.txt", "edits": edits(&[("through b", "then edited")])}),
    )
    .await;
    for name in ["a.txt", "b.txt"] {
        let path = d.join(name);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "written then edited\n"
        );
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!((meta.ino(), meta.nlink()), (inode, 2), "{name}");
    }
    // Shorter content leaves no tail of the old.
    call_ok(&WriteTool, d, json!({"path": "a.txt", "content": "x"})).await;
    assert_eq!(std::fs::read_to_string(d.join("b.txt")).unwrap(), "x");
}

#[tokio::test]
async fn edit_refuses_files_over_the_size_limit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let path = d.join("big.txt");
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(tools::MAX_EDIT_FILE_BYTES + 1).unwrap();
    drop(file);
    let err = call_err(
        &EditTool,
        d,
        json!({"path": "big.txt", "edits": edits(&[("a", "b")])}),
    )
    .await;
    assert_eq!(
        err,
        format!(
            "{} is 16777217 bytes; edit works on files of at most 16777216 bytes (16 MiB); use \
             bash (sed, patch) for bigger files",
            path.display()
        )
    );
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        tools::MAX_EDIT_FILE_BYTES + 1
    );

    // Under the limit, but the edit would take it over.
    let near = "x".repeat(tools::MAX_EDIT_FILE_BYTES as usize - 10) + "\nEND\n";
    std::fs::write(&path, &near).unwrap();
    let err = call_err(
        &EditTool,
        d,
        json!({"path": "big.txt", "edits": edits(&[("END", &"y".repeat(100))])}),
    )
    .await;
    assert!(
        err.contains("would make") && err.contains("no edits were applied"),
        "{err}"
    );
    assert!(std::fs::read_to_string(&path).unwrap() == near);
}

#[tokio::test]
async fn write_refuses_content_over_the_size_limit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let content = "z".repeat(tools::MAX_WRITE_BYTES + 1);
    let err = call_err(
        &WriteTool,
        d,
        json!({"path": "big.txt", "content": content}),
    )
    .await;
    assert!(
        err.starts_with("content is 16777217 bytes; write takes at most 16777216 bytes (16 MiB)"),
        "{err}"
    );
    assert!(!d.join("big.txt").exists());
}

// ---------- bash ----------

/// Whether `pid` is a live process (a zombie awaiting its reaper counts as
/// dead: it runs nothing and holds no pipe).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat
                .rsplit_once(") ")
                .and_then(|(_, rest)| rest.chars().next());
            !matches!(state, Some('Z' | 'X') | None)
        }
    }
}

async fn read_pid(path: &Path) -> i32 {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(s) = std::fs::read_to_string(path)
            && let Ok(pid) = s.trim().parse()
        {
            return pid;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no pid in {}",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn assert_dies(pid: i32) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while alive(pid) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "process {pid} is still alive"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The path in the note that ends a cut output.
fn full_output_path(out: &str) -> std::path::PathBuf {
    let note = out.lines().last().unwrap();
    let path = note
        .split_once("; full output: ")
        .and_then(|(_, rest)| rest.strip_suffix(']'))
        .unwrap_or_else(|| panic!("no full-output note: {note}"));
    std::path::PathBuf::from(path)
}

/// Runs bash in `dir` with full outputs saved under `outputs`.
async fn bash_saving(dir: &Path, outputs: &Path, command: &str) -> ToolOutput {
    let mut ctx = ToolContext::new(dir);
    ctx.output_dir = Some(outputs.join("session-1"));
    BashTool.call(json!({ "command": command }), &ctx).await
}

#[tokio::test]
async fn bash_reports_output_and_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let out = call_ok(&BashTool, dir.path(), json!({"command": "echo hi"})).await;
    assert_eq!(out, "$ echo hi\n\nhi\n\n[exit 0]");

    let out = call(
        &BashTool,
        dir.path(),
        json!({"command": "echo bad; exit 3"}),
    )
    .await;
    assert!(out.is_error);
    assert_eq!(text(&out), "$ echo bad; exit 3\n\nbad\n\n[exit 3]");

    let out = call_ok(&BashTool, dir.path(), json!({"command": "true"})).await;
    assert_eq!(out, "$ true\n\n(no output)\n\n[exit 0]");

    let out = call(&BashTool, dir.path(), json!({"command": "kill -9 $$"})).await;
    assert!(out.is_error);
    assert!(text(&out).ends_with("[killed by signal 9]"), "{out:?}");
}

#[tokio::test]
async fn bash_runs_in_cwd_with_stdin_closed() {
    let dir = tempfile::tempdir().unwrap();
    let out = call_ok(
        &BashTool,
        dir.path(),
        json!({"command": "pwd; cat; echo end"}),
    )
    .await;
    let cwd = dir.path().canonicalize().unwrap();
    assert_eq!(
        out,
        format!("$ pwd; cat; echo end\n\n{}\nend\n\n[exit 0]", cwd.display())
    );
}

#[tokio::test]
async fn bash_merges_stderr_into_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = call_ok(
        &BashTool,
        dir.path(),
        json!({"command": "echo out; echo err >&2; echo out2"}),
    )
    .await;
    for wanted in ["out\n", "err\n", "out2\n"] {
        assert!(out.contains(wanted), "{wanted:?} missing from {out:?}");
    }
}

#[tokio::test]
async fn bash_sends_progress_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let (tx, mut rx) = progress_channel();
    let mut ctx = ToolContext::new(dir.path());
    ctx.progress = Some(tx);
    let out = BashTool
        .call(json!({"command": "echo one; sleep 0.1; echo two"}), &ctx)
        .await;
    assert!(!out.is_error, "{out:?}");
    drop(ctx);
    let mut chunks = Vec::new();
    while let Some(chunk) = rx.recv().await {
        assert_eq!(chunk.dropped_bytes, 0);
        chunks.push(chunk.text);
    }
    assert!(!chunks.is_empty());
    assert_eq!(chunks.concat(), "one\ntwo\n");
}

#[tokio::test]
async fn bash_truncates_by_lines_keeping_start_and_end() {
    let dir = tempfile::tempdir().unwrap();
    let outputs = tempfile::tempdir().unwrap();
    let out = bash_saving(dir.path(), outputs.path(), "seq 1 5000").await;
    assert!(!out.is_error);
    let out = text(&out);
    let log = full_output_path(&out);
    let all: String = (1..=5000).map(|i| format!("{i}\n")).collect();
    assert_eq!(std::fs::read_to_string(&log).unwrap(), all);

    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "$ seq 1 5000");
    assert_eq!(lines[1], "");
    // 400 lines of head, the marker, 1600 lines of tail.
    assert_eq!(lines[2], "1");
    assert_eq!(lines[401], "400");
    let omitted_bytes: usize = (401..=3400).map(|i| format!("{i}\n").len()).sum();
    assert_eq!(
        lines[402],
        format!("[... 3000 lines, {omitted_bytes} bytes omitted ...]")
    );
    assert_eq!(lines[403], "3401");
    assert_eq!(lines[2002], "5000");
    assert_eq!(lines[2003], "");
    assert_eq!(lines[2004], "[exit 0]");
    assert_eq!(
        lines[2005],
        format!(
            "[zot: {omitted_bytes} bytes omitted; full output: {}]",
            log.display()
        )
    );
    assert_eq!(lines.len(), 2006);
}

#[tokio::test]
async fn bash_truncates_by_bytes_keeping_start_and_end() {
    let dir = tempfile::tempdir().unwrap();
    let outputs = tempfile::tempdir().unwrap();
    // 1500 lines of 100 bytes: under the line cap, over the byte cap.
    let command = "i=0; while [ $i -lt 1500 ]; do i=$((i+1)); printf '%04d%095d\\n' $i 0; done";
    let out = text(&bash_saving(dir.path(), outputs.path(), command).await);
    let log = full_output_path(&out);
    let full = std::fs::read_to_string(&log).unwrap();
    assert_eq!(full.len(), 150_000);
    assert_eq!(full.lines().count(), 1500);

    let body = out.strip_prefix(&format!("$ {command}\n\n")).unwrap();
    let (head, rest) = body.split_once("\n[... ").unwrap();
    let (marker, rest) = rest.split_once(" ...]\n").unwrap();
    let (tail, status) = rest.rsplit_once("\n\n").unwrap();
    // The head takes whole lines within a fifth of the byte cap, the tail
    // whole lines within the rest.
    assert_eq!(format!("{head}\n"), full[..102 * 100]);
    assert_eq!(format!("{tail}\n"), full[full.len() - 410 * 100..]);
    assert_eq!(head.len() + tail.len() + 2, 51_200);
    assert_eq!(marker, format!("988 lines, {} bytes omitted", 988 * 100));
    assert!(
        status.starts_with(&format!(
            "[exit 0]\n[zot: {} bytes omitted; full output: ",
            988 * 100
        )),
        "{status}"
    );
}

#[tokio::test]
async fn bash_one_long_line_is_cut_in_the_middle() {
    let dir = tempfile::tempdir().unwrap();
    let outputs = tempfile::tempdir().unwrap();
    // 200,000 'é' (2 bytes each) without a newline: cuts fall between characters.
    let out = text(
        &bash_saving(
            dir.path(),
            outputs.path(),
            "yes é | head -n 200000 | tr -d '\\n'",
        )
        .await,
    );
    let full = std::fs::read_to_string(full_output_path(&out)).unwrap();
    assert_eq!(full.chars().count(), 200_000);
    assert!(!out.contains('\u{FFFD}'), "a character was split");
    let body = out.split_once("\n\n").unwrap().1;
    let (head, rest) = body.split_once("\n[... 0 lines, ").unwrap();
    let tail = rest.split_once(" bytes omitted ...]\n").unwrap().1;
    let tail = tail.rsplit_once("\n\n[exit 0]").unwrap().0;
    assert_eq!(head.len(), 10_240);
    assert_eq!(tail.len(), 51_200 - 10_240);
    assert!(head.chars().all(|c| c == 'é') && tail.chars().all(|c| c == 'é'));
}

#[tokio::test]
async fn bash_full_outputs_are_private_files_in_the_session_folder() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let outputs = tempfile::tempdir().unwrap();
    let out = text(&bash_saving(dir.path(), outputs.path(), "seq 1 30000").await);
    let log = full_output_path(&out);
    let session = outputs.path().join("session-1");
    assert_eq!(log.parent(), Some(session.as_path()));
    let name = log.file_name().unwrap().to_str().unwrap();
    assert!(
        name.starts_with("bash-") && name.ends_with(".log"),
        "{name}"
    );
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&log), 0o600);
    assert_eq!(mode(&session), 0o700);
    assert_eq!(
        std::fs::read_to_string(&log).unwrap().lines().count(),
        30_000
    );

    // Output within the caps leaves no file.
    let out = text(&bash_saving(dir.path(), outputs.path(), "seq 1 10").await);
    assert!(!out.contains("[zot:"), "{out}");
    assert_eq!(std::fs::read_dir(&session).unwrap().count(), 1);
}

#[tokio::test]
async fn bash_without_an_output_folder_says_the_output_was_not_saved() {
    let dir = tempfile::tempdir().unwrap();
    let out = call_ok(&BashTool, dir.path(), json!({"command": "seq 1 3000"})).await;
    assert!(
        out.lines()
            .last()
            .unwrap()
            .ends_with(" bytes omitted; full output not saved: no folder for tool outputs]"),
        "{}",
        out.lines().last().unwrap()
    );
}

#[tokio::test]
async fn bash_progress_is_bounded_when_its_reader_is_behind() {
    let dir = tempfile::tempdir().unwrap();
    let outputs = tempfile::tempdir().unwrap();
    let (tx, mut rx) = progress_channel();
    let mut ctx = ToolContext::new(dir.path());
    ctx.progress = Some(tx);
    ctx.output_dir = Some(outputs.path().join("s"));
    // 20 MB of output while nobody reads the progress.
    let out = BashTool
        .call(json!({"command": "yes 0123456789012345678901234567890123456789abcdefghi | head -c 20000000"}), &ctx)
        .await;
    assert!(!out.is_error, "{out:?}");
    drop(ctx);
    let chunk = rx.recv().await.unwrap();
    assert!(chunk.text.len() <= PROGRESS_BUFFER_BYTES);
    assert_eq!(chunk.text.len() as u64 + chunk.dropped_bytes, 20_000_000);
    assert!(
        chunk.text.ends_with("abcdefghi\n"),
        "the newest output is kept"
    );
    assert_eq!(rx.recv().await, None);
}

#[tokio::test]
async fn bash_timeout_kills_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let command = format!(
        "sleep 100 & echo $! > {}; echo started; wait",
        pid_file.display()
    );
    let out = call(
        &BashTool,
        dir.path(),
        json!({"command": command, "timeout": 1}),
    )
    .await;
    assert!(out.is_error);
    let out = text(&out);
    assert!(out.ends_with("[timed out after 1s]"), "{out}");
    assert_dies(read_pid(&pid_file).await).await;
}

#[tokio::test]
async fn bash_timeout_kills_what_ignores_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    // Ignored signals stay ignored across exec, so this sleep shrugs off SIGTERM.
    let command = format!(
        "sh -c 'trap \"\" TERM; echo $$ > {}; exec sleep 100' & wait",
        pid_file.display()
    );
    let out = call(
        &BashTool,
        dir.path(),
        json!({"command": command, "timeout": 1}),
    )
    .await;
    assert!(out.is_error);
    assert!(text(&out).ends_with("[timed out after 1s]"), "{out:?}");
    assert_dies(read_pid(&pid_file).await).await;
}

#[tokio::test]
async fn bash_endless_background_output_does_not_hang() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    // The shell exits once the spammer is under way; the spammer is ended
    // with it (its supervisor ends what a command leaves behind).
    let command = format!(
        "(echo spam; : > started; while :; do echo spam; done) & echo $! > {}; \
         while [ ! -e started ]; do :; done; echo done",
        pid_file.display()
    );
    let out = call_ok(&BashTool, dir.path(), json!({ "command": command })).await;
    assert!(
        out.contains("spam") && out.contains("[exit 0]"),
        "{}",
        &out[out.len().saturating_sub(300)..]
    );
    assert_dies(read_pid(&pid_file).await).await;
}

#[tokio::test]
async fn bash_background_process_holding_the_pipe_does_not_hang() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let command = format!("sleep 100 & echo $! > {}; echo done", pid_file.display());
    let out = call_ok(&BashTool, dir.path(), json!({ "command": command })).await;
    assert!(out.ends_with("done\n\n[exit 0]"), "{out}");
    assert_dies(read_pid(&pid_file).await).await;
}

#[tokio::test]
async fn bash_cancel_aborts_and_kills_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let (tx, mut rx) = progress_channel();
    let mut ctx = ToolContext::new(dir.path());
    ctx.progress = Some(tx);
    let cancel = ctx.cancel.clone();
    let command = format!(
        "sleep 100 & echo $! > {}; echo started; wait",
        pid_file.display()
    );
    let task =
        tokio::spawn(async move { BashTool.call(json!({ "command": command }), &ctx).await });

    let mut seen = String::new();
    while !seen.contains("started") {
        seen.push_str(
            &rx.recv()
                .await
                .expect("progress before the command ended")
                .text,
        );
    }
    cancel.cancel();
    let out = task.await.unwrap();
    assert!(out.is_error);
    let out = text(&out);
    assert!(
        out.contains("started") && out.ends_with("[aborted]"),
        "{out}"
    );
    assert_dies(read_pid(&pid_file).await).await;
}

#[tokio::test]
async fn bash_already_cancelled_does_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(dir.path());
    ctx.cancel.cancel();
    let out = BashTool.call(json!({"command": "touch ran"}), &ctx).await;
    assert!(out.is_error);
    assert!(text(&out).ends_with("[aborted]"));
    assert!(!dir.path().join("ran").exists());
}

#[tokio::test]
async fn bash_argument_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases: &[(Value, &str)] = &[
        (json!({}), "missing required argument `command`"),
        (json!({"command": 5}), "`command` must be a string"),
        (json!({"command": "  "}), "`command` is empty"),
        (
            json!({"command": "true", "timeout": "5"}),
            "`timeout` must be a positive integer",
        ),
        (
            json!({"command": "true", "timeout": 0}),
            "`timeout` must be a positive integer",
        ),
    ];
    for (args, wanted) in cases {
        let err = call_err(&BashTool, d, args.clone()).await;
        assert!(err.contains(wanted), "wanted {wanted:?} in {err:?}");
    }

    let err = call_err(
        &BashTool,
        &d.join("no-such-dir"),
        json!({"command": "true"}),
    )
    .await;
    assert!(err.contains("no-such-dir"), "{err}");
}

#[tokio::test]
async fn a_saved_bash_output_keeps_its_first_and_last_32_mib() {
    let dir = tempfile::tempdir().unwrap();
    let outputs = tempfile::tempdir().unwrap();
    // 6 + 80 MiB + 1 + 4 bytes: START, a long line, END.
    let filler = 80 * 1024 * 1024;
    let command = format!("echo START; head -c {filler} /dev/zero | tr '\\0' x; echo; echo END");
    let out = bash_saving(dir.path(), outputs.path(), &command).await;
    let path = full_output_path(&text(&out));
    let saved = std::fs::read(&path).unwrap();
    let max = tools::output::MAX_SAVED_OUTPUT_BYTES;
    let cut = 6 + filler + 1 + 4 - max;
    let note = tools::output::cut_note(cut);
    assert_eq!(saved.len() as u64, max + note.len() as u64);
    assert!(saved.starts_with(b"START\nxxx"));
    assert!(saved.ends_with(b"xxx\nEND\n"));
    let half = usize::try_from(max / 2).unwrap();
    assert_eq!(&saved[half..half + note.len()], note.as_bytes());
    // The ring that held the end is gone.
    let files: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
}

#[tokio::test]
async fn an_output_a_little_over_half_the_cap_is_saved_whole() {
    let dir = tempfile::tempdir().unwrap();
    let outputs = tempfile::tempdir().unwrap();
    // Past the first half, so its end goes through the ring, but not cut.
    let size = 40 * 1024 * 1024;
    let command = format!("echo START; head -c {size} /dev/zero | tr '\\0' y; echo END");
    let out = bash_saving(dir.path(), outputs.path(), &command).await;
    let saved = std::fs::read(full_output_path(&text(&out))).unwrap();
    assert_eq!(saved.len(), 6 + size + 4);
    assert!(saved.starts_with(b"START\nyyy") && saved.ends_with(b"yyyEND\n"));
}

#[tokio::test]
async fn bash_has_a_default_timeout_and_a_call_may_ask_for_at_most_an_hour() {
    let dir = tempfile::tempdir().unwrap();
    let mut ctx = ToolContext::new(dir.path());
    assert_eq!(ctx.bash_timeout, Duration::from_secs(600));
    ctx.bash_timeout = Duration::from_secs(1);
    let out = BashTool
        .call(json!({"command": "echo started; sleep 30"}), &ctx)
        .await;
    assert!(out.is_error);
    assert!(text(&out).ends_with("[timed out after 1s]"), "{out:?}");

    // The call's own timeout wins over the default.
    let out = BashTool
        .call(
            json!({"command": "sleep 2; echo done", "timeout": 20}),
            &ctx,
        )
        .await;
    assert!(!out.is_error, "{out:?}");

    let out = BashTool
        .call(json!({"command": "true", "timeout": 3601}), &ctx)
        .await;
    assert!(out.is_error);
    assert_eq!(
        text(&out),
        "argument `timeout` must be at most 3600 seconds, got 3601"
    );
    let schema = BashTool.spec().schema;
    assert_eq!(schema["properties"]["timeout"]["maximum"], 3600);
}
