//! The TUI's `/mcp`: every MCP server the host knows with its state and
//! tools, and `/mcp off|on <server>` to stop or start one for this session
//! (the config files are not touched; `zot ext disable` does that).

use zot_extensions::{Dialect, ExtensionHost, ExtensionReport, ReportStatus};

/// What `/mcp` with `args` shows, or why it cannot.
pub async fn run(host: &ExtensionHost, args: &str) -> Result<String, String> {
    let mut words = args.split_whitespace();
    match (words.next(), words.next(), words.next()) {
        (None, ..) => Ok(listing(&host.report())),
        (Some(verb @ ("on" | "off")), Some(server), None) => {
            let name = ext_name(server);
            let known = host.report().iter().any(|r| {
                r.dialect == Dialect::Adapted(zot_mcp::KIND)
                    && r.name.as_deref() == Some(name.as_str())
            });
            if !known {
                return Err(format!("no MCP server {server:?} (type /mcp for the list)"));
            }
            host.set_enabled(&name, verb == "on").await
        }
        _ => Err("usage: /mcp, /mcp off <server>, /mcp on <server>".to_owned()),
    }
}

/// Each MCP server's name as `/mcp on|off` takes it, and whether it runs:
/// what the TUI completes after `/mcp `.
pub fn servers(report: &[ExtensionReport]) -> Vec<(String, bool)> {
    report
        .iter()
        .filter(|r| r.dialect == Dialect::Adapted(zot_mcp::KIND))
        .filter_map(|r| {
            let name = r.name.as_deref()?;
            let running = matches!(&r.status, ReportStatus::Loaded(info) if info.running);
            Some((
                name.strip_prefix("mcp:").unwrap_or(name).to_owned(),
                running,
            ))
        })
        .collect()
}

/// `mcp:<name>` for `name` or `mcp:name`.
fn ext_name(server: &str) -> String {
    match server.strip_prefix("mcp:") {
        Some(_) => server.to_owned(),
        None => zot_mcp::config::ext_name(server),
    }
}

/// One block per server: its name and state, then its tools.
fn listing(report: &[ExtensionReport]) -> String {
    let servers: Vec<&ExtensionReport> = report
        .iter()
        .filter(|r| r.dialect == Dialect::Adapted(zot_mcp::KIND))
        .collect();
    if servers.is_empty() {
        return "no MCP servers (add one with `zot mcp add`, see docs/mcp.md)".to_owned();
    }
    let mut out =
        String::from("MCP servers (for this session: /mcp off <server>, /mcp on <server>)");
    for server in servers {
        let name = server.name.as_deref().unwrap_or("?");
        let (state, tools) = match &server.status {
            ReportStatus::Loaded(info) if info.running => {
                let version = info
                    .protocol_version
                    .as_deref()
                    .map(|v| format!(", MCP {v}"))
                    .unwrap_or_default();
                let short = name.strip_prefix("mcp:").unwrap_or(name);
                let prefix = format!("mcp__{short}__");
                let tools: Vec<&str> = info
                    .tools
                    .iter()
                    .map(|t| t.name.strip_prefix(&prefix).unwrap_or(&t.name))
                    .collect();
                let state = format!("running{version}, {} tools", tools.len());
                (state, tools.join(", "))
            }
            ReportStatus::Loaded(info) => (
                format!("stopped ({})", info.exit.as_deref().unwrap_or("exited")),
                String::new(),
            ),
            ReportStatus::Starting => ("starting".to_owned(), String::new()),
            ReportStatus::Off => ("off for this session".to_owned(), String::new()),
            ReportStatus::Failed(e) => (format!("failed: {}", e.kind), String::new()),
            ReportStatus::Disabled => ("disabled in its config".to_owned(), String::new()),
            ReportStatus::Untrusted => (
                "not started: the project is not trusted".to_owned(),
                String::new(),
            ),
            ReportStatus::Shadowed { by } => {
                (format!("shadowed by {}", by.display()), String::new())
            }
            ReportStatus::InvalidManifest(e) => (format!("invalid: {e}"), String::new()),
            ReportStatus::Bundle => ("bundle".to_owned(), String::new()),
        };
        out.push_str(&format!("\n  {name}  {state}"));
        if !tools.is_empty() {
            out.push_str(&format!("\n    {tools}"));
        }
    }
    out
}
