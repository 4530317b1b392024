//! Markdown for pasting into an issue: the prompts and answers as they
//! are, each tool call with its arguments and its result fenced and cut
//! when long, thinking left out.

use std::fmt::Write as _;

use zot_core::message::{Block, Role};
use zot_core::session::index::{Branch, BranchItem};

use crate::mask::mask_secrets;

/// Lines of a tool result kept (a reader wants the gist, not the log).
const RESULT_LINES: usize = 40;
/// Bytes of a tool result kept.
const RESULT_BYTES: usize = 4 * 1024;

/// The Markdown of `branch`.
pub fn markdown(branch: &Branch) -> String {
    let mut out = String::new();
    let meta = &branch.meta;
    let _ = writeln!(out, "# {}\n", mask_secrets(&branch.title));
    let _ = writeln!(
        out,
        "_session {} · started {} · {}/{}_\n",
        meta.id, meta.started, meta.provider, meta.model
    );
    for item in &branch.items {
        match item {
            BranchItem::Message(message) => {
                let heading = match message.role {
                    Role::User => "## You",
                    Role::Assistant => "## Assistant",
                    Role::Tool => "",
                };
                let text = message.text();
                if !heading.is_empty() && (!text.trim().is_empty() || has_calls(&message.content)) {
                    let _ = writeln!(out, "{heading}\n");
                }
                for block in &message.content {
                    block_markdown(&mut out, block);
                }
            }
            BranchItem::Compaction(summary) => {
                let _ = writeln!(
                    out,
                    "> _Earlier messages were summarised:_\n>\n{}\n",
                    quote(&mask_secrets(summary))
                );
            }
            BranchItem::ModelChange(model) => {
                let _ = writeln!(out, "_continued with {model}_\n");
            }
        }
    }
    if !branch.others.is_empty() {
        out.push_str("## Other branches\n\n");
        for row in &branch.others {
            let _ = writeln!(out, "- {}", mask_secrets(&row.text));
        }
        out.push('\n');
    }
    let u = &branch.usage;
    let _ = writeln!(
        out,
        "---\n_input {} tokens · output {} · cache read {} · cache write {} · ${:.4}_",
        u.input, u.output, u.cache_read, u.cache_write, u.cost_usd
    );
    out
}

fn has_calls(blocks: &[Block]) -> bool {
    blocks.iter().any(|b| matches!(b, Block::ToolCall { .. }))
}

fn block_markdown(out: &mut String, block: &Block) {
    match block {
        Block::Text { text } if !text.trim().is_empty() => {
            let _ = writeln!(out, "{}\n", mask_secrets(text.trim_end()));
        }
        Block::Image { mime_type, .. } => {
            let _ = writeln!(out, "_[image: {mime_type}]_\n");
        }
        Block::ToolCall { name, args, .. } => {
            let args = serde_json::to_string_pretty(args).unwrap_or_default();
            let _ = writeln!(
                out,
                "**Tool call:** `{name}`\n\n{}",
                fenced("json", &mask_secrets(&args))
            );
        }
        Block::ToolResult {
            is_error, content, ..
        } => {
            let text = zot_core::message::text_of(content);
            let label = if *is_error { "Tool error" } else { "Result" };
            let _ = writeln!(
                out,
                "**{label}:**\n\n{}",
                fenced("", &cut(&mask_secrets(&text)))
            );
        }
        _ => {}
    }
}

/// `text` in a code fence longer than any run of backticks in it.
fn fenced(lang: &str, text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}{lang}\n{}\n{fence}\n", text.trim_end_matches('\n'))
}

/// A result cut to [`RESULT_LINES`] lines and [`RESULT_BYTES`] bytes.
fn cut(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut kept = lines[..lines.len().min(RESULT_LINES)].join("\n");
    if kept.len() > RESULT_BYTES {
        let mut end = RESULT_BYTES;
        while !kept.is_char_boundary(end) {
            end -= 1;
        }
        kept.truncate(end);
    }
    let dropped = text.len().saturating_sub(kept.len());
    if dropped > 1 {
        let _ = write!(kept, "\n… [{dropped} more bytes]");
    }
    kept
}

fn quote(text: &str) -> String {
    text.lines()
        .map(|l| format!("> {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_outgrow_the_backticks_inside() {
        assert_eq!(fenced("", "a"), "```\na\n```\n");
        assert!(fenced("", "x ```` y").starts_with("`````\n"));
    }

    #[test]
    fn long_results_are_cut() {
        let text = (0..100)
            .map(|i| format!("line {i}"))
            .collect::<Vec<_>>()
            .join("\n");
        let kept = cut(&text);
        assert!(
            kept.contains("line 39") && !kept.contains("line 40"),
            "{kept}"
        );
        assert!(kept.contains("more bytes]"), "{kept}");
        assert_eq!(cut("short"), "short");
    }
}
