//! What every subcommand needs: `$ZOT_HOME`, the project, the host config
//! (with `--ext`, `--no-ext` and project trust applied).

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use zot_extensions::{FoundStatus, HostConfig, TrustStatus, TrustStore, default_zot_home};

use crate::args::Cli;
use crate::config::Settings;

pub struct Context {
    pub zot_home: PathBuf,
    /// The user's project directory (the working directory).
    pub project: PathBuf,
    pub config: HostConfig,
    pub trust: TrustStatus,
    /// Why project extensions do not run (which files changed); empty when trusted.
    pub trust_reason: String,
    /// The config files and environment (empty until [`Context::load_settings`]).
    pub settings: Settings,
}

impl Context {
    pub fn new(cli: &Cli) -> anyhow::Result<Self> {
        let zot_home = default_zot_home()
            .context("cannot tell where $ZOT_HOME is: set ZOT_HOME (or XDG_STATE_HOME, or HOME)")?;
        let project = std::env::current_dir().context("cannot read the working directory")?;
        Self::at(cli, zot_home, project)
    }

    /// The context for `zot_home` and `project` given explicitly (tests, embedders).
    pub fn at(cli: &Cli, zot_home: PathBuf, project: PathBuf) -> anyhow::Result<Self> {
        let mut config = HostConfig::new(&zot_home, &project);
        config.explicit = cli
            .ext
            .iter()
            .map(|dir| std::path::absolute(dir).unwrap_or_else(|_| dir.clone()))
            .collect();
        config.discover = !cli.no_ext;
        config.hooks = !cli.no_hooks;
        config.user_home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        let store = TrustStore::load(&zot_home)?;
        let check = store.check(&project)?;
        let (trust, trust_reason) = (check.status, check.reason());
        config.project_trusted = cli.trust || trust == TrustStatus::Trusted;
        if cli.trust && trust != TrustStatus::Trusted {
            // Trusted for this run as it is now: a change while zot runs counts.
            config.trusted_pins = Some(std::sync::Arc::new(store.current_watched(&project).0));
        }
        Ok(Self {
            zot_home,
            project,
            config,
            trust,
            trust_reason,
            settings: Settings::default(),
        })
    }

    /// Reads the config files and the environment into `settings`.
    pub fn load_settings(&mut self) -> anyhow::Result<()> {
        self.settings = Settings::load(&self.zot_home, &self.project)?;
        let claude = claude_settings_files(&self.project, self.config.user_home.as_deref());
        if let Some(warning) = ignored_permissions(&claude) {
            self.settings.warnings.push(warning);
        }
        self.config.hooks &= self.settings.hooks();
        let warnings = load_user_models(&self.zot_home, &self.settings.providers);
        self.settings.warnings.extend(warnings);
        Ok(())
    }

    /// Prints the one warning about project extensions (of every protocol,
    /// MCP servers included) skipped for lack of trust, naming them.
    pub fn warn_untrusted(&self, found: &[zot_extensions::Found]) {
        let skipped: Vec<&str> = found
            .iter()
            .filter_map(|f| match &f.status {
                FoundStatus::Untrusted(manifest) => Some(manifest.name.as_str()),
                _ => None,
            })
            .collect();
        if skipped.is_empty() {
            return;
        }
        let why = &self.trust_reason;
        errln!(
            "zot: warning: {} project extension(s) not loaded ({}): {why}; run `zot trust` to trust it, or pass --trust for one run",
            skipped.len(),
            skipped.join(", ")
        );
    }
}

pub fn display(path: &Path) -> String {
    path.display().to_string()
}

/// Claude Code's settings files: the user's, the project's, the project's local one.
pub fn claude_settings_files(project: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    use zot_hooks::settings::{CLAUDE_LOCAL_SETTINGS, CLAUDE_SETTINGS};
    let mut files: Vec<PathBuf> = home.map(|h| h.join(CLAUDE_SETTINGS)).into_iter().collect();
    files.push(project.join(CLAUDE_SETTINGS));
    files.push(project.join(CLAUDE_LOCAL_SETTINGS));
    files
}

/// The one warning that `permissions` blocks in Claude Code's settings are
/// not enforced (zot asks before tools with `--no-yolo`, not by rules), when
/// any of `files` has a non-empty one.
pub fn ignored_permissions(files: &[PathBuf]) -> Option<String> {
    let with: Vec<String> = files
        .iter()
        .filter(|file| {
            std::fs::read_to_string(file)
                .ok()
                .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
                .and_then(|v| v.get("permissions").cloned())
                .is_some_and(|p| p.as_object().is_none_or(|o| !o.is_empty()))
        })
        .map(|file| display(file))
        .collect();
    (!with.is_empty()).then(|| {
        format!(
            "the \"permissions\" rules in {} are not enforced by zot (it asks before tool calls only with --no-yolo)",
            with.join(", ")
        )
    })
}

/// Adds `$ZOT_HOME/models.json`'s models and the named providers' own to
/// the table for this process. A broken file never stops zot: the warning
/// names it (line and column) and its models are left out; so is an entry
/// of a provider zot does not know.
fn load_user_models(
    zot_home: &std::path::Path,
    providers: &[crate::providers::Named],
) -> Vec<String> {
    let mut warnings = Vec::new();
    let path = zot_home.join("models.json");
    let mut models = match std::fs::read_to_string(&path) {
        Ok(text) => zot_core::models::parse_user_models(&text).unwrap_or_else(|e| {
            warnings.push(format!("{}: {e}; its models are left out", path.display()));
            Vec::new()
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => {
            warnings.push(format!(
                "cannot read {}: {e}; its models are left out",
                path.display()
            ));
            Vec::new()
        }
    };
    models.retain(|m| {
        let known = crate::providers::known(providers, &m.provider);
        if !known {
            warnings.push(format!(
                "{}: {} is a model of provider \"{}\", which is neither built in nor in \"providers\"; left out",
                path.display(),
                m.id,
                m.provider
            ));
        }
        known
    });
    models.extend(providers.iter().flat_map(|p| p.models.iter().cloned()));
    zot_core::models::add_user_models(models);
    warnings
}
