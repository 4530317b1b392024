//! `zot ext …`: list, doctor, install, remove, enable, disable, logs.

use std::io::{BufRead, IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};
use serde_json::{Value, json};
use zot_extensions::ecosystem;
use zot_extensions::manage::{self, InstallOptions, Which};
use zot_extensions::{
    ExtensionHost, ExtensionReport, Found, FoundStatus, HostEvent, Launch, Owner, Readiness, Repin,
    ReportStatus, Scope, TrustStore, discover,
};

use crate::args::{ExtCommand, ScopeArgs};
use crate::context::{Context, display};

/// How often `logs -f` looks for new bytes.
const FOLLOW_POLL: Duration = Duration::from_millis(200);

pub fn run(ctx: &Context, command: &ExtCommand) -> anyhow::Result<ExitCode> {
    match command {
        ExtCommand::List { json } => list(ctx, *json),
        ExtCommand::Doctor { json } => doctor(ctx, *json),
        ExtCommand::Install {
            source,
            project,
            force,
        } => install(ctx, source, *project, *force),
        ExtCommand::Remove { name, yes, scope } => remove(ctx, name, *yes, scope),
        ExtCommand::Enable { name, scope } => set_enabled(ctx, name, scope, true),
        ExtCommand::Disable { name, scope } => set_enabled(ctx, name, scope, false),
        ExtCommand::Logs { name, follow } => logs(ctx, name, *follow),
        ExtCommand::Permissions { name, json } => crate::permissions_cmd::show(ctx, name, *json),
        ExtCommand::New { name, lang, dir } => {
            crate::scaffold::run(ctx, name, *lang, dir.as_deref())
        }
    }
}

fn which(scope: &ScopeArgs) -> Which {
    match (scope.project, scope.global) {
        (true, _) => Which::Project,
        (_, true) => Which::Global,
        _ => Which::Either,
    }
}

/// One row of `ext list`.
struct Row {
    scope: &'static str,
    name: Option<String>,
    version: Option<String>,
    enabled: Option<bool>,
    language: Option<String>,
    state: &'static str,
    reason: Option<String>,
    dir: PathBuf,
    /// zot or nimlet (a theme or skill bundle counts as zot).
    protocol: &'static str,
    permissions: Option<zot_extensions::Permissions>,
    /// A remote extension's url as written (its headers are never shown).
    url: Option<String>,
    /// A remote extension's connection as zot just tried it.
    connection: Option<String>,
}

fn row(ctx: &Context, policy: &zot_sandbox::Policy, found: &Found) -> Row {
    let manifest = found.manifest();
    let (state, reason) = match &found.status {
        FoundStatus::Load(m) => ("ok", m.remote().map(|r| format!("remote, {}", r.url))),
        FoundStatus::Bundle(m) => match m.launch {
            Launch::ThemeBundle => ("ok", Some("theme bundle, no process".to_owned())),
            _ => ("ok", Some("skill bundle, no process".to_owned())),
        },
        FoundStatus::Disabled(_) => ("disabled", None),
        FoundStatus::Untrusted(_) => ("untrusted", Some("run `zot trust` to allow it".to_owned())),
        FoundStatus::Shadowed { by, .. } => ("shadowed", Some(format!("by {}", display(by)))),
        FoundStatus::Invalid(e) => ("invalid", Some(e.to_string())),
    };
    Row {
        scope: found.scope.as_str(),
        name: manifest.map(|m| m.name.clone()),
        version: manifest.and_then(|m| m.version.clone()),
        enabled: manifest.map(|m| m.enabled),
        language: manifest.and_then(|m| m.language.clone()),
        state,
        reason,
        dir: found.dir.clone(),
        protocol: found.dialect.as_str(),
        permissions: crate::permissions_cmd::of(ctx, policy, found),
        url: manifest.and_then(|m| m.remote()).map(|r| r.url.clone()),
        connection: None,
    }
}

/// Connects to every remote extension that would load (as zot does at
/// start: connect, hello, registration, then shutdown) and returns each
/// one's connection by directory. Nothing else is started: listing runs
/// no local extension.
fn connections(ctx: &Context, found: &[Found]) -> anyhow::Result<Vec<(PathBuf, String)>> {
    let remote: Vec<Found> = found
        .iter()
        .filter(|f| matches!(&f.status, FoundStatus::Load(m) if m.remote().is_some()))
        .cloned()
        .collect();
    if remote.is_empty() {
        return Ok(Vec::new());
    }
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    Ok(runtime.block_on(async {
        let (host, _events) = ExtensionHost::start_with(ctx.config.clone(), remote).await;
        let reports = host.report();
        host.shutdown().await;
        reports
            .into_iter()
            .filter_map(|r| Some((r.dir, r.connection?.to_string())))
            .collect()
    }))
}

