//! `zot trust [--revoke | --list]`.

use std::process::ExitCode;

use zot_extensions::{FileChange, TrustStatus, TrustStore};

use crate::args::TrustArgs;
use crate::context::{Context, display};

/// How many changed files `--list` and `zot trust` show per project.
const SHOWN_CHANGES: usize = 20;

pub fn run(ctx: &Context, args: &TrustArgs) -> anyhow::Result<ExitCode> {
    let mut store = TrustStore::load(&ctx.zot_home)?;
    let project = display(&ctx.project);
    if args.list {
        let entries: Vec<(String, String)> = store
            .entries()
            .map(|(path, entry)| (path.to_owned(), entry.trusted_at.clone()))
            .collect();
        if entries.is_empty() {
            errln!("no trusted projects ({})", display(store.path()));
        }
        for (path, trusted_at) in entries {
            let dir = std::path::Path::new(&path);
            if !dir.is_dir() {
                outln!("{path}\t{trusted_at}\tmissing");
                continue;
            }
            let check = store.check(dir)?;
            let state = match check.status {
                TrustStatus::Trusted => "trusted",
                TrustStatus::Changed => "changed since trusted",
                TrustStatus::Untrusted => "untrusted",
                TrustStatus::Outdated => {
                    "trusted in the old format: the trust file format was upgraded, run `zot trust` there once more"
                }
            };
            outln!("{path}\t{trusted_at}\t{state}");
            print_changes(&check.changes, |line| outln!("  {line}"));
        }
    } else if args.revoke {
        if store.revoke(&ctx.project)? {
            errln!("revoked trust for {project}");
        } else {
            errln!("{project} was not trusted; nothing to revoke");
        }
    } else {
        let before = store.check(&ctx.project)?;
        match before.status {
            TrustStatus::Changed => {
                errln!("changed since this project was last trusted:");
                print_changes(&before.changes, |line| errln!("  {line}"));
            }
            TrustStatus::Outdated => {
                errln!("the trust file format was upgraded: every file is now pinned on its own");
            }
            TrustStatus::Trusted | TrustStatus::Untrusted => {}
        }
        let entry = store.trust(&ctx.project)?;
        let files = entry.files.as_ref().map_or(0, |f| f.len());
        errln!("trusted {project} ({}, {files} file(s))", entry.fingerprint);
        if !ctx.config.project_root().is_dir() {
            errln!(
                "note: it has no project extensions yet ({})",
                display(&ctx.config.project_root())
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The first [`SHOWN_CHANGES`] changes, one a line, then how many more.
fn print_changes(changes: &[FileChange], mut print: impl FnMut(String)) {
    for change in changes.iter().take(SHOWN_CHANGES) {
        print(change.to_string());
    }
    if changes.len() > SHOWN_CHANGES {
        print(format!("… and {} more", changes.len() - SHOWN_CHANGES));
    }
}
