//! Listing sessions (`zot sessions list`, the resume picker, `--resume=ID`):
//! 1,000 session files of 20 messages each under a temporary `$ZOT_HOME`,
//! listed cold (no index: every file read) and warm (the index is fresh:
//! one stat per file). The goal is 300 ms for 1,000 sessions.
//!
//! `cargo bench -p zot-core --bench sessions`
//! With `ZOT_BENCH_HOME=DIR` the sessions are written there and kept, to
//! time the binary: `ZOT_HOME=DIR zot sessions list --all`.

use std::path::Path;
use std::time::{Duration, Instant};

use zot_core::message::{Block, Message, Role};
use zot_core::session::{Session, index};
use zot_testkit::bench::Stats;

/// Sessions written, the figure.
const SESSIONS: usize = 1000;
/// Prompts per session (each with an answer): a short working session.
const PROMPTS: usize = 10;
/// Warm listings timed.
const RUNS: usize = 30;

fn populate(home: &Path) {
    for s in 0..SESSIONS {
        // Ten project directories, a hundred sessions each.
        let cwd = Path::new("/home/user/src").join(format!("project-{}", s % 10));
        let mut session = Session::create(home, &cwd, "anthropic", "claude-sonnet-4-5")
            .unwrap_or_else(|e| panic!("{e}"));
        for p in 0..PROMPTS {
            session.append(&Message::user(format!(
                "session {s}, prompt {p}: explain the parser's error recovery and fix the off-by-one in the lexer"
            )));
            session.append(&Message::new(
                Role::Assistant,
                vec![Block::Text {
                    text: "The lexer advances one byte too far after a multi-byte token; "
                        .repeat(8),
                }],
            ));
        }
    }
}

fn main() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let home =
        std::env::var_os("ZOT_BENCH_HOME").map_or_else(|| tmp.path().to_path_buf(), Into::into);
    populate(&home);

    let start = Instant::now();
    let listed = index::list(&home, None).unwrap_or_else(|e| panic!("{e}"));
    let cold = start.elapsed();
    assert_eq!(listed.len(), SESSIONS);

    let warm: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            let listed = index::list(&home, None).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(listed.len(), SESSIONS);
            start.elapsed()
        })
        .collect();
    let one_dir = Path::new("/home/user/src/project-3");
    let scoped: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            let listed = index::list(&home, Some(one_dir)).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(listed.len(), SESSIONS / 10);
            start.elapsed()
        })
        .collect();
    println!("{SESSIONS} sessions, {PROMPTS} prompts each");
    println!(
        "cold (no index, every file read): {:.1} ms",
        cold.as_secs_f64() * 1e3
    );
    println!("warm, every directory:            {}", Stats::of(&warm));
    println!("warm, one directory (100):        {}", Stats::of(&scoped));
}
