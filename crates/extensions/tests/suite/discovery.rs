//! Item 2: discovery order, shadowing, disabled manifests, `$ZOT_HOME`.

use std::ffi::OsString;
use std::path::PathBuf;

use zot_extensions::{ExtensionHost, FoundStatus, ReportStatus, Scope, discover, zot_home_from};

use super::support::{Env, Root, registers};

const MARKS_START: &str = r#"
open("started", "w").write(str(os.getpid()))
"#;

#[test]
fn order_is_explicit_then_project_then_global_each_sorted() {
    let env = Env::new();
    for dir in ["b", "a", "c"] {
        env.manifest(
            Root::Global,
            dir,
            &format!(r#"{{"name":"g-{dir}","exec":"x"}}"#),
        );
        env.manifest(
            Root::Project,
            dir,
            &format!(r#"{{"name":"p-{dir}","exec":"x"}}"#),
        );
    }
    let z = env.manifest(Root::Scratch, "z", r#"{"name":"e-z","exec":"x"}"#);
    let y = env.manifest(Root::Scratch, "y", r#"{"name":"e-y","exec":"x"}"#);
    // A directory without a manifest is not an extension.
    std::fs::create_dir_all(env.root(Root::Global).join("not-an-extension")).unwrap();

    let found = discover(&env.config(&[&z, &y]));
    let names: Vec<_> = found
        .iter()
        .map(|f| f.manifest().unwrap().name.as_str())
        .collect();
    assert_eq!(
        names,
        ["e-z", "e-y", "p-a", "p-b", "p-c", "g-a", "g-b", "g-c"]
    );
    let scopes: Vec<_> = found.iter().map(|f| f.scope).collect();
    assert_eq!(scopes[..2], [Scope::Explicit, Scope::Explicit]);
    assert_eq!(scopes[2], Scope::Project);
    assert_eq!(scopes[7], Scope::Global);
}

#[test]
fn no_ext_skips_roots_but_keeps_explicit() {
    let env = Env::new();
    env.manifest(Root::Global, "g", r#"{"name":"g","exec":"x"}"#);
    let e = env.manifest(Root::Scratch, "e", r#"{"name":"e","exec":"x"}"#);
    let mut config = env.config(&[&e]);
    config.discover = false;
    let found = discover(&config);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].manifest().unwrap().name, "e");
}

#[tokio::test]
async fn same_name_explicit_beats_project_beats_global_and_losers_never_spawn() {
    let env = Env::new();
    let body = format!("{MARKS_START}{}", registers("[]"));
    let global = env.py(Root::Global, "dup-global", "dup", &body);
    let project = env.py(Root::Project, "dup-project", "dup", &body);
    let explicit = env.py(Root::Scratch, "dup-explicit", "dup", &body);
    // Project vs global only.
    let only_pg = env.py(Root::Project, "pg", "pg", &body);
    let only_pg_global = env.py(Root::Global, "pg", "pg", &body);

    let (host, _rx) = ExtensionHost::start(env.config(&[&explicit])).await;
    let report = host.report();
    let status = |dir: &PathBuf| &report.iter().find(|r| &r.dir == dir).unwrap().status;
    assert!(matches!(status(&explicit), ReportStatus::Loaded(_)));
    assert!(matches!(status(&project), ReportStatus::Shadowed { by } if by == &explicit));
    assert!(matches!(status(&global), ReportStatus::Shadowed { by } if by == &explicit));
    assert!(matches!(status(&only_pg), ReportStatus::Loaded(_)));
    assert!(matches!(status(&only_pg_global), ReportStatus::Shadowed { by } if by == &only_pg));
    assert!(explicit.join("started").exists());
    assert!(only_pg.join("started").exists());
    for loser in [&project, &global, &only_pg_global] {
        assert!(
            !loser.join("started").exists(),
            "{} was spawned",
            loser.display()
        );
    }
    host.shutdown().await;
}

#[tokio::test]
async fn disabled_manifests_are_listed_not_spawned_and_claim_no_name() {
    let env = Env::new();
    let body = format!("{MARKS_START}{}", registers("[]"));
    let off = env.manifest(
        Root::Project,
        "off",
        r#"{"name":"same","exec":"./ext.py","enabled":false}"#,
    );
    super::support::write_exec(
        &off.join("ext.py"),
        &format!("{}\nNAME='same'\n{body}", super::support::PY_PRELUDE),
    );
    let on = env.py(Root::Global, "on", "same", &body);

    let config = env.config(&[]);
    let found = discover(&config);
    assert!(matches!(found[0].status, FoundStatus::Disabled(_)));
    assert!(matches!(found[1].status, FoundStatus::Load(_)));

    let (host, _rx) = ExtensionHost::start(config).await;
    assert!(matches!(host.report()[0].status, ReportStatus::Disabled));
    assert!(!off.join("started").exists());
    assert!(on.join("started").exists());
    host.shutdown().await;
}

#[test]
fn zot_home_resolution() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |key: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| OsString::from(*v))
        }
    };
    assert_eq!(
        zot_home_from(env(&[
            ("ZOT_HOME", "/z"),
            ("XDG_STATE_HOME", "/x"),
            ("HOME", "/h")
        ])),
        Some(PathBuf::from("/z"))
    );
    assert_eq!(
        zot_home_from(env(&[
            ("ZOT_HOME", ""),
            ("XDG_STATE_HOME", "/x"),
            ("HOME", "/h")
        ])),
        Some(PathBuf::from("/x/zot"))
    );
    if cfg!(target_os = "linux") {
        assert_eq!(
            zot_home_from(env(&[("HOME", "/h")])),
            Some(PathBuf::from("/h/.local/state/zot"))
        );
    }
    assert_eq!(zot_home_from(env(&[])), None);
}

/// The host core knows no ecosystem beyond zot and nimlet extensions: with
/// none installed (this test binary installs none), an MCP config file is
/// neither an entry nor pinned by trust, while a manifest beside it is both.
#[test]
fn without_an_installed_ecosystem_its_config_files_are_not_read() {
    let env = Env::new();
    env.manifest(Root::Project, "p", r#"{"name":"p","exec":"x"}"#);
    let server = r#"{"mcpServers": {"s": {"command": "node", "args": ["server.js"]}}}"#;
    std::fs::write(env.project.join(".mcp.json"), server).unwrap();
    std::fs::write(env.home.join("mcp.json"), server).unwrap();

    assert!(zot_extensions::ecosystem::installed().is_empty());
    let found = discover(&env.config(&[]));
    let names: Vec<_> = found
        .iter()
        .map(|f| f.manifest().unwrap().name.as_str())
        .collect();
    assert_eq!(names, ["p"]);
    assert!(zot_extensions::ecosystem::owning("mcp:s").is_none());

    let pinned = zot_extensions::trust::snapshot(&env.project);
    assert!(pinned.contains_key(".zot/extensions/p/extension.json"));
    assert!(!pinned.contains_key(".mcp.json"), "{pinned:?}");
}
