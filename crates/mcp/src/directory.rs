//! The servers with resources, for the shared resource tools (kept on the
//! host context, so every MCP adapter of a generation sees the others).

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use rmcp::service::RoleClient;

/// The servers with resources, for the shared resource tools.
#[derive(Default)]
pub(crate) struct Directory(Mutex<BTreeMap<String, rmcp::Peer<RoleClient>>>);

impl Directory {
    pub(crate) fn lock(&self) -> MutexGuard<'_, BTreeMap<String, rmcp::Peer<RoleClient>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
