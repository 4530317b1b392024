//! Drawing the app, a function per region: the chat (bottom-anchored, scrolled
//! by rows), queued prompts, status line, editor, widgets and status bar,
//! then what floats over them (command popup, panel, dialog). Any size works.

use ratatui::Frame;
use ratatui::buffer::{Buffer, CellDiffOption};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use zot_protocol::zot::NotifyLevel;

use crate::app::{App, Group, POPUP_ROWS, PopupRow, StatusKind};
use crate::markdown;
use crate::modal::{
    CHOICES, Confirmation, Dialog, FORM_BUTTONS, FieldValue, FormDialog, Modal, Panel, Question,
};
use crate::spinner::SPINNER;
use crate::theme::Theme;
use crate::transcript::{Entry, Note};
use crate::wrap::wrap;
use zot_protocol::ui::FieldKind;

/// Most rows the editor grows to.
const EDITOR_MAX_ROWS: usize = 8;
/// Queued prompts shown at most.
const QUEUE_ROWS: usize = 3;
/// Plan steps shown at most (a window around the current one beyond that).
const TODO_ROWS: usize = 8;
/// Tool result lines shown when collapsed.
const COLLAPSED_RESULT_LINES: usize = 3;
/// Lines of a diff in a tool result shown when collapsed: the change is
/// what the user wants to see.
const COLLAPSED_DIFF_LINES: usize = 16;
/// Rows of a dialog kept for its title, buttons and keys when a long
/// approval preview (a diff) is cut to fit the screen.
const DIALOG_CHROME_ROWS: usize = 7;

/// Draws the screen: the regions from top to bottom, then what floats over
/// them (the command popup, an extension's panel, a dialog).
pub fn draw(frame: &mut Frame, app: &mut App) {
    let area = frame.area();
    if area.width < 4 || area.height < 4 {
        return;
    }
    let theme = *app.theme();
    let widgets = widget_lines(app, &theme);
    let todos = todo_lines(app, &theme, usize::from(area.height / 4));
    let regions = Regions::new(area, app, widgets.len(), todos.len());
    frame.render_widget(Paragraph::new(widgets), regions.widgets);
    draw_chat(frame, app, regions.chat, &theme);
    draw_queue(frame, app, regions.queue, &theme);
    draw_status(frame, app, regions.status, &theme);
    frame.render_widget(Paragraph::new(todos), regions.todos);
    draw_editor(frame, app, regions.editor, &theme);
    draw_bar(frame, app, regions.bar, &theme);
    draw_floating(frame, app, area, regions.editor, &theme);
}

/// The screen's regions, top to bottom.
struct Regions {
    chat: Rect,
    queue: Rect,
    status: Rect,
    todos: Rect,
    editor: Rect,
    widgets: Rect,
    bar: Rect,
}

impl Regions {
    /// The chat takes what the others leave; widgets get a quarter of the
    /// screen at most, queued prompts three rows.
    fn new(area: Rect, app: &App, widget_lines: usize, todo_lines: usize) -> Self {
        let (rows, _) = app
            .editor()
            .layout(usize::from(area.width.saturating_sub(2)));
        let editor_rows = rows.len().clamp(1, EDITOR_MAX_ROWS) as u16 + 2;
        let queue_rows = app.queue().len().min(QUEUE_ROWS) as u16;
        let status_rows = u16::from(app.status().is_some());
        let widget_rows = (widget_lines as u16).min(area.height / 4);
        let [chat, queue, status, todos, editor, widgets, bar] = Layout::vertical([
            Constraint::Min(1),
            Constraint::Length(queue_rows),
            Constraint::Length(status_rows),
            Constraint::Length(todo_lines as u16),
            Constraint::Length(editor_rows),
            Constraint::Length(widget_rows),
            Constraint::Length(1),
        ])
        .areas(area);
        Self {
            chat,
            queue,
            status,
            todos,
            editor,
            widgets,
            bar,
        }
    }
}

// ------------------------------------------------------------------- plan

