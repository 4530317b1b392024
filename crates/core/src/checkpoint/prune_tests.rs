//! Pruning against real checkpoint stores: the snapshots are made by
//! `Checkpoints`, which builds on `prune.rs`, so these tests sit beside both.

use std::path::Path;

use super::Checkpoints;
use super::git::Git;
use super::location::root;
use super::prune::{FULL_PASS_EVERY, prune, prune_at_start, session_refs};

/// One prompt of session `id` (its file `file`) that writes `name`.
async fn snapshot(checkpoints: &Checkpoints, project: &Path, id: &str, file: &Path, name: &str) {
    std::fs::write(file, "{}\n").unwrap();
    checkpoints.start_prompt(file);
    let args = serde_json::json!({"command": "true"});
    assert!(checkpoints.before_tool(id, "bash", &args).await.is_empty());
    std::fs::write(project.join(name), id).unwrap();
    let (record, _) = checkpoints.end_prompt(id, "e1").await;
    assert!(record.is_some());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sessions_checkpoints_go_with_its_file_and_recent_ones_stay_under_the_size_limit() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let root = root(home.path());
    let checkpoints = Checkpoints::new(&root, project.path());
    let (one, two) = (home.path().join("one.jsonl"), home.path().join("two.jsonl"));
    snapshot(&checkpoints, project.path(), "one", &one, "a.txt").await;
    snapshot(&checkpoints, project.path(), "two", &two, "b.txt").await;
    let store = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let git = Git {
        git_dir: store.join("git"),
        work_tree: project.path().canonicalize().unwrap(),
        index: store.join("git").join("index"),
    };
    let ids = || -> Vec<String> { session_refs(&git).into_iter().map(|(_, id)| id).collect() };
    assert_eq!(ids(), ["one", "two"]);
    assert_eq!(prune(home.path(), &root, u64::MAX), 0);

    std::fs::remove_file(&one).unwrap();
    assert_eq!(prune(home.path(), &root, u64::MAX), 1);
    assert_eq!(ids(), ["two"]);
    assert!(!store.join("git/indexes/one").exists());
    // Over any size, a session that snapshot within the hour stays.
    assert_eq!(prune(home.path(), &root, 0), 0);
    assert_eq!(ids(), ["two"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_start_prunes_its_project_at_once_and_other_projects_once_a_day() {
    let home = tempfile::tempdir().unwrap();
    let (here, there) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let root = root(home.path());
    let (one, two) = (home.path().join("one.jsonl"), home.path().join("two.jsonl"));
    let mine = Checkpoints::new(&root, here.path());
    snapshot(&mine, here.path(), "one", &one, "a.txt").await;
    let theirs = Checkpoints::new(&root, there.path());
    snapshot(&theirs, there.path(), "two", &two, "b.txt").await;
    // The first start makes the full pass and marks it.
    assert_eq!(prune_at_start(home.path(), &root, here.path()), 0);
    assert!(root.join(".pruned").exists());
    std::fs::remove_file(&one).unwrap();
    std::fs::remove_file(&two).unwrap();
    // Within the day: this project's deleted session goes, the other
    // project's waits for the next full pass.
    assert_eq!(prune_at_start(home.path(), &root, here.path()), 1);
    assert_eq!(prune_at_start(home.path(), &root, here.path()), 0);
    let day_ago = std::time::SystemTime::now() - FULL_PASS_EVERY;
    std::fs::File::options()
        .write(true)
        .open(root.join(".pruned"))
        .unwrap()
        .set_modified(day_ago)
        .unwrap();
    assert_eq!(prune_at_start(home.path(), &root, here.path()), 1);
}