fn list(ctx: &Context, as_json: bool) -> anyhow::Result<ExitCode> {
    let found = discover(&ctx.config);
    ctx.warn_untrusted(&found);
    let policy = crate::permissions_cmd::policy(ctx)?;
    let mut rows: Vec<Row> = found.iter().map(|f| row(ctx, &policy, f)).collect();
    for (dir, connection) in connections(ctx, &found)? {
        if let Some(row) = rows.iter_mut().find(|r| r.dir == dir) {
            if let Some(reason) = &mut row.reason {
                reason.push_str(&format!(", {connection}"));
            }
            row.connection = Some(connection);
        }
    }
    if as_json {
        let doc: Vec<Value> = rows
            .iter()
            .map(|r| {
                json!({
                    "scope": r.scope, "name": r.name, "version": r.version, "enabled": r.enabled,
                    "language": r.language, "protocol": r.protocol, "state": r.state,
                    "reason": r.reason, "dir": display(&r.dir), "url": r.url,
                    "connection": r.connection,
                    "permissions": r.permissions.as_ref().map(zot_extensions::Permissions::to_json),
                })
            })
            .collect();
        outln!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        errln!("no extensions installed");
        errln!(
            "install one with `zot ext install <path|git-url>`, or load one for a run with `zot --ext <dir>`"
        );
        return Ok(ExitCode::SUCCESS);
    }
    let dash = |s: &Option<String>| s.clone().unwrap_or_else(|| "-".to_owned());
    let table: Vec<[String; 9]> = rows
        .iter()
        .map(|r| {
            let state = match &r.reason {
                Some(reason) => format!("{}: {reason}", r.state),
                None => r.state.to_owned(),
            };
            [
                r.scope.to_owned(),
                dash(&r.name),
                dash(&r.version),
                r.enabled
                    .map_or("-", |e| if e { "yes" } else { "no" })
                    .to_owned(),
                dash(&r.language),
                r.protocol.to_owned(),
                crate::permissions_cmd::label(r.permissions.as_ref()).to_owned(),
                state,
                display(&r.dir),
            ]
        })
        .collect();
    let header = [
        "SCOPE",
        "NAME",
        "VERSION",
        "ENABLED",
        "LANGUAGE",
        "PROTOCOL",
        "PERMISSIONS",
        "STATE",
        "DIR",
    ];
    print_table(&header, &table);
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn print_table<const N: usize>(header: &[&str; N], rows: &[[String; N]]) {
    let mut widths = header.map(str::len);
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[&str]| {
        let mut out = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<width$}  ", width = widths[i]));
            }
        }
        outln!("{}", out.trim_end());
    };
    line(header);
    for row in rows {
        line(&row.iter().map(String::as_str).collect::<Vec<_>>());
    }
}