/// The model's plan above the editor: a heading with the count done, then
/// the steps (done struck through, the current one marked and bold), at
/// most [`TODO_ROWS`] of them and `max_rows` rows in all, as a window that
/// keeps the current step in view.
fn todo_lines(app: &App, theme: &Theme, max_rows: usize) -> Vec<Line<'static>> {
    use zot_protocol::events::TodoStatus;
    let items = app.todos();
    if items.is_empty() || max_rows < 2 {
        return Vec::new();
    }
    let done = items
        .iter()
        .filter(|i| i.status == TodoStatus::Done)
        .count();
    let rows = items.len().min(TODO_ROWS).min(max_rows - 1);
    let current = items
        .iter()
        .position(|i| i.status == TodoStatus::InProgress)
        .or_else(|| items.iter().position(|i| i.status == TodoStatus::Pending))
        .unwrap_or(0);
    let start = current.saturating_sub(rows / 2).min(items.len() - rows);
    let mut heading = format!("plan {done}/{} done", items.len());
    if rows < items.len() {
        heading.push_str(&format!(" (steps {}-{} shown)", start + 1, start + rows));
    }
    let mut lines = vec![Line::styled(heading, Style::default().fg(theme.muted))];
    for item in &items[start..start + rows] {
        let (mark, style) = match item.status {
            TodoStatus::Done => (
                "  ✔ ",
                Style::default()
                    .fg(theme.muted)
                    .add_modifier(Modifier::CROSSED_OUT),
            ),
            TodoStatus::InProgress => (
                "  ▶ ",
                Style::default()
                    .fg(theme.accent)
                    .add_modifier(Modifier::BOLD),
            ),
            TodoStatus::Pending => ("  ○ ", Style::default()),
        };
        lines.push(Line::from(vec![
            Span::styled(mark, style.remove_modifier(Modifier::CROSSED_OUT)),
            Span::styled(first_line(&item.text).to_owned(), style),
        ]));
    }
    lines
}

// ------------------------------------------------------------------- chat

/// Code lines a streaming frame highlights at most: a line of Rust costs
/// about 0.35 ms at the release profile (syntect's regexes at opt-level
/// `z`), and a whole 12-line block arriving in one frame took it past 4 ms;
/// the lines past the limit show in the plain code colour for a frame or
/// two (issue 37, BENCHMARKS.md).
pub const STREAM_HIGHLIGHT_LINES: usize = 6;

/// The chat, bottom-anchored: only the entries that can be seen are wrapped.
fn draw_chat(frame: &mut Frame, app: &mut App, area: Rect, theme: &Theme) {
    let width = area.width;
    let busy = app.is_busy();
    let transcript = app.transcript_mut();
    transcript.set_highlighted(markdown::highlighting_ready());
    let count = transcript.entries().len();
    let streaming = busy && matches!(transcript.last(), Some(Entry::Assistant(_)));
    let columns = usize::from(width);
    let wrapped = |lines: Vec<Line<'static>>| -> Vec<Line<'static>> {
        lines.iter().flat_map(|l| wrap(l, columns)).collect()
    };
    if let Some(target) = transcript.take_jump() {
        // `/jump`: scrolled so the entry's first row is the top one.
        let below: usize = (target..count)
            .map(|i| {
                transcript
                    .lines(i, width, |entry| {
                        wrapped(entry_lines(entry, theme, columns))
                    })
                    .len()
                    + 1
            })
            .sum();
        transcript.scroll_down(usize::MAX);
        transcript.scroll_up(below.saturating_sub(area.height as usize));
    }
    let height = usize::from(area.height);
    let streamed = streaming.then(|| {
        markdown::limit_highlighting(Some(STREAM_HIGHLIGHT_LINES));
        let lines = transcript.streamed(count - 1, width, height + transcript.scroll(), |text| {
            let lines = wrapped(markdown::render(text, theme, columns));
            (lines, markdown::highlighted_whole())
        });
        markdown::limit_highlighting(None);
        lines
    });
    let visible = transcript.window(
        width,
        height,
        streamed.as_deref(),
        |entry| wrapped(entry_lines(entry, theme, columns)),
        |text| wrapped(markdown::render(text, theme, columns)),
    );
    frame.render_widget(Paragraph::new(visible), area);
    hyperlinks(frame.buffer_mut(), area);
}

