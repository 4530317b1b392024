//! MCP servers through the host's neutral `Ecosystem` API: found in both
//! config files as `mcp:<name>` entries, HTTP ones with the URL the host
//! reconnects, and turned on or off in the file that defines them.

use zot_extensions::ecosystem;
use zot_extensions::manage::Which;
use zot_extensions::{Dialect, FoundStatus, HostConfig, Launch, Scope};

#[test]
fn servers_are_entries_of_the_mcp_ecosystem_managed_in_their_file() {
    zot_mcp::install();
    let dir = tempfile::tempdir().unwrap();
    let (home, project) = (dir.path().join("home"), dir.path().join("project"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        home.join("mcp.json"),
        r#"{"mcpServers": {"web": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}"#,
    )
    .unwrap();
    std::fs::write(
        project.join(".mcp.json"),
        r#"{"mcpServers": {"local": {"command": "node", "args": ["server.js"]}}}"#,
    )
    .unwrap();
    let mut config = HostConfig::new(&home, &project);
    config.project_trusted = true;

    let eco = ecosystem::owning("mcp:web").expect("installed");
    assert_eq!(eco.kind(), zot_mcp::KIND);
    let found = zot_extensions::discover(&config);
    let entries: Vec<_> = found
        .iter()
        .map(|f| {
            let m = f.manifest().unwrap();
            let url = match &m.launch {
                Launch::Adapted(adapted) => adapted.url.clone(),
                other => panic!("not an ecosystem's launch: {other:?}"),
            };
            (m.name.as_str(), f.dialect, f.scope, url)
        })
        .collect();
    assert_eq!(
        entries,
        [
            ("mcp:local", Dialect::Adapted("mcp"), Scope::Project, None),
            (
                "mcp:web",
                Dialect::Adapted("mcp"),
                Scope::Global,
                Some("http://127.0.0.1:9/mcp".to_owned())
            ),
        ]
    );
    assert!(
        found
            .iter()
            .all(|f| matches!(f.status, FoundStatus::Load(_)))
    );

    // Off in the user's file (the project's has no such server).
    let (scope, path) = eco
        .set_enabled(&config, "mcp:web", Which::Either, false)
        .unwrap();
    assert_eq!((scope, path), (Scope::Global, home.join("mcp.json")));
    let status: Vec<_> = zot_extensions::discover(&config)
        .into_iter()
        .map(|f| matches!(f.status, FoundStatus::Disabled(_)))
        .collect();
    assert_eq!(status, [false, true]);
    let missing = eco
        .set_enabled(&config, "mcp:nothing", Which::Either, true)
        .unwrap_err();
    assert!(
        missing
            .to_string()
            .starts_with("no MCP server \"nothing\" in ")
    );

    assert!(eco.is_valid_name("mcp:web") && !eco.is_valid_name("mcp:.hidden"));
    assert_eq!(
        eco.remove_advice("mcp:web"),
        "mcp:web is an MCP server: remove it with `zot mcp remove web`"
    );
    assert_eq!(eco.tool_label("mcp:web", "mcp__web__search"), "search");
    assert!(eco.is_shared_tool(zot_mcp::LIST_RESOURCES));
    assert!(!eco.is_shared_tool("mcp__web__search"));
}