fn doctor(ctx: &Context, as_json: bool) -> anyhow::Result<ExitCode> {
    let doc = doctor_report(ctx)?;
    let ok = doc["ok"] == json!(true);
    if as_json {
        outln!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        let entries = doc["extensions"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        print_doctor(entries);
        let warned = entries
            .iter()
            .filter(|e| e["warnings"].as_array().is_some_and(|w| !w.is_empty()))
            .count();
        outln!(
            "\n{} extension(s): {} with errors, {} with warnings",
            entries.len(),
            doc["errors"],
            warned
        );
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Starts every extension as zot would and returns the report that
/// `zot ext doctor --json` prints (`zot doctor` embeds it).
pub fn doctor_report(ctx: &Context) -> anyhow::Result<Value> {
    let found = discover(&ctx.config);
    ctx.warn_untrusted(&found);
    let policy = crate::permissions_cmd::policy(ctx)?;
    let labels: Vec<(std::path::PathBuf, &'static str)> = found
        .iter()
        .map(|f| {
            let permissions = crate::permissions_cmd::of(ctx, &policy, f);
            (
                f.dir.clone(),
                crate::permissions_cmd::label(permissions.as_ref()),
            )
        })
        .collect();
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    let (reports, conflicts, mut warnings) = runtime.block_on(async {
        let (host, mut events) = ExtensionHost::start_with(ctx.config.clone(), found).await;
        let reports = host.report();
        let conflicts = host.conflicts();
        host.shutdown().await;
        let mut warnings: Vec<(String, String)> = Vec::new();
        while let Ok(event) = events.try_recv() {
            if let HostEvent::Warning { extension, message } = event {
                warnings.push((extension, message));
            }
        }
        (reports, conflicts, warnings)
    });
    for c in &conflicts {
        let what = match c.kind {
            zot_extensions::NameKind::Command => format!("command /{}", c.name),
            zot_extensions::NameKind::Tool => format!("tool \"{}\"", c.name),
        };
        let winner = match &c.winner {
            Owner::Builtin => "a built-in".to_owned(),
            Owner::Extension(name) => format!("extension {name}"),
        };
        warnings.push((c.loser.clone(), format!("{what} is shadowed by {winner}")));
    }

    let entries: Vec<Value> = reports
        .iter()
        .map(|r| {
            let mut entry = doctor_entry(r, &warnings);
            let label = labels
                .iter()
                .find(|(dir, _)| *dir == r.dir)
                .map(|(_, l)| *l);
            entry["permissions"] = json!(label.filter(|l| *l != "-"));
            entry
        })
        .collect();
    let errors = entries.iter().filter(|e| !e["error"].is_null()).count();
    let ok = errors == 0;
    let conflicts: Vec<Value> = conflicts
            .iter()
            .map(|c| {
                json!({
                    "kind": match c.kind { zot_extensions::NameKind::Command => "command", zot_extensions::NameKind::Tool => "tool" },
                    "name": c.name,
                    "winner": match &c.winner { Owner::Builtin => "builtin".to_owned(), Owner::Extension(n) => n.clone() },
                    "loser": c.loser,
                })
            })
            .collect();
    Ok(json!({ "ok": ok, "errors": errors, "extensions": entries, "conflicts": conflicts }))
}

/// One extension's doctor entry; the JSON shape is documented in the README.
fn doctor_entry(r: &ExtensionReport, warnings: &[(String, String)]) -> Value {
    let mut entry = json!({
        "scope": r.scope.as_str(),
        "name": r.name,
        "version": r.version,
        "protocol": r.dialect.as_str(),
        "dir": display(&r.dir),
        "url": r.url,
        "connection": r.connection.map(|c| c.to_string()),
        "log": r.log.as_deref().map(display),
        "state": Value::Null,
        "error": Value::Null,
        "shadowed_by": Value::Null,
        "exit_status": Value::Null,
        "commands": [],
        "tools": [],
        "events": [],
        "intercepts": [],
        "warnings": [],
    });
    let mut entry_warnings: Vec<String> = warnings
        .iter()
        .filter(|(ext, _)| r.name.as_deref() == Some(ext.as_str()))
        .map(|(_, m)| m.clone())
        .collect();
    let (state, error) = match &r.status {
        ReportStatus::Starting => ("starting", None),
        ReportStatus::Off => ("off", None),
        ReportStatus::Disabled => ("disabled", None),
        ReportStatus::Untrusted => ("untrusted", None),
        ReportStatus::Bundle => ("bundle", None),
        ReportStatus::Shadowed { by } => {
            entry["shadowed_by"] = json!(display(by));
            ("shadowed", None)
        }
        ReportStatus::InvalidManifest(e) => ("invalid_manifest", Some(e.to_string())),
        ReportStatus::Failed(e) => {
            entry["exit_status"] = json!(e.status);
            ("failed", Some(e.to_string()))
        }
        ReportStatus::Loaded(info) => {
            entry["commands"] = info
                .commands
                .iter()
                .map(|c| json!({"name": c.name, "description": c.description}))
                .collect();
            entry["tools"] = info
                .tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "deferred": t.deferred}))
                .collect();
            entry["events"] = json!(info.events);
            entry["intercepts"] = json!(info.intercepts);
            // An ecosystem's extensions report their negotiated protocol
            // version (`<kind>_version`) and resources.
            if let zot_extensions::Dialect::Adapted(kind) = r.dialect {
                entry[format!("{kind}_version")] = json!(info.protocol_version);
                entry["resources"] = json!(info.resources);
            }
            entry["exit_status"] = json!(info.exit);
            let state = match info.readiness {
                Readiness::Ready => "ready",
                Readiness::AutoReady => "auto_ready",
                Readiness::TimedOut => "ready_timeout",
                Readiness::Pending | Readiness::Exited => "exited",
            };
            if state == "ready_timeout" {
                entry_warnings
                    .push("never sent ready; zot stopped waiting after its ready deadline".into());
            }
            if state == "auto_ready" {
                entry_warnings.push("never sent ready; treated as ready after going quiet".into());
            }
            // An extension that died during start-up is an error, whatever its window said.
            if state == "exited" || info.exit.is_some() {
                let status = info.exit.clone().unwrap_or_else(|| "unknown status".into());
                let log = r.log.as_deref().map(display).unwrap_or_default();
                (
                    "exited",
                    Some(format!("exited during start-up ({status}); log: {log}")),
                )
            } else {
                (state, None)
            }
        }
    };
    entry["state"] = json!(state);
    entry["error"] = json!(error);
    entry["warnings"] = json!(entry_warnings);
    entry
}

fn print_doctor(entries: &[Value]) {
    let text = |v: &Value| v.as_str().unwrap_or("-").to_owned();
    for e in entries {
        let name = e["name"]
            .as_str()
            .map_or_else(|| text(&e["dir"]), str::to_owned);
        let version = e["version"]
            .as_str()
            .map(|v| format!(" {v}"))
            .unwrap_or_default();
        let permissions = e["permissions"]
            .as_str()
            .map(|p| format!(" ({p})"))
            .unwrap_or_default();
        outln!(
            "{} {name}{version}: {}{permissions}",
            text(&e["scope"]),
            text(&e["state"])
        );
        if let Some(error) = e["error"].as_str() {
            outln!("  error: {error}");
        }
        if let Some(by) = e["shadowed_by"].as_str() {
            outln!("  shadowed by {by}");
        }
        if let Some(url) = e["url"].as_str() {
            outln!("  url: {url}");
        }
        if let Some(connection) = e["connection"].as_str() {
            outln!("  connection: {connection}");
        }
        let names = |key: &str| -> Vec<String> {
            e[key]
                .as_array()
                .into_iter()
                .flatten()
                .map(|v| match v {
                    Value::Object(o) => {
                        let name = o.get("name").and_then(Value::as_str).unwrap_or_default();
                        let prefix = if key == "commands" { "/" } else { "" };
                        let deferred = if o.get("deferred") == Some(&Value::Bool(true)) {
                            " (deferred)"
                        } else {
                            ""
                        };
                        format!("{prefix}{name}{deferred}")
                    }
                    other => other.as_str().unwrap_or_default().to_owned(),
                })
                .collect()
        };
        // An ecosystem's extension: the version its handshake settled on.
        if let Some(protocol) = e["protocol"].as_str()
            && let Some(version) = e[format!("{protocol}_version")].as_str()
        {
            outln!("  {protocol} protocol: {version}");
        }
        for key in ["commands", "tools", "events", "intercepts", "resources"] {
            let items = names(key);
            if !items.is_empty() {
                outln!("  {key}: {}", items.join(", "));
            }
        }
        for warning in e["warnings"].as_array().into_iter().flatten() {
            outln!("  warning: {}", text(warning));
        }
        if let Some(log) = e["log"].as_str() {
            outln!("  log: {log}");
        }
    }
}

fn install(ctx: &Context, source: &str, project: bool, force: bool) -> anyhow::Result<ExitCode> {
    let root = if project {
        ctx.config.project_root()
    } else {
        ctx.config.global_root()
    };
    let options = InstallOptions {
        force,
        project: project.then(|| ctx.project.clone()),
        nimlet_root: if project {
            Some(ctx.config.agents_project_root())
        } else {
            ctx.config.agents_global_root()
        },
    };
    let (dest, manifest) = manage::install_with(source, &root, &options)?;
    let version = manifest
        .version
        .as_ref()
        .map(|v| format!(" {v}"))
        .unwrap_or_default();
    errln!(
        "installed {}{version} into {}",
        manifest.name,
        display(&dest)
    );
    crate::permissions_cmd::print_requests(&manifest);
    if project {
        repin(ctx, std::slice::from_ref(&dest))?;
    }
    if project && !ctx.config.project_trusted {
        errln!(
            "note: project extensions run only in a trusted project; run `zot trust` to allow them"
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// zot itself just wrote `written` in the project: a trusted project stays
/// trusted with the new content, unless other files changed too.
pub(crate) fn repin(ctx: &Context, written: &[PathBuf]) -> anyhow::Result<()> {
    let mut store = TrustStore::load(&ctx.zot_home)?;
    match store.repin(&ctx.project, written)? {
        Repin::NotTrusted | Repin::Repinned => {}
        Repin::Foreign(changes) => {
            let shown: Vec<String> = changes.iter().take(5).map(ToString::to_string).collect();
            let more = changes.len().saturating_sub(shown.len());
            let more = if more > 0 {
                format!(", and {more} more")
            } else {
                String::new()
            };
            errln!(
                "note: other extension files of this project changed since it was trusted ({}{more}); its extensions will not run until you run `zot trust`",
                shown.join(", ")
            );
        }
    }
    Ok(())
}

fn remove(ctx: &Context, name: &str, yes: bool, scope: &ScopeArgs) -> anyhow::Result<ExitCode> {
    if let Some(ecosystem) = ecosystem::owning(name) {
        bail!("{}", ecosystem.remove_advice(name));
    }
    let found = manage::find(&ctx.config, name, which(scope))?;
    let dir = display(&found.dir);
    if !yes {
        if !std::io::stdin().is_terminal() {
            bail!(
                "refusing to remove {dir} without confirmation: stdin is not a terminal; pass --yes"
            );
        }
        err!("remove {dir}? [y/N] ");
        std::io::stderr().flush()?;
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes") {
            errln!("aborted; nothing removed");
            return Ok(ExitCode::SUCCESS);
        }
    }
    // Its real path too, while it still has one (a symlinked root).
    let written: Vec<PathBuf> = std::iter::once(found.dir.clone())
        .chain(found.dir.canonicalize().ok())
        .collect();
    manage::remove(&found.dir)?;
    errln!("removed {dir}");
    if found.scope == Scope::Project {
        repin(ctx, &written)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn set_enabled(
    ctx: &Context,
    name: &str,
    scope: &ScopeArgs,
    enabled: bool,
) -> anyhow::Result<ExitCode> {
    let verb = if enabled { "enabled" } else { "disabled" };
    // An ecosystem's extension is turned on or off in the file that configures it.
    if let Some(ecosystem) = ecosystem::owning(name) {
        let (found_in, path) = ecosystem.set_enabled(&ctx.config, name, which(scope), enabled)?;
        errln!("{verb} {name} ({})", display(&path));
        if found_in == Scope::Project {
            repin(ctx, &[path])?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let found = manage::find(&ctx.config, name, which(scope))?;
    manage::set_enabled(&found.dir, enabled)?;
    errln!("{verb} {name} ({})", display(&found.dir));
    if found.scope == Scope::Project {
        repin(
            ctx,
            &[found.dir.join(zot_extensions::manifest::MANIFEST_FILE)],
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

fn logs(ctx: &Context, name: &str, follow: bool) -> anyhow::Result<ExitCode> {
    // The log is keyed by manifest name; a directory name resolves to it.
    let manifest_name = match manage::find(&ctx.config, name, Which::Either)
        .ok()
        .and_then(|found| zot_extensions::Manifest::load(&found.dir).ok())
    {
        Some(manifest) => manifest.name,
        // An ecosystem's extension's log is named after `<kind>:<name>`.
        None if ecosystem::owning(name).is_some_and(|e| e.is_valid_name(name)) => name.to_owned(),
        // Not installed (an --ext one, or gone): the name is a file name part.
        None => {
            zot_extensions::manifest::validate_name(name)
                .map_err(|why| anyhow::anyhow!("\"{name}\" is not an extension name: it {why}"))?;
            name.to_owned()
        }
    };
    let path = ctx.config.log_path(&manifest_name);
    let mut file = std::fs::File::open(&path)
        .map_err(|e| anyhow::anyhow!("no log for \"{name}\" at {}: {e}", display(&path)))?;
    let mut stdout = std::io::stdout().lock();
    let mut offset = copy_new(&mut file, &mut stdout)?;
    if !follow {
        return Ok(ExitCode::SUCCESS);
    }
    // Follow until Ctrl-C, even when started with SIGINT ignored (as a
    // background job of a non-interactive shell is).
    // SAFETY: restoring the default disposition installs no handler code.
    unsafe {
        use nix::sys::signal::{SigHandler, Signal, signal};
        signal(Signal::SIGINT, SigHandler::SigDfl).context("cannot restore SIGINT")?;
    }
    loop {
        std::thread::sleep(FOLLOW_POLL);
        let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        if len < offset {
            // Truncated or replaced: start over from the top of the new file.
            file = match std::fs::File::open(&path) {
                Ok(file) => file,
                Err(_) => continue,
            };
            offset = 0;
        }
        offset += copy_new(&mut file, &mut stdout)?;
    }
}

/// Copies from the file's position to its end; returns the byte count.
/// A closed stdout (a pipe into `head`) ends the command quietly.
fn copy_new(file: &mut std::fs::File, out: &mut impl Write) -> anyhow::Result<u64> {
    let mut buf = Vec::new();
    file.read_to_end(&mut buf)?;
    let written = out.write_all(&buf).and_then(|()| out.flush());
    if let Err(e) = written {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        return Err(e.into());
    }
    Ok(buf.len() as u64)
}
