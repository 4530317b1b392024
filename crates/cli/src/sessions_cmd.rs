//! `zot sessions list|show|rm|prune`: the sessions under `$ZOT_HOME/sessions/`,
//! found through their index (`zot_core::session::index`).

use std::path::Path;
use std::process::ExitCode;
use std::time::SystemTime;

use zot_core::session::index;
use zot_core::session::outline;

use zot_export::Format;

use crate::args::SessionsCommand;
use crate::context::Context;

pub fn run(ctx: &Context, command: &SessionsCommand) -> anyhow::Result<ExitCode> {
    match command {
        SessionsCommand::List { all, json } => {
            let cwd = (!all).then_some(ctx.project.as_path());
            let sessions = index::list(&ctx.zot_home, cwd)?;
            if *json {
                outln!("{}", serde_json::to_string_pretty(&sessions)?);
                return Ok(ExitCode::SUCCESS);
            }
            if sessions.is_empty() {
                let place = if *all {
                    "anywhere"
                } else {
                    "in this directory"
                };
                errln!("no sessions {place} yet");
            }
            let now = SystemTime::now();
            for s in &sessions {
                let dir = if *all {
                    format!("\t{}", s.cwd)
                } else {
                    String::new()
                };
                outln!(
                    "{}\t{}\t{} messages\t${:.4}\t{}{dir}\t{}",
                    s.id,
                    index::ago(&s.updated, now),
                    s.message_count,
                    s.cost_usd,
                    s.model,
                    s.title
                );
            }
        }
        SessionsCommand::Show { id, json } => {
            let summary = index::find(&ctx.zot_home, id)?;
            let (leaf_id, entries) = index::read_tree(Path::new(&summary.path))?;
            if *json {
                let doc = serde_json::json!({
                    "summary": summary,
                    "leaf_id": leaf_id,
                    "entries": entries,
                });
                outln!("{}", serde_json::to_string_pretty(&doc)?);
                return Ok(ExitCode::SUCCESS);
            }
            outln!("{}", summary.title);
            outln!("id       {}", summary.id);
            outln!("file     {}", summary.path);
            outln!("dir      {}", summary.cwd);
            outln!("started  {}", summary.started);
            outln!("updated  {}", summary.updated);
            outln!("model    {}/{}", summary.provider, summary.model);
            outln!("messages {}", summary.message_count);
            outln!("cost     ${:.4}", summary.cost_usd);
            outln!();
            for row in outline(&entries, leaf_id.as_deref()) {
                outln!("{}", outline_line(&row));
            }
        }
        SessionsCommand::Rm { id } => {
            let summary = index::find(&ctx.zot_home, id)?;
            index::remove(&ctx.zot_home, &summary)?;
            // The index forgets it now rather than at the next listing.
            index::list(&ctx.zot_home, None)?;
            errln!("removed {} ({})", summary.id, summary.title);
        }
        SessionsCommand::Export {
            id,
            html: _,
            md,
            output,
        } => {
            let format = if *md { Format::Markdown } else { Format::Html };
            let summary = index::find(&ctx.zot_home, id)?;
            let branch = index::read_branch(Path::new(&summary.path))?;
            let text = format.render(&branch);
            match output.as_deref() {
                Some(path) if path == Path::new("-") => {
                    use std::io::Write;
                    let mut out = std::io::stdout().lock();
                    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
                }
                _ => {
                    let path = output.clone().unwrap_or_else(|| {
                        ctx.project
                            .join(format!("{}.{}", summary.id, format.extension()))
                    });
                    write_whole(&path, text.as_bytes())?;
                    errln!("exported {} to {}", summary.id, path.display());
                }
            }
        }
        SessionsCommand::Import { file } => {
            let summary = index::import(&ctx.zot_home, &ctx.project, file)?;
            errln!(
                "imported {} ({}): zot --resume={} goes on with it",
                summary.id,
                summary.title,
                summary.id
            );
        }
        SessionsCommand::Prune { older_than } => {
            let removed = index::prune(&ctx.zot_home, *older_than)?;
            for s in &removed {
                errln!("removed {} ({})", s.id, s.title);
            }
            errln!(
                "{} session{} removed",
                removed.len(),
                if removed.len() == 1 { "" } else { "s" }
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One outline row as text: `*` marks the current path, `├`/`└`-less
/// indentation shows branches.
pub fn outline_line(row: &zot_core::session::OutlineRow) -> String {
    format!(
        "{}{}{}{}  {}",
        if row.on_path { "* " } else { "  " },
        "  ".repeat(row.depth.saturating_sub(1)),
        if row.branch { "+ " } else { "" },
        row.id,
        row.text
    )
}

/// Writes `bytes` to `path` through a temporary file beside it, so a
/// failure never leaves half a file.
pub fn write_whole(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map_or_else(Default::default, |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.with_context(|| format!("cannot write {}", path.display()))
}
