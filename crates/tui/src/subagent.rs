//! A `task` call's subagent in the transcript: its tool calls gathered under
//! the call (the latest few while it runs, all once expanded), the call
//! itself shown by its description.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use zot_core::AgentEvent;
use zot_core::agent::TASK;

use crate::spinner::SPINNER;
use crate::theme::Theme;
use crate::transcript::{Entry, Transcript};

/// Notes a subagent's event under its `task` call `parent`: each tool call
/// it makes, each that fails, and an error that ends it.
pub(crate) fn show(transcript: &mut Transcript, parent: &str, event: AgentEvent) {
    let step = match event {
        AgentEvent::ToolCall { name, args, .. } => {
            format!("↳ {name} {}", zot_core::agent::preview(&args))
        }
        AgentEvent::ToolResult { is_error: true, .. } => "  ✗ failed".to_owned(),
        AgentEvent::Error { message } => format!("✗ {message}"),
        _ => return,
    };
    transcript.update_last(
        |e| e.is_tool_call(parent),
        |e| {
            if let Entry::Tool { live, .. } = e {
                live.push_str(&step);
                live.push('\n');
            }
        },
    );
}

/// The lines a finished `task` call shows of its subagent's steps: all of
/// them when expanded, else how many there were.
pub(crate) fn finished_steps(
    name: &str,
    steps: &str,
    expanded: bool,
    theme: &Theme,
) -> Vec<Line<'static>> {
    if name != TASK || steps.is_empty() {
        return Vec::new();
    }
    let muted = Style::default().fg(theme.muted);
    if expanded {
        return steps
            .lines()
            .map(|step| Line::styled(format!("    {step}"), muted))
            .collect();
    }
    let calls = steps.lines().filter(|l| l.starts_with('↳')).count();
    let plural = if calls == 1 { "" } else { "s" };
    vec![Line::styled(
        format!("    ↳ {calls} tool call{plural} (ctrl+o to show)"),
        muted,
    )]
}

/// A running task's spinner: its frame from the app's ticks.
pub(crate) fn tick(transcript: &mut Transcript, spinner: usize) {
    transcript.update_each(running_task, |e| {
        if let Entry::Tool { frame, .. } = e {
            *frame = spinner;
        }
    });
}

fn running_task(entry: &Entry) -> bool {
    matches!(entry, Entry::Tool { name, result: None, .. } if name == TASK)
}

/// Puts a running task's spinner after its description.
pub(crate) fn spin(
    lines: &mut [Line<'static>],
    name: &str,
    running: bool,
    frame: usize,
    theme: &Theme,
) {
    if name != TASK || !running {
        return;
    }
    if let Some(header) = lines.first_mut() {
        let glyph = SPINNER[frame % SPINNER.len()];
        header.spans.push(Span::styled(
            format!(" {glyph}"),
            Style::default().fg(theme.accent),
        ));
    }
}
