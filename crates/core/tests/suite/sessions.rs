//! Which session is the newest (`-c` continues it, lists show it first)
//! when two were written at the same moment.

use std::time::{Duration, SystemTime};

use zot_core::message::Message;
use zot_core::session::{Session, index};

/// A `/clear` writes the old session's last entries and the prompt after
/// it writes the new one; on a fast machine both land within one tick of
/// the file system's clock, and the new session must still be the latest,
/// for `-c` and at the top of the list alike.
#[test]
fn of_two_sessions_last_written_in_one_tick_the_later_created_is_the_latest() {
    let tmp = tempfile::tempdir().unwrap();
    let mut first = Session::create(tmp.path(), tmp.path(), "anthropic", "m").unwrap();
    first.append(&Message::user("before the clear"));
    // Creation times a few clock ticks apart.
    std::thread::sleep(Duration::from_millis(30));
    let mut second = first.successor("anthropic", "m").unwrap();
    second.append(&Message::user("after the clear"));
    let created = |session: &Session| std::fs::metadata(session.path()).unwrap().created();
    let (Ok(older), Ok(newer)) = (created(&first), created(&second)) else {
        eprintln!("skipped: this file system keeps no creation times");
        return;
    };
    assert!(older < newer);
    // Both modified at the same instant, the older one's name the greater,
    // so neither the time nor the name alone picks the newer session.
    let when = SystemTime::now();
    for session in [&first, &second] {
        let file = std::fs::OpenOptions::new()
            .append(true)
            .open(session.path())
            .unwrap();
        file.set_modified(when).unwrap();
    }
    let renamed = first
        .path()
        .with_file_name("99999999-999999-ffffffff.jsonl");
    std::fs::rename(first.path(), &renamed).unwrap();
    assert_eq!(
        Session::newest_first(tmp.path(), tmp.path())[0],
        second.path()
    );
    let listed: Vec<String> = index::list(tmp.path(), Some(tmp.path()))
        .unwrap()
        .into_iter()
        .map(|summary| summary.path)
        .collect();
    let paths = [second.path(), renamed.as_path()].map(|p| p.display().to_string());
    assert_eq!(listed, paths);
}
