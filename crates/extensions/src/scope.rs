//! Where an extension was found. A leaf: discovery, ecosystems' config,
//! permissions and the host all name it.

/// Where an extension was found, in precedence order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// `--ext` for this run.
    Explicit,
    /// `./.zot/extensions`.
    Project,
    /// `$ZOT_HOME/extensions`.
    Global,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Explicit => "explicit",
            Self::Project => "project",
            Self::Global => "global",
        }
    }
}
