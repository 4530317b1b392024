//! `zot hooks list`: every command hook the settings files configure, with
//! its source and whether it runs.

use std::process::ExitCode;

use serde_json::Value;
use zot_hooks::ecosystem::sources;
use zot_hooks::{Listed, settings};

use crate::args::HooksCommand;
use crate::context::Context;

pub fn run(ctx: &Context, command: &HooksCommand) -> anyhow::Result<ExitCode> {
    let HooksCommand::List { json } = command;
    let loaded = settings::load(&sources(&ctx.config, ctx.config.project_trusted));
    let listed = loaded.listed();
    if *json {
        let rows: Vec<Value> = listed.iter().map(Listed::to_json).collect();
        outln!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        if listed.is_empty() {
            outln!("no command hooks");
        }
        for hook in &listed {
            outln!("{}", hook.line());
        }
        if !ctx.config.hooks {
            outln!("(hooks are turned off: --no-hooks or the config key hooks: false)");
        }
    }
    for (path, error) in &loaded.errors {
        errln!("zot: warning: {}: skipped: {error}", path.display());
    }
    for (path, _, file) in &loaded.files {
        for problem in &file.problems {
            errln!("zot: warning: {}: {problem} (skipped)", path.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What `zot doctor` says about the hook files: per file that exists, its
/// hooks and what was skipped; plus problems (a file that cannot be read
/// is broken) and warnings (entries skipped, hooks that never run).
pub struct Checked {
    pub report: Value,
    pub problems: Vec<String>,
    pub warnings: Vec<String>,
}

pub fn doctor(ctx: &Context) -> Checked {
    use zot_hooks::tools::Matcher;
    let loaded = settings::load(&sources(&ctx.config, ctx.config.project_trusted));
    let mut problems = Vec::new();
    let mut warnings = Vec::new();
    let mut files = Vec::new();
    for (path, error) in &loaded.errors {
        problems.push(format!("hook file {}: {error}", path.display()));
        files.push(
            serde_json::json!({"path": path.display().to_string(), "ok": false, "error": error}),
        );
    }
    for (path, scope, file) in &loaded.files {
        for problem in &file.problems {
            warnings.push(format!("hook file {}: {problem} (skipped)", path.display()));
        }
        for hook in &file.hooks {
            if let Matcher::Invalid(e) = Matcher::new(&hook.matcher) {
                warnings.push(format!(
                    "hook file {}: matcher \"{}\" is not a valid pattern: {e}",
                    path.display(),
                    hook.matcher
                ));
            }
            if !hook.supported() {
                warnings.push(format!(
                    "hook file {}: {} {} hook is not run by zot",
                    path.display(),
                    hook.event,
                    hook.kind
                ));
            }
        }
        files.push(serde_json::json!({
            "path": path.display().to_string(),
            "scope": scope.as_str(),
            "ok": true,
            "hooks": file.hooks.len(),
            "disable_all_hooks": file.disable_all,
            "skipped": file.problems,
        }));
    }
    let listed = loaded.listed();
    let running = listed.iter().filter(|l| l.skipped().is_none()).count();
    Checked {
        report: serde_json::json!({
            "enabled": ctx.config.hooks,
            "files": files,
            "running": if ctx.config.hooks { running } else { 0 },
            "hooks": listed.iter().map(Listed::to_json).collect::<Vec<_>>(),
        }),
        problems,
        warnings,
    }
}
