//! The TUI's view of one ecosystem's extensions (`/mcp` for MCP servers):
//! each one with its state and tools, and `/<kind> off|on <name>` to stop
//! or start one for this session (the config files are not touched; `zot
//! ext disable` does that). Built on the host's neutral report; what the
//! ecosystem calls things comes from its [`Ecosystem`].

use zot_extensions::ecosystem::{self, Ecosystem};
use zot_extensions::{Dialect, ExtensionHost, ExtensionReport, ReportStatus};

/// What `/<kind>` with `args` shows, or why it cannot.
pub async fn run(host: &ExtensionHost, eco: &dyn Ecosystem, args: &str) -> Result<String, String> {
    let kind = eco.kind();
    let mut words = args.split_whitespace();
    match (words.next(), words.next(), words.next()) {
        (None, ..) => Ok(listing(&host.report(), eco)),
        (Some(verb @ ("on" | "off")), Some(own), None) => {
            let name = ext_name(kind, own);
            let known = host
                .report()
                .iter()
                .any(|r| is_of(r, kind) && r.name.as_deref() == Some(name.as_str()));
            if !known {
                let noun = eco.noun();
                return Err(format!("no {noun} {own:?} (type /{kind} for the list)"));
            }
            host.set_enabled(&name, verb == "on").await
        }
        _ => {
            let noun = eco.noun().rsplit(' ').next().unwrap_or("name");
            Err(format!(
                "usage: /{kind}, /{kind} off <{noun}>, /{kind} on <{noun}>"
            ))
        }
    }
}

/// Each extension's name as `/<kind> on|off` takes it, and whether it runs:
/// what the TUI completes after `/<kind> `.
pub fn names(report: &[ExtensionReport], kind: &str) -> Vec<(String, bool)> {
    report
        .iter()
        .filter(|r| is_of(r, kind))
        .filter_map(|r| {
            let name = r.name.as_deref()?;
            let running = matches!(&r.status, ReportStatus::Loaded(info) if info.running);
            Some((own_name(kind, name).to_owned(), running))
        })
        .collect()
}

fn is_of(report: &ExtensionReport, kind: &str) -> bool {
    matches!(report.dialect, Dialect::Adapted(of) if of == kind)
}

/// `<kind>:<name>` for `name` or `<kind>:name`.
fn ext_name(kind: &str, own: &str) -> String {
    match ecosystem::own_name(kind, own) {
        Some(_) => own.to_owned(),
        None => ecosystem::ext_name(kind, own),
    }
}

fn own_name<'a>(kind: &str, name: &'a str) -> &'a str {
    ecosystem::own_name(kind, name).unwrap_or(name)
}

/// One block per extension: its name and state, then its tools.
fn listing(report: &[ExtensionReport], eco: &dyn Ecosystem) -> String {
    let kind = eco.kind();
    let extensions: Vec<&ExtensionReport> = report.iter().filter(|r| is_of(r, kind)).collect();
    if extensions.is_empty() {
        return format!("no {}s ({})", eco.noun(), eco.add_hint());
    }
    let noun = eco.noun().rsplit(' ').next().unwrap_or("name");
    let mut out = format!(
        "{}s (for this session: /{kind} off <{noun}>, /{kind} on <{noun}>)",
        eco.noun()
    );
    for extension in extensions {
        let name = extension.name.as_deref().unwrap_or("?");
        let (state, tools) = match &extension.status {
            ReportStatus::Loaded(info) if info.running => {
                let version = info
                    .protocol_version
                    .as_deref()
                    .map(|v| format!(", {} {v}", eco.label()))
                    .unwrap_or_default();
                let tools: Vec<&str> = info
                    .tools
                    .iter()
                    .map(|t| eco.tool_label(name, &t.name))
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
