//! Item 1: manifests. Every invalid manifest names the file and the field.

use zot_extensions::{ExtensionHost, Launch, Manifest, ReportStatus};

use super::support::{Env, Root, registers};

fn load(env: &Env, text: &str) -> Result<Manifest, zot_extensions::ManifestError> {
    let dir = env.manifest(Root::Global, "m", text);
    Manifest::load(&dir)
}

#[test]
fn full_manifest_parses() {
    let env = Env::new();
    let m = load(
        &env,
        r#"{"name":"weather","version":"1.0.0","exec":"./weather","args":["--mode","daemon"],
            "language":"go","description":"current weather","skills":["skills"],"enabled":true,
            "unknown_field":{"kept":"ignored"}}"#,
    )
    .unwrap();
    assert_eq!(m.name, "weather");
    assert_eq!(m.version.as_deref(), Some("1.0.0"));
    assert_eq!(m.language.as_deref(), Some("go"));
    assert_eq!(m.description.as_deref(), Some("current weather"));
    assert_eq!(m.skills, ["skills"]);
    assert!(m.enabled);
    assert_eq!(
        m.launch,
        Launch::Process {
            exec: "./weather".into(),
            args: vec!["--mode".into(), "daemon".into()]
        }
    );
}

#[test]
fn enabled_defaults_to_true_and_null_counts_as_absent() {
    let env = Env::new();
    assert!(load(&env, r#"{"name":"a","exec":"x"}"#).unwrap().enabled);
    assert!(
        load(&env, r#"{"name":"a","exec":"x","enabled":null}"#)
            .unwrap()
            .enabled
    );
    assert!(
        !load(&env, r#"{"name":"a","exec":"x","enabled":false}"#)
            .unwrap()
            .enabled
    );
}

#[test]
fn every_invalid_field_is_named_with_the_file() {
    let env = Env::new();
    let cases = [
        (r#"{"exec":"x"}"#, Some("name"), "is required"),
        (r#"{"name":7,"exec":"x"}"#, Some("name"), "must be a string"),
        (
            r#"{"name":"","exec":"x"}"#,
            Some("name"),
            "must not be empty",
        ),
        (
            r#"{"name":"a/b","exec":"x"}"#,
            Some("name"),
            "must not be a path",
        ),
        (r#"{"name":".."}"#, Some("name"), "must not be a path"),
        (r#"{"name":"a"}"#, Some("exec"), "is required"),
        (
            r#"{"name":"a","exec":["x"]}"#,
            Some("exec"),
            "must be a string",
        ),
        (
            r#"{"name":"a","exec":" "}"#,
            Some("exec"),
            "must not be empty",
        ),
        (
            r#"{"name":"a","exec":"x","args":"--x"}"#,
            Some("args"),
            "must be an array of strings",
        ),
        (
            r#"{"name":"a","exec":"x","args":["ok",3]}"#,
            Some("args"),
            "item 1 must be a string",
        ),
        (
            r#"{"name":"a","exec":"x","version":1}"#,
            Some("version"),
            "must be a string",
        ),
        (
            r#"{"name":"a","exec":"x","language":{}}"#,
            Some("language"),
            "must be a string",
        ),
        (
            r#"{"name":"a","exec":"x","description":[]}"#,
            Some("description"),
            "must be a string",
        ),
        (
            r#"{"name":"a","exec":"x","skills":"s"}"#,
            Some("skills"),
            "must be an array of strings",
        ),
        (
            r#"{"name":"a","exec":"x","enabled":"no"}"#,
            Some("enabled"),
            "must be true or false",
        ),
        (r#"{"name":"a","exec":"x""#, None, "invalid JSON"),
        (r#"["name","a"]"#, None, "must be a JSON object"),
    ];
    for (text, field, message) in cases {
        let err = load(&env, text).unwrap_err();
        assert_eq!(err.field.as_deref(), field, "{text}");
        assert!(err.message.contains(message), "{text}: {err}");
        let shown = err.to_string();
        assert!(shown.contains("extension.json"), "{shown}");
        if let Some(field) = field {
            assert!(shown.contains(&format!("field \"{field}\"")), "{shown}");
        }
    }
}

#[test]
fn missing_manifest_names_the_file() {
    let env = Env::new();
    let err = Manifest::load(&env.scratch.join("nothing-here")).unwrap_err();
    assert!(
        err.to_string().contains("nothing-here/extension.json"),
        "{err}"
    );
    assert!(err.message.contains("cannot read"), "{err}");
}

#[test]
fn theme_and_skill_bundles_need_no_exec() {
    let env = Env::new();
    let theme = env.manifest(Root::Global, "theme", r#"{"name":"dark"}"#);
    std::fs::write(theme.join("theme.json"), "{}").unwrap();
    assert_eq!(Manifest::load(&theme).unwrap().launch, Launch::ThemeBundle);

    let nested = env.manifest(Root::Global, "nested", r#"{"name":"light"}"#);
    std::fs::create_dir_all(nested.join("themes")).unwrap();
    std::fs::write(nested.join("themes/theme.json"), "{}").unwrap();
    assert_eq!(Manifest::load(&nested).unwrap().launch, Launch::ThemeBundle);

    let skills = env.manifest(Root::Global, "skills", r#"{"name":"sk","skills":["s"]}"#);
    assert_eq!(Manifest::load(&skills).unwrap().launch, Launch::SkillBundle);

    let empty_skills = env.manifest(Root::Global, "empty", r#"{"name":"e","skills":[]}"#);
    assert_eq!(
        Manifest::load(&empty_skills).unwrap_err().field.as_deref(),
        Some("exec")
    );
}

/// With a real host: invalid manifests are reported with their error, bundles
/// are never spawned, and a valid extension beside them still loads.
#[tokio::test]
async fn host_reports_invalid_manifests_and_loads_the_rest() {
    let env = Env::new();
    env.manifest(Root::Global, "broken", r#"{"name":"broken","exec":42}"#);
    let theme = env.manifest(Root::Global, "theme", r#"{"name":"dark"}"#);
    std::fs::write(theme.join("theme.json"), "{}").unwrap();
    env.py(
        Root::Global,
        "good",
        "good",
        &registers(r#"[{"type":"register_command","name":"hi"}]"#),
    );

    let (host, _rx) = ExtensionHost::start(env.config(&[])).await;
    let report = host.report();
    assert_eq!(report.len(), 3, "{report:?}");
    let by_dir = |d: &str| report.iter().find(|r| r.dir.ends_with(d)).unwrap();
    match &by_dir("broken").status {
        ReportStatus::InvalidManifest(e) => {
            assert_eq!(e.field.as_deref(), Some("exec"));
            assert!(e.to_string().contains("broken/extension.json"));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(by_dir("theme").status, ReportStatus::Bundle));
    assert!(by_dir("theme").log.is_none());
    assert!(matches!(by_dir("good").status, ReportStatus::Loaded(_)));
    assert_eq!(host.commands().len(), 1);
    host.shutdown().await;
}

#[test]
fn a_remote_manifest_has_a_url_instead_of_a_program() {
    use std::time::Duration;
    use zot_extensions::{Dialect, OnFailure, Remote};
    let env = Env::new();
    let m = load(
        &env,
        r#"{"name":"team-guard","url":"wss://guard.example.com/zot",
            "headers":{"Authorization":"Bearer ${TEAM_GUARD_TOKEN}"},"on_failure":"block"}"#,
    )
    .unwrap();
    assert_eq!(
        m.launch,
        Launch::Remote(Remote {
            url: "wss://guard.example.com/zot".into(),
            headers: vec![("Authorization".into(), "Bearer ${TEAM_GUARD_TOKEN}".into())],
            protocol: Dialect::Zot,
            timeout: None,
        })
    );
    assert_eq!(m.on_failure, OnFailure::Block);
    assert!(m.is_process());
    assert_eq!(m.dialect(), Some(Dialect::Zot));

    // The protocol follows the root unless the manifest names one.
    let dir = env.manifest(Root::Global, "n", r#"{"name":"n","url":"https://h/x"}"#);
    let nimlet = Manifest::load_in(&dir, Dialect::Nimlet).unwrap();
    assert_eq!(nimlet.dialect(), Some(Dialect::Nimlet));
    assert_eq!(
        nimlet.remote().unwrap().timeout,
        Some(Duration::from_secs(30))
    );
    let dir = env.manifest(
        Root::Global,
        "z",
        r#"{"name":"z","url":"https://h/x","protocol":"zot"}"#,
    );
    assert_eq!(
        Manifest::load_in(&dir, Dialect::Nimlet).unwrap().dialect(),
        Some(Dialect::Zot)
    );
    // on_failure works for local extensions too, and defaults to allow.
    assert_eq!(
        load(&env, r#"{"name":"a","exec":"x","on_failure":"block"}"#)
            .unwrap()
            .on_failure,
        OnFailure::Block
    );
    assert_eq!(
        load(&env, r#"{"name":"a","exec":"x"}"#).unwrap().on_failure,
        OnFailure::Allow
    );
}

#[test]
fn remote_manifest_mistakes_name_the_field() {
    let env = Env::new();
    let cases = [
        (
            r#"{"name":"a","exec":"x","url":"ws://localhost/"}"#,
            "exec",
            "cannot be given with \"url\"",
        ),
        (
            r#"{"name":"a","command":["x"],"url":"ws://localhost/"}"#,
            "command",
            "cannot be given with \"url\"",
        ),
        (
            r#"{"name":"a","url":"ftp://h/"}"#,
            "url",
            "must start with ws://",
        ),
        (r#"{"name":"a","url":7}"#, "url", "must be a string"),
        (
            r#"{"name":"a","url":"wss://h/${OOPS"}"#,
            "url",
            "without a closing",
        ),
        (
            r#"{"name":"a","url":"wss://h/","protocol":"mcp"}"#,
            "protocol",
            "must be \"zot\" or \"nimlet\"",
        ),
        (
            r#"{"name":"a","url":"wss://h/","headers":["x"]}"#,
            "headers",
            "must be an object",
        ),
        (
            r#"{"name":"a","url":"wss://h/","headers":{"X":1}}"#,
            "headers",
            "must be a string",
        ),
        (
            r#"{"name":"a","url":"wss://h/","on_failure":"maybe"}"#,
            "on_failure",
            "must be \"allow\" or \"block\"",
        ),
        (
            r#"{"name":"a","exec":"x","headers":{}}"#,
            "headers",
            "only for a remote extension",
        ),
    ];
    for (text, field, message) in cases {
        let err = load(&env, text).unwrap_err();
        assert_eq!(err.field.as_deref(), Some(field), "{text}: {err}");
        assert!(err.message.contains(message), "{text}: {err}");
        assert!(err.to_string().contains("extension.json"), "{err}");
    }
}
