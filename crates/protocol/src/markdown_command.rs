//! The body of a Markdown command (`.claude/commands/*.md`): text with
//! `` !`cmd` `` pieces that run a shell. The agent expands them; trust reads
//! them to pin the scripts they name.

/// A template split at each `` !`cmd` ``.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    Text(&'a str),
    Shell(&'a str),
}

/// The text and shell pieces of `template`, in order; a `` !` `` without a
/// closing backtick on its line is plain text.
pub fn pieces(template: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find("!`") {
        let after = &rest[start + 2..];
        let Some(end) = after
            .find(['`', '\n'])
            .filter(|&e| after[e..].starts_with('`'))
        else {
            // No closing backtick on the line: plain text.
            out.push(Piece::Text(&rest[..start + 2]));
            rest = after;
            continue;
        };
        out.push(Piece::Text(&rest[..start]));
        out.push(Piece::Shell(&after[..end]));
        rest = &after[end + 1..];
    }
    out.push(Piece::Text(rest));
    out.retain(|p| !matches!(p, Piece::Text("")));
    out
}

/// The `` !`cmd` `` command lines of a command file's text (what trust
/// looks at to pin the scripts they name).
pub fn shell_commands(template: &str) -> Vec<&str> {
    pieces(template)
        .into_iter()
        .filter_map(|piece| match piece {
            Piece::Shell(cmd) => Some(cmd),
            Piece::Text(_) => None,
        })
        .collect()
}