/// Turns the cells markdown marked as a link (see
/// [`markdown::link_target`]) into OSC 8 hyperlinks: each such cell's
/// symbol is wrapped in the sequence, its width kept. Terminals without
/// OSC 8 ignore it and show the text.
fn hyperlinks(buffer: &mut Buffer, area: Rect) {
    for y in area.top()..area.bottom() {
        for x in area.left()..area.right() {
            let Some(cell) = buffer.cell_mut((x, y)) else {
                continue;
            };
            let Some(url) = markdown::link_target(cell.underline_color) else {
                continue;
            };
            cell.underline_color = Color::Reset;
            let width = unicode_width::UnicodeWidthStr::width(cell.symbol()).max(1);
            let symbol = format!("\x1b]8;;{url}\x1b\\{}\x1b]8;;\x1b\\", cell.symbol());
            cell.set_symbol(&symbol);
            if let Some(width) = std::num::NonZeroU16::new(width as u16) {
                cell.set_diff_option(CellDiffOption::ForcedWidth(width));
            }
        }
    }
}

/// The lines of one entry for `width` columns (tables fit it; the caller
/// wraps the rest).
fn entry_lines(entry: &Entry, theme: &Theme, width: usize) -> Vec<Line<'static>> {
    match entry {
        Entry::User(text) => text
            .lines()
            .enumerate()
            .map(|(i, line)| {
                let lead = if i == 0 { "› " } else { "  " };
                Line::styled(
                    format!("{lead}{line}"),
                    Style::default().fg(theme.user).add_modifier(Modifier::BOLD),
                )
            })
            .collect(),
        Entry::Assistant(text) => markdown::render(text, theme, width),
        Entry::Tool {
            name,
            preview,
            result,
            expanded,
            live,
            frame,
            ..
        } => {
            let mut lines = tool_lines(name, preview, result.as_ref(), *expanded, live, theme);
            crate::subagent::spin(&mut lines, name, result.is_none(), *frame, theme);
            lines
        }
        Entry::Error(text) => text
            .lines()
            .map(|l| Line::styled(format!("✗ {l}"), Style::default().fg(theme.error)))
            .collect(),
        Entry::Info(text) => text
            .lines()
            .map(|l| Line::styled(l.to_owned(), Style::default().fg(theme.muted)))
            .collect(),
        Entry::ExtFailure(text) => text
            .lines()
            .map(|l| Line::styled(format!("⚠ {l}"), Style::default().fg(theme.error)))
            .collect(),
        Entry::Note(note) => note_lines(note, theme),
        Entry::Compaction {
            summary,
            automatic,
            expanded,
        } => compaction_lines(summary, *automatic, *expanded, theme, width),
    }
}

/// A compaction: one line saying so, and the summary rendered when expanded.
fn compaction_lines(
    summary: &str,
    automatic: bool,
    expanded: bool,
    theme: &Theme,
    width: usize,
) -> Vec<Line<'static>> {
    let why = if automatic {
        "context was getting full: "
    } else {
        ""
    };
    let muted = Style::default().fg(theme.muted);
    let lines = summary.lines().count();
    let head = if expanded {
        format!("▾ {why}older messages were summarised (ctrl+o to fold)")
    } else {
        format!("▸ {why}older messages were summarised ({lines} lines, ctrl+o to read)")
    };
    let mut out = vec![Line::styled(head, muted.add_modifier(Modifier::ITALIC))];
    if expanded {
        let body = markdown::render(summary, theme, width.saturating_sub(2));
        out.extend(body.into_iter().map(|line| {
            let mut spans = vec![Span::styled("│ ", muted)];
            spans.extend(line.spans);
            Line::from(spans)
        }));
    }
    out
}

