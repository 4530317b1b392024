//! Commands typed as `/name args`: how a line names one, and the built-ins
//! the TUI runs itself. Their names and descriptions are the table shared
//! with the host (`zot_protocol::ui::BUILTIN_COMMANDS`); [`Builtin`] maps it.

use zot_protocol::ui::BUILTIN_COMMANDS;

/// `/name args` when the text names a command (a path like `/usr/bin` does
/// not). A name is letters, digits, `_` and `-`, in parts joined by `:`
/// (a Markdown command in a folder is `/folder:name`).
pub fn parse_command(text: &str) -> Option<(&str, &str)> {
    let rest = text.trim_start().strip_prefix('/')?;
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let name = &rest[..end];
    let valid = name.split(':').all(|part| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    });
    valid.then(|| (name, rest[end..].trim()))
}

/// A built-in command: one variant per entry of `BUILTIN_COMMANDS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    Help,
    Model,
    Clear,
    Compact,
    Sessions,
    Tree,
    Fork,
    Jump,
    Undo,
    Rewind,
    Name,
    Export,
    Copy,
    Btw,
    Skills,
    Hooks,
    Mcp,
    ReloadExt,
    Yolo,
    Plan,
    Act,
    Sandbox,
    Exit,
}

impl Builtin {
    const ALL: [Self; 23] = [
        Self::Help,
        Self::Model,
        Self::Clear,
        Self::Compact,
        Self::Sessions,
        Self::Tree,
        Self::Fork,
        Self::Jump,
        Self::Undo,
        Self::Rewind,
        Self::Name,
        Self::Export,
        Self::Copy,
        Self::Btw,
        Self::Skills,
        Self::Hooks,
        Self::Mcp,
        Self::ReloadExt,
        Self::Yolo,
        Self::Plan,
        Self::Act,
        Self::Sandbox,
        Self::Exit,
    ];

    /// Its name in `BUILTIN_COMMANDS`: the one place the enum meets the table.
    pub fn name(self) -> &'static str {
        match self {
            Self::Help => "help",
            Self::Model => "model",
            Self::Clear => "clear",
            Self::Compact => "compact",
            Self::Sessions => "sessions",
            Self::Tree => "tree",
            Self::Fork => "fork",
            Self::Jump => "jump",
            Self::Undo => "undo",
            Self::Rewind => "rewind",
            Self::Name => "name",
            Self::Export => "export",
            Self::Copy => "copy",
            Self::Btw => "btw",
            Self::Skills => "skills",
            Self::Hooks => "hooks",
            Self::Mcp => "mcp",
            Self::ReloadExt => "reload-ext",
            Self::Yolo => "yolo",
            Self::Plan => "plan",
            Self::Act => "act",
            Self::Sandbox => "sandbox",
            Self::Exit => "exit",
        }
    }

    /// The built-in `name` (without `/`, any case) names. The shared table
    /// decides what is a built-in, as it does for the host.
    pub fn parse(name: &str) -> Option<Self> {
        let (listed, _) = BUILTIN_COMMANDS
            .iter()
            .find(|(b, _)| b.eq_ignore_ascii_case(name))?;
        Self::ALL.into_iter().find(|b| b.name() == *listed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shared_builtin_parses_to_a_variant_and_back() {
        for (name, _) in BUILTIN_COMMANDS {
            let builtin = Builtin::parse(name);
            assert_eq!(builtin.map(Builtin::name), Some(*name), "/{name}");
            assert_eq!(Builtin::parse(&name.to_uppercase()), builtin);
        }
        assert_eq!(Builtin::ALL.len(), BUILTIN_COMMANDS.len());
        for builtin in Builtin::ALL {
            assert_eq!(Builtin::parse(builtin.name()), Some(builtin));
        }
        assert_eq!(Builtin::parse("todo"), None);
    }

    #[test]
    fn commands_are_names_not_paths() {
        assert_eq!(parse_command("  /model  gpt x "), Some(("model", "gpt x")));
        assert_eq!(parse_command("/reload-ext"), Some(("reload-ext", "")));
        assert_eq!(parse_command("/usr/bin/env"), None);
        assert_eq!(
            parse_command("/git:commit -m x"),
            Some(("git:commit", "-m x"))
        );
        assert_eq!(parse_command("/a:b:c"), Some(("a:b:c", "")));
        for bad in ["/git:", "/:x", "/a::b", "/c:\\dir"] {
            assert_eq!(parse_command(bad), None, "{bad}");
        }
        assert_eq!(parse_command("/"), None);
        assert_eq!(parse_command("hello /help"), None);
    }
}
