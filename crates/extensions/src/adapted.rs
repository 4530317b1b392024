//! An extension of an ecosystem the host runs through that ecosystem's own
//! adapter ([`crate::ecosystem`]): how its manifest's launch holds it. A
//! leaf: the manifest builds on it.

use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// An entry of an installed [`Ecosystem`](crate::ecosystem::Ecosystem), as
/// its [`Launch`](crate::Launch).
#[derive(Debug, Clone)]
pub struct Adapted {
    /// Its ecosystem's [`kind`](crate::ecosystem::Ecosystem::kind).
    pub kind: &'static str,
    /// The URL it is reached at over the network: the host reconnects such
    /// an extension when it drops, where a lost process waits for a reload.
    pub url: Option<String>,
    /// How long its start may take: what a background start waits for.
    pub startup_timeout: Duration,
    /// The ecosystem's own description of it, read back by its `launch`.
    pub entry: Arc<dyn Entry>,
}

impl Adapted {
    /// The ecosystem's description of this entry, when it is a `T`.
    pub fn entry<T: Any>(&self) -> Option<&T> {
        self.entry.as_any().downcast_ref()
    }
}

impl PartialEq for Adapted {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind
            && self.url == other.url
            && self.startup_timeout == other.startup_timeout
            && self.entry.same(other.entry.as_ref())
    }
}

impl Eq for Adapted {}

/// What an ecosystem keeps about one of its entries: any comparable value.
pub trait Entry: Any + fmt::Debug + Send + Sync {
    fn as_any(&self) -> &dyn Any;
    /// Equal to `other` (of the same type).
    fn same(&self, other: &dyn Entry) -> bool;
}

impl<T: Any + fmt::Debug + Eq + Send + Sync> Entry for T {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn same(&self, other: &dyn Entry) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }
}