/// An extension's note: its name, then the text in its level's colour.
fn note_lines(note: &Note, theme: &Theme) -> Vec<Line<'static>> {
    let color = match note.level {
        NotifyLevel::Info => theme.muted,
        NotifyLevel::Success => theme.success,
        NotifyLevel::Warn => theme.warn,
        NotifyLevel::Error => theme.error,
    };
    note.text
        .lines()
        .map(|line| {
            Line::from(vec![
                Span::styled(
                    format!("[{}] ", note.extension),
                    Style::default().fg(theme.accent),
                ),
                Span::styled(line.to_owned(), Style::default().fg(color)),
            ])
        })
        .collect()
}

/// Whether `text` holds a unified diff (a hunk header after a `+++` line).
fn is_diff(text: &str) -> bool {
    let mut header = false;
    for line in text.lines() {
        if line.starts_with("+++ ") {
            header = true;
        } else if header && line.starts_with("@@ ") {
            return true;
        }
    }
    false
}

/// The style of a diff line: added green, removed red, hunks in the
/// accent colour, file headers bold, context muted. The one diff view, for
/// tool results and approvals alike.
fn diff_style(line: &str, theme: &Theme) -> Style {
    if line.starts_with("+++ ") || line.starts_with("--- ") {
        Style::default().add_modifier(Modifier::BOLD)
    } else if line.starts_with("@@") {
        Style::default().fg(theme.accent)
    } else if line.starts_with('+') {
        Style::default().fg(theme.success)
    } else if line.starts_with('-') {
        Style::default().fg(theme.error)
    } else {
        Style::default().fg(theme.muted)
    }
}

/// A tool call: its name and arguments, then the tail of its output while it
/// runs, or its result (the first lines unless expanded).
fn tool_lines(
    name: &str,
    preview: &str,
    result: Option<&(bool, String)>,
    expanded: bool,
    live: &str,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let mut lines = vec![Line::from(vec![
        Span::styled(
            format!("⚙ {name} "),
            Style::default().fg(theme.tool).add_modifier(Modifier::BOLD),
        ),
        Span::styled(preview.to_owned(), Style::default().fg(theme.muted)),
    ])];
    let Some((is_error, text)) = result else {
        // Still running: the last lines of its output so far.
        let tail: Vec<&str> = live.lines().collect();
        for line in &tail[tail.len().saturating_sub(COLLAPSED_RESULT_LINES)..] {
            lines.push(Line::styled(
                format!("    {line}"),
                Style::default().fg(theme.muted),
            ));
        }
        return lines;
    };
    lines.extend(crate::subagent::finished_steps(name, live, expanded, theme));
    let (mark, color) = if *is_error {
        ("✗", theme.error)
    } else {
        ("✓", theme.success)
    };
    let all: Vec<&str> = text.lines().collect();
    let diff = is_diff(text);
    let collapsed = if diff {
        COLLAPSED_DIFF_LINES
    } else {
        COLLAPSED_RESULT_LINES
    };
    let shown = if expanded {
        all.len()
    } else {
        all.len().min(collapsed)
    };
    for (i, line) in all.iter().take(shown).enumerate() {
        let lead = if i == 0 {
            format!("  {mark} ")
        } else {
            "    ".to_owned()
        };
        let style = if diff && i > 0 {
            diff_style(line, theme)
        } else {
            Style::default().fg(theme.muted)
        };
        lines.push(Line::from(vec![
            Span::styled(lead, Style::default().fg(color)),
            Span::styled((*line).to_owned(), style),
        ]));
    }
    if all.is_empty() {
        lines.push(Line::styled(
            format!("  {mark} (no output)"),
            Style::default().fg(color),
        ));
    }
    if all.len() > shown {
        lines.push(Line::styled(
            format!("    … {} more lines (ctrl+o to expand)", all.len() - shown),
            Style::default().fg(theme.muted),
        ));
    }
    lines
}

// ------------------------------------------------------- below the chat

fn widget_lines(app: &App, theme: &Theme) -> Vec<Line<'static>> {
    app.widgets()
        .iter()
        .flat_map(|(_, lines)| {
            lines
                .iter()
                .map(|l| Line::styled(l.clone(), Style::default().fg(theme.muted)))
        })
        .collect()
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

