//! The one place that picks an extension's adapter from its manifest, and
//! how to reach it. Every protocol the host speaks is one arm here.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::nimlet::Nimlet;
use super::zot::Zot;
use super::{Adapter, LaunchSpec, ProcessSpec};
use crate::context::HostContext;
use crate::manifest::{Dialect, Launch, Manifest};

/// The adapter for a process or remote manifest, and how to reach it.
/// `dir` is the extension directory (absolute); `data_dir` where it keeps
/// its state (for protocols that say). An error says why it cannot start.
pub(crate) fn for_manifest(
    manifest: &Manifest,
    dir: &Path,
    data_dir: &Path,
    cx: &Arc<HostContext>,
) -> Result<(Box<dyn Adapter>, LaunchSpec), String> {
    if let Launch::Adapted(adapted) = &manifest.launch {
        let Some(ecosystem) = crate::ecosystem::of_kind(adapted.kind) else {
            return Err(format!("no {} support in this zot", adapted.kind));
        };
        return ecosystem.launch(adapted, cx);
    }
    if let Launch::Remote(remote) = &manifest.launch {
        let adapter: Box<dyn Adapter> = match remote.protocol {
            Dialect::Nimlet => Box::new(Nimlet::new(Arc::clone(cx), remote.timeout)),
            _ => Box::new(Zot::new(
                Arc::clone(cx),
                manifest.name.clone(),
                dir.to_path_buf(),
                data_dir.to_path_buf(),
            )),
        };
        return Ok((adapter, LaunchSpec::Connect(remote.clone())));
    }
    let Some((program, args)) = manifest.program(dir) else {
        return Err(match manifest.launch {
            Launch::Nimlet { .. } => "empty command".to_owned(),
            _ => "manifest has no exec".to_owned(),
        });
    };
    let args = args.to_vec();
    let (adapter, cwd): (Box<dyn Adapter>, PathBuf) = match &manifest.launch {
        Launch::Nimlet { timeout, .. } => (
            Box::new(Nimlet::new(Arc::clone(cx), *timeout)),
            // Runs in the workspace (research nimlet.md E4).
            cx.cwd(),
        ),
        _ => (
            Box::new(Zot::new(
                Arc::clone(cx),
                manifest.name.clone(),
                dir.to_path_buf(),
                data_dir.to_path_buf(),
            )),
            dir.to_path_buf(),
        ),
    };
    let spec = ProcessSpec {
        program,
        args,
        cwd,
        env: Vec::new(),
    };
    Ok((adapter, LaunchSpec::Process(spec)))
}
