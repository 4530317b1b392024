//! `zot completions <shell>` and `zot man`.

use super::support::World;

#[test]
fn completions_for_every_shell_know_the_subcommands() {
    let w = World::new();
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let run = w.zot(&["completions", shell]);
        assert_eq!(run.code, 0, "{shell}: {run:?}");
        assert!(run.stdout.len() > 500, "{shell}: {run:?}");
        for word in ["ext", "doctor", "config", "provider"] {
            assert!(run.stdout.contains(word), "{shell} lacks {word}");
        }
    }
    let run = w.zot(&["completions", "tcsh"]);
    assert_eq!(run.code, 2, "{run:?}");
}

#[test]
fn man_writes_a_roff_page() {
    let w = World::new();
    let run = w.zot(&["man"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains(".TH zot 1"), "{run:?}");
    for word in ["\\-\\-provider", "doctor", "completions"] {
        assert!(run.stdout.contains(word), "{word}");
    }
}

#[test]
fn a_reader_that_stops_early_is_not_an_error() {
    let w = World::new();
    for args in [&["completions", "bash"][..], &["man"]] {
        let mut child = w
            .cmd(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Closed before zot writes, like `| head` that has read enough.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
}