fn draw_queue(frame: &mut Frame, app: &App, area: Rect, theme: &Theme) {
    let queued: Vec<Line> = app
        .queue()
        .iter()
        .take(QUEUE_ROWS)
        .map(|q| {
            Line::styled(
                format!("queued: {}", first_line(q)),
                Style::default().fg(theme.muted),
            )
        })
        .collect();
    frame.render_widget(Paragraph::new(queued), area);
}

fn draw_status(frame: &mut Frame, app: &App, area: Rect, theme: &Theme) {
    let Some(status) = app.status() else {
        return;
    };
    let color = if status.kind == StatusKind::Error {
        theme.error
    } else {
        theme.accent
    };
    frame.render_widget(
        Paragraph::new(Line::styled(
            status.text.clone(),
            Style::default().fg(color),
        )),
        area,
    );
}

fn draw_editor(frame: &mut Frame, app: &App, area: Rect, theme: &Theme) {
    let waiting = app
        .waiting_for()
        .map(|names| format!(" waiting for {}… Esc skips ", names.join(", ")));
    let title = match waiting {
        Some(waiting) => waiting,
        None if app.is_busy() => " working… Enter queues, Esc cancels ".to_owned(),
        None if app.editor().has_folded_paste() => {
            " Enter send · Ctrl+X shows the paste whole ".to_owned()
        }
        None => " Enter send · Shift+Enter newline ".to_owned(),
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::default().fg(theme.border))
        .title(Span::styled(title, Style::default().fg(theme.muted)));
    let inner = block.inner(area);
    let (rows, (row, col)) = app.editor().layout(usize::from(inner.width));
    let height = inner.height as usize;
    let top = row.saturating_sub(height.saturating_sub(1));
    let lines: Vec<Line> = rows
        .into_iter()
        .skip(top)
        .take(height)
        .map(Line::raw)
        .collect();
    frame.render_widget(Paragraph::new(lines).block(block), area);
    if matches!(app.modal(), Modal::Editor { .. }) {
        let x = (inner.x as usize + col).min((inner.x + inner.width).saturating_sub(1) as usize);
        let y = inner.y + (row - top) as u16;
        frame.set_cursor_position((x as u16, y));
    }
}

fn draw_bar(frame: &mut Frame, app: &App, area: Rect, theme: &Theme) {
    let spinner = if app.is_busy() {
        SPINNER[app.spinner() % SPINNER.len()]
    } else {
        " "
    };
    let model = if app.config().missing_credentials.is_some() {
        "no model (set a key)".to_owned()
    } else {
        format!("{}/{}", app.config().provider, app.config().model)
    };
    let mut text = format!(
        "{spinner} {model} · {} · ctx {}% · ${:.4}",
        app.config().cwd,
        app.context_percent(),
        app.cost()
    );
    if let Some(share) = app.cache_share() {
        text.push_str(&format!(" · cache {:.0}%", share * 100.0));
    }
    if app.is_plan() {
        text.push_str(" · plan");
    }
    for (_, status) in app.statuses() {
        text.push_str(" · ");
        text.push_str(status);
    }
    frame.render_widget(
        Paragraph::new(Line::styled(text, Style::default().fg(theme.muted))),
        area,
    );
}

// ------------------------------------------------------------- floating

/// The command popup (above the editor), the panel, then a dialog on top.
fn draw_floating(frame: &mut Frame, app: &mut App, screen: Rect, editor: Rect, theme: &Theme) {
    if let Some(rows) = app.popup() {
        draw_popup(frame, app, &rows, editor, theme);
    } else if let Some(picker) = app.file_picker() {
        draw_above(frame, picker.lines(theme), editor, theme);
    }
    if let Some(panel) = app.panel_mut() {
        draw_panel(frame, panel, screen, theme);
    }
    if let Some(dialog) = app.dialog() {
        draw_dialog(frame, dialog, screen, theme);
    }
}

