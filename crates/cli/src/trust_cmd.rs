//! `zot trust [--revoke | --list]`.

use std::process::ExitCode;

use zot_extensions::{TrustStatus, TrustStore};

use crate::args::TrustArgs;
use crate::context::{Context, display};

pub fn run(ctx: &Context, args: &TrustArgs) -> anyhow::Result<ExitCode> {
    let mut store = TrustStore::load(&ctx.zot_home)?;
    let project = display(&ctx.project);
    if args.list {
        let entries: Vec<_> = store.entries().collect();
        if entries.is_empty() {
            eprintln!("no trusted projects ({})", display(store.path()));
        }
        for (path, entry) in entries {
            let dir = std::path::Path::new(path);
            let state = if !dir.is_dir() {
                "missing"
            } else {
                match store.status(dir)? {
                    TrustStatus::Trusted => "trusted",
                    TrustStatus::Changed => "changed since trusted",
                    TrustStatus::Untrusted => "untrusted",
                }
            };
            println!("{path}\t{}\t{state}", entry.trusted_at);
        }
    } else if args.revoke {
        if store.revoke(&ctx.project)? {
            eprintln!("revoked trust for {project}");
        } else {
            eprintln!("{project} was not trusted; nothing to revoke");
        }
    } else {
        let entry = store.trust(&ctx.project)?;
        eprintln!("trusted {project} ({})", entry.fingerprint);
        if !ctx.config.project_root().is_dir() {
            eprintln!(
                "note: it has no project extensions yet ({})",
                display(&ctx.config.project_root())
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
