//! Permission scopes as the CLI shows them: the `zot ext list`/`doctor`
//! column, `zot ext permissions <name>`, and what `zot ext install` prints
//! about what an extension asks for.

use std::process::ExitCode;

use anyhow::bail;
use serde_json::json;
use zot_extensions::{Found, Manifest, Permissions, discover};
use zot_sandbox::{Enforce, Grant, Kernel, Net, Policy, Scope};

use crate::context::Context;

/// The user's policy, or an error naming the file.
pub fn policy(ctx: &Context) -> anyhow::Result<Policy> {
    Ok(Policy::load(&ctx.zot_home)?)
}

/// The permissions of a found process extension (`None` for bundles and
/// invalid manifests, which start no process).
pub fn of(ctx: &Context, policy: &Policy, found: &Found) -> Option<Permissions> {
    let manifest = found.manifest().filter(|m| m.is_process())?;
    Some(Permissions::of(&ctx.config, policy, manifest, found.scope))
}

/// One word for tables: `unrestricted`, `scoped`, `scoped (partial)`
/// (best-effort with something unenforced) or `scoped (cannot start)`.
pub fn label(permissions: Option<&Permissions>) -> &'static str {
    match permissions {
        None => "-",
        Some(p) if p.unrestricted() => "unrestricted",
        Some(p) if p.unenforced.is_empty() => "scoped",
        Some(p) if p.enforce == Enforce::BestEffort => "scoped (partial)",
        Some(_) => "scoped (cannot start)",
    }
}

/// `zot ext permissions <name> [--json]`.
pub fn show(ctx: &Context, name: &str, as_json: bool) -> anyhow::Result<ExitCode> {
    let policy = policy(ctx)?;
    let found = discover(&ctx.config);
    let Some(entry) = found.iter().find(|f| {
        f.manifest().is_some_and(|m| m.name == name) || f.dir.file_name().is_some_and(|d| d == name)
    }) else {
        bail!("no extension named {name:?} (see `zot ext list`)");
    };
    let Some(permissions) = of(ctx, &policy, entry) else {
        bail!("{name} starts no process, so it has no permissions");
    };
    let kernel = Kernel::get();
    if as_json {
        let mut doc = permissions.to_json();
        doc["name"] = json!(name);
        doc["kernel"] = kernel.to_json();
        outln!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    let Grant::Scoped(scope) = &permissions.effective else {
        outln!("{name}: unrestricted (runs with your full user privileges)");
        if permissions.declared.is_none() {
            outln!(
                "  its manifest has no \"permissions\" field and permissions.json names no scope for it"
            );
        } else {
            outln!("  permissions.json lets it run unrestricted");
        }
        return Ok(ExitCode::SUCCESS);
    };
    outln!("{name}: scoped");
    for line in scope_lines(scope) {
        outln!("  {line}");
    }
    outln!(
        "  always: read and execute of its own directory, the system directories and its interpreter; read and write of its data directory"
    );
    if permissions.declared.as_ref() != Some(scope) {
        match &permissions.declared {
            Some(declared) => outln!(
                "  (its manifest asks for more: {}; narrowed by permissions.json)",
                declared.to_json()
            ),
            None => outln!("  (its manifest declares nothing; the scope is permissions.json's)"),
        }
    }
    outln!("enforcement: {}", permissions.enforce.as_str());
    outln!("kernel: {}", kernel.summary());
    if permissions.unenforced.is_empty() {
        outln!("enforced in full");
    } else {
        let verdict = match permissions.enforce {
            Enforce::Strict => "it will not start; missing",
            Enforce::BestEffort => "not enforced",
        };
        outln!("{verdict}: {}", permissions.unenforced.join(", "));
    }
    Ok(ExitCode::SUCCESS)
}

/// The scope, one `key: values` line per permission.
fn scope_lines(scope: &Scope) -> Vec<String> {
    let list = |places: &[zot_sandbox::Place]| -> String {
        let names: Vec<&str> = places.iter().map(zot_sandbox::Place::as_str).collect();
        if names.is_empty() {
            "-".to_owned()
        } else {
            names.join(", ")
        }
    };
    let net = match &scope.net {
        Net::None => "none".to_owned(),
        Net::All => "all".to_owned(),
        Net::Some { tcp, unix } => {
            let mut items: Vec<String> = tcp.iter().map(|p| format!("tcp:{p}")).collect();
            if *unix {
                items.push("unix".into());
            }
            if tcp.is_empty() {
                items.join(", ")
            } else {
                format!("{} (UDP is not restricted)", items.join(", "))
            }
        }
    };
    let env = if scope.env.is_empty() {
        "-".to_owned()
    } else {
        scope.env.join(", ")
    };
    vec![
        format!("read:  {}", list(&scope.read)),
        format!("write: {}", list(&scope.write)),
        format!("net:   {net}"),
        format!("env:   {env}"),
    ]
}

/// What `zot ext install` prints about what `manifest` asks for.
pub fn print_requests(manifest: &Manifest) {
    if !manifest.is_process() {
        return;
    }
    match &manifest.permissions {
        None => errln!(
            "permissions: none declared; it runs unrestricted (your full user privileges) unless permissions.json gives it a scope"
        ),
        Some(scope) => {
            errln!("permissions it asks for:");
            for line in scope_lines(scope) {
                errln!("  {line}");
            }
        }
    }
}