fn draw_popup(frame: &mut Frame, app: &App, rows: &[PopupRow], editor: Rect, theme: &Theme) {
    let mut lines = Vec::new();
    let mut group = None;
    let selected = app
        .modal()
        .popup_selected()
        .min(rows.len().saturating_sub(1));
    let first = selected.saturating_sub(POPUP_ROWS - 1);
    // A divider starts each group after the built-ins (also when the
    // built-ins scrolled out of view); a list of one such group alone has none.
    let builtins_exist = rows.iter().any(|r| r.2 == Group::Builtin);
    for (i, (name, desc, row_group)) in rows.iter().enumerate().skip(first).take(POPUP_ROWS) {
        if group != Some(*row_group) {
            let shown = i > first || builtins_exist;
            group = Some(*row_group);
            let label = match row_group {
                Group::Builtin => None,
                Group::Extension => Some("── extensions ──"),
                Group::Markdown => Some("── .claude/commands ──"),
            };
            if let Some(label) = label.filter(|_| shown) {
                lines.push(Line::styled(label, Style::default().fg(theme.muted)));
            }
        }
        let style = choice_style(i == selected, theme);
        lines.push(Line::from(vec![
            Span::styled(format!("/{name:<14}"), style),
            Span::styled(format!(" {desc}"), Style::default().fg(theme.muted)),
        ]));
    }
    draw_above(frame, lines, editor, theme);
}

/// `lines` in a bordered box standing on the editor (the command popup,
/// the file picker), as high as they need and the screen allows.
fn draw_above(frame: &mut Frame, lines: Vec<Line>, editor: Rect, theme: &Theme) {
    let height = (lines.len() as u16 + 2).min(editor.y);
    if height < 3 {
        return;
    }
    let area = Rect {
        x: editor.x,
        y: editor.y - height,
        width: editor.width,
        height,
    };
    frame.render_widget(Clear, area);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::default().fg(theme.border));
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

fn draw_panel(frame: &mut Frame, panel: &mut Panel, screen: Rect, theme: &Theme) {
    let area = centered(screen, 90, 80);
    frame.render_widget(Clear, area);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::default().fg(theme.accent))
        .title(Span::styled(
            format!(" {} ", panel.title),
            Style::default().add_modifier(Modifier::BOLD),
        ))
        .title_bottom(Span::styled(
            format!(" {} ", panel.footer),
            Style::default().fg(theme.muted),
        ));
    let inner = block.inner(area);
    let lines: Vec<Line> = panel
        .lines
        .iter()
        .flat_map(|l| wrap(&Line::raw(l.clone()), inner.width as usize))
        .collect();
    panel.scroll = panel
        .scroll
        .min(lines.len().saturating_sub(inner.height as usize));
    let visible: Vec<Line> = lines
        .into_iter()
        .skip(panel.scroll)
        .take(inner.height as usize)
        .collect();
    frame.render_widget(Paragraph::new(visible).block(block), area);
}

/// The open dialog, centred over everything else.
fn draw_dialog(frame: &mut Frame, dialog: &Dialog, area: Rect, theme: &Theme) {
    let (title, body) = match dialog {
        Dialog::Confirm(confirmation) => (
            " Run this tool? ".to_owned(),
            confirmation_body(
                confirmation,
                theme,
                usize::from(area.height).saturating_sub(DIALOG_CHROME_ROWS),
            ),
        ),
        Dialog::Question(question) => (
            format!(" {} asks ", question.extension),
            question_body(question, theme),
        ),
        Dialog::Form(form) => (format!(" {} asks ", form.extension), form_body(form, theme)),
        Dialog::Sessions(picker) => (picker.title(), picker.body(theme)),
        Dialog::Prompts(picker) => (picker.title(), picker.body(theme)),
        Dialog::Rewind(offer) => (offer.title(), offer.body(theme)),
        Dialog::Models(picker) => (picker.title(), picker.body(theme)),
        Dialog::Trust { inputs } => (" Untrusted project ".to_owned(), trust_body(inputs, theme)),
        Dialog::Retrust { changes } => (
            " Project files changed ".to_owned(),
            retrust_body(changes, theme),
        ),
    };
    dialog_box(frame, area, &title, body, theme);
}

/// A choice in a list or row of choices: reversed in the accent colour when selected.
fn choice_style(selected: bool, theme: &Theme) -> Style {
    if selected {
        Style::default()
            .fg(theme.accent)
            .add_modifier(Modifier::REVERSED)
    } else {
        Style::default()
    }
}

