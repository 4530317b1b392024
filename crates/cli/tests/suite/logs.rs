//! `zot ext logs [-f]`.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::support::World;

#[test]
fn logs_prints_the_log_by_either_name() {
    let w = World::new();
    w.ext_in(
        &w.global(),
        "dir-name",
        r#"{"name":"noisy","exec":"./ext.sh"}"#,
        "#!/bin/sh\necho 'complaint on stderr' >&2\nexit 1\n",
    );
    let run = w.zot(&["ext", "doctor"]);
    assert_eq!(run.code, 1, "{run:?}");
    for name in ["noisy", "dir-name"] {
        let run = w.zot(&["ext", "logs", name]);
        assert_eq!(run.code, 0, "{run:?}");
        assert!(run.stdout.contains("[zot] starting noisy/"), "{run:?}");
        assert!(run.stdout.contains("complaint on stderr"), "{run:?}");
        assert!(run.stdout.contains("exited before hello"), "{run:?}");
    }
}

#[test]
fn missing_log_says_where_it_looked() {
    let w = World::new();
    let run = w.zot(&["ext", "logs", "nobody"]);
    assert_eq!(run.code, 1, "{run:?}");
    let expected = w.home.join("logs").join("ext-nobody.log");
    assert!(
        run.stderr.starts_with("zot: no log for \"nobody\" at"),
        "{run:?}"
    );
    assert!(
        run.stderr.contains(&expected.display().to_string()),
        "{run:?}"
    );
}

#[test]
fn follow_prints_new_lines_as_they_arrive() {
    let w = World::new();
    let logs = w.home.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let path = logs.join("ext-tail.log");
    std::fs::write(&path, "first line\n").unwrap();
    let child = w
        .cmd(&["ext", "logs", "tail", "-f"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = KillOnDrop(child);
    let mut out = BufReader::new(child.0.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line, "first line\n");
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    writeln!(file, "second line").unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    assert_eq!(line, "second line\n");
    // Truncation (a new log) starts over.
    std::fs::write(&path, "new\n").unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    assert_eq!(line, "new\n");
    // Ctrl-C ends it.
    nix_interrupt(child.0.id());
    let deadline = Instant::now() + Duration::from_secs(5);
    while child.0.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "logs -f ignored Ctrl-C");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn nix_interrupt(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Kills the follower if the test fails before it ends.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn logs_refuses_a_name_that_is_a_path() {
    let w = World::new();
    // What `logs 'x/../../secret'` would have read.
    std::fs::create_dir_all(w.home.join("logs").join("ext-x")).unwrap();
    std::fs::write(w.home.join("secret.log"), "private").unwrap();
    let run = w.zot(&["ext", "logs", "x/../../secret"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("is not an extension name") && !run.stdout.contains("private"),
        "{run:?}"
    );
    let long = "n".repeat(65);
    let run = w.zot(&["ext", "logs", &long]);
    assert!(run.stderr.contains("at most 64 characters"), "{run:?}");
}
