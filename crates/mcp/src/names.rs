//! MCP names in zot: a server's tools as `mcp__<server>__<tool>`, valid
//! for every provider, and the two resource tools all servers share.

/// The shared resource tools, offered while any server has resources.
pub const LIST_RESOURCES: &str = "mcp_list_resources";
pub const READ_RESOURCE: &str = "mcp_read_resource";

/// The longest tool name providers accept (the `mcp__` names must fit).
const MAX_NAME: usize = zot_extensions::adapter::MAX_TOOL_NAME;
/// How much of an over-long name is kept before `_` and the hash, so the
/// name fits providers' 64 characters (55 + 1 + 8 = 64).
const KEPT_PREFIX: usize = 55;
/// Hex digits of the SHA-256 that make a shortened name unique (32 bits,
/// among names that already share their first 55 characters).
const HASH_DIGITS: usize = 8;

/// What every MCP tool's name starts with.
pub const PREFIX: &str = "mcp__";

/// `mcp__<server>__<item>` made valid for every provider: characters
/// outside `[A-Za-z0-9_-]` become `_`; a name over 64 characters keeps its
/// first 55, then `_` and 8 hex digits of the SHA-256 of the full name.
pub fn qualified_name(server: &str, item: &str) -> String {
    use sha2::{Digest, Sha256};
    let full = format!("{PREFIX}{server}__{item}");
    let clean: String = full
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.len() <= MAX_NAME {
        return clean;
    }
    let digest = Sha256::digest(full.as_bytes());
    let hash: String = digest
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()
        .chars()
        .take(HASH_DIGITS)
        .collect();
    // `clean` is ASCII, so any byte index is a character boundary.
    format!("{}_{hash}", &clean[..KEPT_PREFIX])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitised_and_shortened_with_a_hash() {
        assert_eq!(qualified_name("fs", "read_file"), "mcp__fs__read_file");
        assert_eq!(qualified_name("my.srv", "a.b c"), "mcp__my_srv__a_b_c");
        let long = qualified_name("server", &"x".repeat(80));
        assert_eq!(long.len(), 64);
        assert!(long.starts_with("mcp__server__xxx"));
        assert_eq!(&long[55..56], "_");
        assert!(long[56..].chars().all(|c| c.is_ascii_hexdigit()));
        // Two long names that share their first 55 characters still differ.
        let other = qualified_name("server", &format!("{}y", "x".repeat(80)));
        assert_ne!(long, other);
        assert!(zot_extensions::adapter::valid_tool_name(&qualified_name(
            "ü", "ß"
        )));
    }
}