/// The call asked about: the tool, then what it would do (a diff in
/// colour, a whole command) in at most `max_rows` lines, then the answers.
fn confirmation_body(
    confirmation: &Confirmation,
    theme: &Theme,
    max_rows: usize,
) -> Vec<Line<'static>> {
    let mut buttons = Vec::new();
    for (i, choice) in CHOICES.iter().enumerate() {
        let style = choice_style(i == confirmation.selected, theme);
        buttons.push(Span::styled(format!(" {} ", choice.label), style));
        buttons.push(Span::raw(" "));
    }
    let keys: Vec<String> = CHOICES
        .iter()
        .map(|choice| format!("{} {}", choice.key, choice.label))
        .collect();
    let tool = Span::styled(
        confirmation.tool.clone(),
        Style::default().fg(theme.tool).add_modifier(Modifier::BOLD),
    );
    let preview: Vec<&str> = confirmation.preview.lines().collect();
    let mut body = Vec::new();
    if preview.len() <= 1 {
        body.push(Line::from(vec![
            tool,
            Span::raw(format!(" {}", confirmation.preview)),
        ]));
    } else {
        body.push(Line::from(tool));
        let diff = is_diff(&confirmation.preview);
        let max_rows = max_rows.max(1);
        let cut = preview.len() > max_rows;
        let shown = if cut { max_rows - 1 } else { preview.len() };
        for line in &preview[..shown] {
            let style = if diff {
                diff_style(line, theme)
            } else {
                Style::default()
            };
            body.push(Line::styled((*line).to_owned(), style));
        }
        if cut {
            body.push(Line::styled(
                format!("… {} more lines", preview.len() - shown),
                Style::default().fg(theme.muted),
            ));
        }
    }
    body.extend([
        Line::default(),
        Line::from(buttons),
        Line::styled(keys.join(" · "), Style::default().fg(theme.muted)),
    ]);
    body
}

fn question_body(question: &Question, theme: &Theme) -> Vec<Line<'static>> {
    let mut body: Vec<Line<'static>> = question
        .prompt
        .lines()
        .map(|l| Line::raw(l.to_owned()))
        .collect();
    body.push(Line::default());
    for (i, option) in question.options.iter().enumerate() {
        let style = choice_style(i == question.selected, theme);
        body.push(Line::styled(format!("{}. {option}", i + 1), style));
    }
    body.push(Line::styled(
        "Enter choose · 1-9 pick · Esc dismiss",
        Style::default().fg(theme.muted),
    ));
    body
}

fn form_body(form: &FormDialog, theme: &Theme) -> Vec<Line<'static>> {
    let muted = Style::default().fg(theme.muted);
    let mut body: Vec<Line<'static>> = form
        .form
        .message
        .lines()
        .map(|l| Line::raw(l.to_owned()))
        .collect();
    body.push(Line::default());
    for (i, (field, value)) in form.form.fields.iter().zip(&form.values).enumerate() {
        let shown = match (value, &field.kind) {
            (FieldValue::Text(text), _) => format!("[{text}]"),
            (FieldValue::Bool(on), _) => match on {
                Some(true) => "‹ yes ›".to_owned(),
                Some(false) => "‹ no ›".to_owned(),
                None => "‹ - ›".to_owned(),
            },
            (FieldValue::Choice(chosen), FieldKind::Choice { labels, .. }) => {
                let label = chosen
                    .and_then(|c| labels.get(c))
                    .map_or("-", String::as_str);
                format!("‹ {label} ›")
            }
            (FieldValue::Many { chosen, at }, FieldKind::MultiChoice { labels, .. }) => labels
                .iter()
                .zip(chosen)
                .enumerate()
                .map(|(j, (label, on))| {
                    let mark = if *on { "x" } else { " " };
                    let pointer = if j == *at && i == form.focus {
                        "›"
                    } else {
                        " "
                    };
                    format!("{pointer}[{mark}] {label}")
                })
                .collect::<Vec<_>>()
                .join(" "),
            (FieldValue::Choice(_) | FieldValue::Many { .. }, _) => String::new(),
        };
        let star = if field.required { "*" } else { "" };
        body.push(Line::from(vec![
            Span::raw(format!("{}{star}: ", field.title)),
            Span::styled(shown, choice_style(i == form.focus, theme)),
        ]));
        // Only the focused field's description: a long form must fit the screen.
        if let Some(description) = field.description.as_ref().filter(|_| i == form.focus) {
            body.push(Line::styled(format!("  {description}"), muted));
        }
    }
    body.push(Line::default());
    let mut buttons = Vec::new();
    for (i, label) in FORM_BUTTONS.iter().enumerate() {
        let selected = form.focus == form.values.len() + i;
        buttons.push(Span::styled(
            format!("[ {label} ]"),
            choice_style(selected, theme),
        ));
        buttons.push(Span::raw("  "));
    }
    body.push(Line::from(buttons));
    if let Some(error) = &form.error {
        body.push(Line::styled(
            error.clone(),
            Style::default().fg(theme.error),
        ));
    }
    body.push(Line::styled(
        "Tab/↑↓ move · type, ←→ or Space to set · Enter next or press · Esc cancel",
        muted,
    ));
    body
}

