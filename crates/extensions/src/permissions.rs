//! An extension's permissions: what its manifest declares, what the user's
//! policy makes of it (the effective grant), what this kernel cannot
//! enforce, and the [`Confinement`] its process starts with.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use zot_sandbox::{Enforce, Grant, Kernel, Origin, Places, Policy, PrivateTmp, Scope};

use crate::config::HostConfig;
use crate::manifest::Manifest;
use crate::scope::Scope as Found;
use crate::transport::stdio::Confinement;

/// One extension's permissions, as `zot ext list --json` and `zot ext
/// permissions` report them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permissions {
    /// The manifest's `permissions` (`None`: the field is absent).
    pub declared: Option<Scope>,
    /// What it runs with.
    pub effective: Grant,
    /// How strictly the effective scope is enforced.
    pub enforce: Enforce,
    /// What this kernel cannot enforce of the effective scope (empty when
    /// unrestricted). With strict enforcement a non-empty list means the
    /// extension does not start.
    pub unenforced: Vec<String>,
}

impl Permissions {
    /// The permissions of `manifest`, found in `found`, under `policy`.
    pub fn of(config: &HostConfig, policy: &Policy, manifest: &Manifest, found: Found) -> Self {
        let places = places(config, &manifest.name, found);
        let origin = match found {
            Found::Project => Origin::Project,
            Found::Explicit | Found::Global => Origin::User,
        };
        // Symbolic links resolved first: a path under the project that
        // links outside it is not "under the project".
        let declared = manifest.permissions.as_ref().map(|s| places.resolved(s));
        let effective = policy.effective(&manifest.name, declared.as_ref(), origin, |a, b| {
            places.under(a, b)
        });
        let unenforced = match effective.scope() {
            Some(scope) => {
                let dir =
                    std::path::absolute(&manifest.dir).unwrap_or_else(|_| manifest.dir.clone());
                let program = manifest.program(&dir).map(|(p, _)| p).unwrap_or_default();
                let resolved = resolve(scope, &places, &program, &dir);
                zot_sandbox::missing(&resolved, &Kernel::get())
            }
            None => Vec::new(),
        };
        Self {
            declared: manifest.permissions.clone(),
            effective,
            enforce: policy.enforce,
            unenforced,
        }
    }

    /// Whether it runs with the user's full privileges.
    pub fn unrestricted(&self) -> bool {
        self.effective == Grant::Unrestricted
    }

    /// `{declared, effective, unenforced}` (`declared` is `null` without a
    /// manifest field; `effective` is `"unrestricted"` or a scope).
    pub fn to_json(&self) -> Value {
        json!({
            "declared": self.declared.as_ref().map(Scope::to_json),
            "effective": self.effective.to_json(),
            "enforce": self.enforce.as_str(),
            "unenforced": self.unenforced,
        })
    }
}

/// `$ZOT_HOME/data/user/<name>`: the data directory of a scoped extension
/// that is not a project's (a project's keeps
/// [`HostConfig::project_data_dir`]), outside its own directory, which a
/// scoped extension may not write.
pub fn user_data_dir(config: &HostConfig, name: &str) -> PathBuf {
    config.zot_home.join("data").join("user").join(name)
}

/// The data directory of a scoped extension, and of any project extension.
pub(crate) fn scoped_data_dir(config: &HostConfig, name: &str, found: Found) -> PathBuf {
    match found {
        Found::Project => config.project_data_dir(name),
        Found::Explicit | Found::Global => user_data_dir(config, name),
    }
}

fn places(config: &HostConfig, name: &str, found: Found) -> Places {
    let home = config
        .user_home
        .clone()
        .or_else(|| std::env::var_os("HOME").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("/"));
    Places {
        project: std::path::absolute(&config.cwd).unwrap_or_else(|_| config.cwd.clone()),
        data: scoped_data_dir(config, name, found),
        tmp: PrivateTmp::path_for(&config.zot_home, name),
        home,
    }
}

fn resolve(scope: &Scope, places: &Places, program: &Path, dir: &Path) -> zot_sandbox::Resolved {
    let path = std::env::var_os("PATH");
    zot_sandbox::resolve(scope, places, program, Some(dir), path.as_deref())
}

/// The name project command hooks take in the policy: its `extensions`
/// entry of this name, else `project_default`, is their scope.
pub const HOOKS_POLICY_NAME: &str = "hooks";

/// How one project command hook starts: under the policy's scope for
/// [`HOOKS_POLICY_NAME`] or `project_default`, as a project extension that
/// declares nothing would (`sh` is its program, the project its directory).
pub fn project_hook_confinement(
    config: &HostConfig,
    policy: &Policy,
) -> Result<Confinement, String> {
    let places = places(config, HOOKS_POLICY_NAME, Found::Project);
    let grant = policy.effective(HOOKS_POLICY_NAME, None, Origin::Project, |a, b| {
        places.under(a, b)
    });
    confine(
        config,
        policy.enforce,
        &grant,
        HOOKS_POLICY_NAME,
        Found::Project,
        Path::new("/bin/sh"),
        &places.project,
    )
}

/// The confinement of `program`, started for extension `name` (found in
/// `found`, in directory `dir`) under `grant`: its data and private
/// temporary directories created, its sandbox built. Errors are for the
/// user (a strict scope this kernel cannot enforce, a directory that
/// cannot be created).
pub(crate) fn confine(
    config: &HostConfig,
    enforce: Enforce,
    grant: &Grant,
    name: &str,
    found: Found,
    program: &Path,
    dir: &Path,
) -> Result<Confinement, String> {
    let Grant::Scoped(scope) = grant else {
        return Ok(Confinement::default());
    };
    let mut places = places(config, name, found);
    // A private temporary directory for every scoped process, whether or
    // not its scope names `tmp`: it may not write the shared `/tmp`.
    let tmp = PrivateTmp::create(&config.zot_home, name).map_err(|e| {
        format!(
            "cannot create its temporary directory under {}: {e}",
            config.zot_home.join("tmp").display()
        )
    })?;
    places.tmp = tmp.path().to_path_buf();
    let resolved = resolve(scope, &places, program, dir);
    let sandbox =
        zot_sandbox::prepare(&resolved, &Kernel::get(), enforce).map_err(|e| e.to_string())?;
    let mut env = vec![(
        "ZOT_PROJECT_DIR".to_owned(),
        places.project.display().to_string(),
    )];
    for var in zot_sandbox::TMP_ENV {
        env.push(((*var).to_owned(), tmp.path().display().to_string()));
    }
    Ok(Confinement {
        scope: Some(scope.clone()),
        env,
        sandbox: Some(sandbox),
        tmp: Some(tmp),
    })
}
