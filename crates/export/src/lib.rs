//! A session shared outside zot: one self-contained web page (`html`) or
//! plain Markdown for an issue (`markdown`). Both show the current branch
//! and list the others, and mask what looks like a credential (`mask`).
//! The page is safe to open whatever the transcript holds: its text is
//! escaped, never rendered as HTML, links go only to http, https and
//! mailto, and its Content-Security-Policy allows no network and no script.

mod html;
mod markdown;
mod mask;

pub use html::html;
pub use markdown::markdown;
pub use mask::mask_secrets;

/// The formats `zot sessions export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Html,
    Markdown,
}

impl Format {
    pub fn extension(self) -> &'static str {
        match self {
            Self::Html => "html",
            Self::Markdown => "md",
        }
    }

    /// The export of `branch` in this format.
    pub fn render(self, branch: &zot_core::session::index::Branch) -> String {
        match self {
            Self::Html => html(branch),
            Self::Markdown => markdown(branch),
        }
    }
}
