//! Strings that look like credentials, masked before anything is exported:
//! API keys of the common providers and bearer tokens. A share is made to
//! be read by others; a key pasted into a prompt or printed by a tool must
//! not travel with it.

use std::sync::OnceLock;

use regex::Regex;

/// The patterns, each keeping a short prefix so a reader sees what was there.
fn patterns() -> &'static [(Regex, usize)] {
    static SET: OnceLock<Vec<(Regex, usize)>> = OnceLock::new();
    SET.get_or_init(|| {
        [
            // Anthropic, OpenAI (sk-, sk-proj-), and other sk- keys.
            (r"\bsk-[A-Za-z0-9_\-]{16,}", 3),
            // GitHub tokens.
            (
                r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})",
                4,
            ),
            // Slack tokens.
            (r"\bxox[abprs]-[A-Za-z0-9\-]{10,}", 5),
            // AWS access key ids.
            (r"\bAKIA[0-9A-Z]{16}\b", 4),
            // Google API keys.
            (r"\bAIza[0-9A-Za-z_\-]{35}", 4),
            // Bearer tokens in headers or commands.
            (r"(?i)\bbearer\s+[A-Za-z0-9._~+/=\-]{16,}", 7),
        ]
        .into_iter()
        .filter_map(|(pattern, keep)| Regex::new(pattern).ok().map(|r| (r, keep)))
        .collect()
    })
}

/// `text` with every credential-like string cut to its prefix and `****`.
pub fn mask_secrets(text: &str) -> String {
    let mut text = text.to_owned();
    for (pattern, keep) in patterns() {
        if pattern.is_match(&text) {
            text = pattern
                .replace_all(&text, |caps: &regex::Captures<'_>| {
                    let found = &caps[0];
                    let cut = found
                        .char_indices()
                        .nth(*keep)
                        .map_or(found.len(), |(i, _)| i);
                    format!("{}****", &found[..cut])
                })
                .into_owned();
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_tokens_are_masked_and_other_text_is_not() {
        let text = "key sk-ant-api03-abcdefghijklmnopqrstuv and Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload ghp_abcdefghijklmnopqrstuvwxyz0123 AKIAABCDEFGHIJKLMNOP";
        let masked = mask_secrets(text);
        assert!(!masked.contains("abcdefghijklmnopqrstuv"), "{masked}");
        assert!(!masked.contains("eyJhbGciOiJIUzI1NiJ9"), "{masked}");
        assert!(!masked.contains("ghp_abcdefghij"), "{masked}");
        assert!(!masked.contains("AKIAABCDEFGH"), "{masked}");
        assert!(
            masked.contains("sk-****") && masked.contains("Bearer ****"),
            "{masked}"
        );
        let plain = "the task-list skips sk-1 and a bearer of news";
        assert_eq!(mask_secrets(plain), plain);
    }
}
