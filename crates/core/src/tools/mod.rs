//! Built-in tools: read, write, edit, bash, grep, find, ls, web_fetch, todo_write.
//! Also owns what they share: argument checking that turns bad arguments
//! into tool errors, opening only regular files, atomic file replacement
//! (in place for hard-linked files), and random file-name suffixes.

mod args;
pub(crate) mod bash;
mod edit;
mod find;
mod fs;
mod grep;
mod ls;
pub mod output;
mod read;
pub mod todo;
mod walk;
pub mod web_fetch;
mod write;

use std::sync::Arc;

use crate::tool::Tool;

pub use crate::tool::BASH_DEFAULT_TIMEOUT;
pub use bash::{BashTool, MAX_TIMEOUT_SECS as BASH_MAX_TIMEOUT_SECS};
pub use edit::{EditTool, MAX_EDIT_FILE_BYTES};
pub use find::FindTool;
pub use grep::GrepTool;
/// What `@dir` and `@file` in a prompt reuse (`prompt_files`).
pub(crate) use ls::list as list_dir;
pub use ls::{DEFAULT_LS_ENTRIES, LsTool};
pub(crate) use read::BINARY_SNIFF_BYTES;
pub use read::ReadTool;
pub use todo::TodoWriteTool;
pub use web_fetch::WebFetchTool;
pub use write::{MAX_WRITE_BYTES, WriteTool};
pub use zot_sandbox::{BashSandbox, SandboxMode};

/// The names of zot's own tools (the list lives in `zot-protocol`, which the
/// extension host shares; core's tests hold it equal to what `builtin` gives).
pub use zot_protocol::ui::BUILTIN_TOOLS as BUILTIN_TOOL_NAMES;

/// The built-in tools, in the order the model sees them; `todo_write`
/// keeps its plan in `plan`; `web_fetch` reaches private addresses only
/// with `allow_private`.
pub fn builtin(plan: todo::Plan, allow_private: bool) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(ReadTool),
        Arc::new(WriteTool),
        Arc::new(EditTool),
        Arc::new(BashTool),
        Arc::new(GrepTool),
        Arc::new(FindTool),
        Arc::new(LsTool),
        Arc::new(WebFetchTool::new(allow_private)),
        Arc::new(TodoWriteTool::new(plan)),
    ]
}