fn trust_body(inputs: &[String], theme: &Theme) -> Vec<Line<'static>> {
    listed_question(
        "This project ships what zot runs or reads only once you trust it:",
        inputs,
        "Trust this project?",
        "y trust (remembered by `zot trust`) · n not now",
        theme,
    )
}

fn retrust_body(changes: &[String], theme: &Theme) -> Vec<Line<'static>> {
    listed_question(
        "Files this project's hooks, extensions or servers run changed since you trusted it:",
        changes,
        "They stay off until you trust the project again. Trust these files?",
        "y trust them (as `zot trust` does) · n keep them off",
        theme,
    )
}

/// A dialog body: what it is about, a bulleted list, the question and its keys.
fn listed_question(
    intro: &str,
    items: &[String],
    question: &str,
    keys: &str,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let mut body = vec![Line::raw(intro.to_owned())];
    body.extend(items.iter().map(|item| Line::raw(format!("  • {item}"))));
    body.extend([
        Line::raw(question.to_owned()),
        Line::default(),
        Line::styled(keys.to_owned(), Style::default().fg(theme.muted)),
    ]);
    body
}

fn dialog_box(frame: &mut Frame, screen: Rect, title: &str, body: Vec<Line>, theme: &Theme) {
    let width = screen.width.min(72).max(screen.width.min(20));
    let lines: Vec<Line> = body
        .iter()
        .flat_map(|l| {
            wrap(
                &l.clone().into_owned_line(),
                width.saturating_sub(2) as usize,
            )
        })
        .collect();
    // Sized by the wrapped lines, so a long line does not push the last ones out.
    let height = (lines.len() as u16 + 2).min(screen.height);
    let area = Rect {
        x: screen.x + (screen.width - width) / 2,
        y: screen.y + (screen.height - height) / 2,
        width,
        height,
    };
    frame.render_widget(Clear, area);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::default().fg(theme.accent))
        .title(Span::styled(
            title.to_owned(),
            Style::default().add_modifier(Modifier::BOLD),
        ));
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

trait IntoOwnedLine {
    fn into_owned_line(self) -> Line<'static>;
}

impl IntoOwnedLine for Line<'_> {
    fn into_owned_line(self) -> Line<'static> {
        Line::from(
            self.spans
                .into_iter()
                .map(|s| Span::styled(s.content.into_owned(), s.style))
                .collect::<Vec<_>>(),
        )
        .style(self.style)
    }
}

fn centered(screen: Rect, width_pct: u16, height_pct: u16) -> Rect {
    let width = (screen.width * width_pct / 100).max(screen.width.min(10));
    let height = (screen.height * height_pct / 100).max(screen.height.min(5));
    Rect {
        x: screen.x + (screen.width - width) / 2,
        y: screen.y + (screen.height - height) / 2,
        width,
        height,
    }
}
