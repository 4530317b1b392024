//! Built-in tools: read, write, edit, bash.

use std::sync::Arc;

use crate::tool::Tool;

/// The built-in tools, in the order the model sees them.
pub fn builtin() -> Vec<Arc<dyn Tool>> {
    Vec::new()
}
