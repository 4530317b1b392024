//! The chat transcript: its entries with the lines each was last rendered to,
//! the streaming message's settled part, the scroll, and the messages of a
//! shown conversation not made into entries yet. Every change goes through
//! [`Transcript`], so entries and renderings cannot drift apart.

use ratatui::text::Line;

pub use crate::entry::{Entry, Note};
use crate::history::{History, SLICE_MESSAGES};

/// Lines rendered from markdown, and whether every code line in them was
/// highlighted (false when a streaming frame's highlighting limit left some
/// in the plain colour, see [`crate::markdown::limit_highlighting`]).
pub(crate) type Rendering = (Vec<Line<'static>>, bool);

/// Lines an entry was rendered to, and the width they were wrapped for.
struct Rendered {
    width: u16,
    lines: Vec<Line<'static>>,
}

/// Rendered lines of a streaming message's settled prefix: everything up to
/// its last paragraph break outside a code fence, which later text cannot change.
struct StreamCache {
    index: usize,
    width: u16,
    prefix: String,
    lines: Vec<Line<'static>>,
}

#[derive(Default)]
pub struct Transcript {
    entries: Vec<Entry>,
    /// One slot per entry (same index): `None` until drawn, and again after
    /// the entry changes. Only this type's methods touch both vectors.
    rendered: Vec<Option<Rendered>>,
    /// The settled part of the message being streamed, rendered once. It is
    /// checked against the text on use, so changes elsewhere never stale it.
    stream: Option<StreamCache>,
    /// Rows scrolled up from the bottom of the chat.
    scroll: usize,
    /// An entry to bring to the top of the chat at the next draw (`/jump`).
    jump: Option<usize>,
    /// Whether code blocks were highlighted when the kept renderings were made.
    highlighted: bool,
    /// The shown conversation's older messages, made into entries newest
    /// first as the chat reaches them (see [`Self::show_history`]).
    history: History,
    /// Where the history's entries go: the entries before it were there
    /// before the conversation was shown (extensions that failed to load).
    base: usize,
}

impl Transcript {
    /// The entries made so far, oldest first: while the shown
    /// conversation's older messages wait in the history, they are not
    /// among them (see [`Self::load_all`]).
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The last entry. The history never holds the last one (see
    /// [`Self::show_history`]), so this is the transcript's.
    pub fn last(&self) -> Option<&Entry> {
        self.entries.last()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.history.is_empty()
    }

    pub fn scroll(&self) -> usize {
        self.scroll
    }

    /// Adds an entry at the bottom, and scrolls there so it is seen.
    pub(crate) fn push(&mut self, entry: Entry) {
        self.entries.push(entry);
        self.rendered.push(None);
        self.scroll = 0;
    }

    pub(crate) fn clear(&mut self) {
        self.history = History::default();
        self.retain(|_| false);
    }

    /// Keeps the entries `keep` accepts, in order, with their renderings.
    /// The history's messages stay: they make only a conversation's entries
    /// (prompts, answers, tool calls, summaries), which every caller keeps
    /// (it drops extension failures or notes).
    pub(crate) fn retain(&mut self, keep: impl Fn(&Entry) -> bool) {
        let mut kept = Vec::with_capacity(self.entries.len());
        let mut base = 0;
        for (index, (entry, rendered)) in self
            .entries
            .drain(..)
            .zip(self.rendered.drain(..))
            .enumerate()
        {
            if keep(&entry) {
                base += usize::from(index < self.base);
                kept.push((entry, rendered));
            }
        }
        (self.entries, self.rendered) = kept.into_iter().unzip();
        self.base = base;
    }

    /// Starts over from what `keep` accepts (the conversation was replaced,
    /// its history with it), showing the bottom.
    pub(crate) fn restart(&mut self, keep: impl Fn(&Entry) -> bool) {
        self.history = History::default();
        self.retain(keep);
        self.scroll = 0;
    }

    /// Shows a conversation below the entries there are. Only its newest
    /// slice is made into entries now (at least one entry, when it has
    /// any, so [`Self::last`] is its last); the rest as the chat reaches
    /// them, between frames, or when something needs them all.
    pub(crate) fn show_history(&mut self, history: History) {
        self.base = self.entries.len();
        self.history = history;
        while self.entries.len() == self.base && self.load_older().is_some() {}
        self.scroll = 0;
    }

    /// Makes the history's newest slice into entries, above those made
    /// before; how many it made, `None` once the history is all made.
    fn load_older(&mut self) -> Option<usize> {
        if self.history.is_empty() {
            return None;
        }
        Some(self.make_older(SLICE_MESSAGES))
    }

    /// Makes every message of the history into entries, for what needs the
    /// whole transcript (`/jump`, [`Self::update_last`] finding nothing
    /// among the newer entries).
    pub(crate) fn load_all(&mut self) {
        self.make_older(usize::MAX);
    }

    /// Whether some of the shown conversation's messages are not made into
    /// entries yet.
    pub(crate) fn has_history(&self) -> bool {
        !self.history.is_empty()
    }

    /// Makes the history's newest `messages` messages into entries, put
    /// above the history's entries made before (the indices kept of those
    /// move down with them); how many entries it made.
    pub(crate) fn make_older(&mut self, messages: usize) -> usize {
        let at = self.base;
        // With nothing above them, the older entries' vector becomes the
        // transcript's: room for the entries made before, which follow.
        let room = if at == 0 { self.entries.len() } else { 0 };
        let mut older = self.history.older(messages, room);
        let count = older.len();
        if count == 0 {
            return 0;
        }
        if at == 0 {
            older.append(&mut self.entries);
            self.entries = older;
        } else {
            self.entries.splice(at..at, older);
        }
        self.rendered
            .splice(at..at, std::iter::repeat_with(|| None).take(count));
        let shift = |index: &mut usize| {
            if *index >= at {
                *index += count;
            }
        };
        if let Some(jump) = self.jump.as_mut() {
            shift(jump);
        }
        if let Some(stream) = self.stream.as_mut() {
            shift(&mut stream.index);
        }
        count
    }

    /// The last entry `matches` accepts: among those made, unless it is
    /// none of the entries made from or after the history, whose older
    /// messages are then made and searched too.
    fn last_index(&mut self, matches: impl Fn(&Entry) -> bool) -> Option<usize> {
        match self.entries.iter().rposition(&matches) {
            Some(index) if index >= self.base || self.history.is_empty() => Some(index),
            _ if self.history.is_empty() => None,
            _ => {
                self.load_all();
                self.entries.iter().rposition(matches)
            }
        }
    }

    /// The last entry `matches` accepts (see [`Self::update_last`]).
    pub(crate) fn find_last(&mut self, matches: impl Fn(&Entry) -> bool) -> Option<&Entry> {
        let index = self.last_index(matches)?;
        self.entries.get(index)
    }

    /// Changes the last entry `matches` accepts; its rendering is redone.
    /// Returns whether there was one.
    pub(crate) fn update_last(
        &mut self,
        matches: impl Fn(&Entry) -> bool,
        change: impl FnOnce(&mut Entry),
    ) -> bool {
        let Some(index) = self.last_index(matches) else {
            return false;
        };
        change(&mut self.entries[index]);
        self.rendered[index] = None;
        true
    }

    /// Changes every entry made that `matches` accepts. Its caller is the
    /// tick of a running task's spinner: an entry the history makes later
    /// takes the next tick's frame.
    pub(crate) fn update_each(
        &mut self,
        matches: impl Fn(&Entry) -> bool,
        mut change: impl FnMut(&mut Entry),
    ) {
        for (entry, rendered) in self.entries.iter_mut().zip(&mut self.rendered) {
            if matches(entry) {
                change(entry);
                *rendered = None;
            }
        }
    }

    /// Removes the last entry `matches` accepts.
    pub(crate) fn remove_last(&mut self, matches: impl Fn(&Entry) -> bool) -> Option<Entry> {
        let index = self.last_index(matches)?;
        self.rendered.remove(index);
        if index < self.base {
            self.base -= 1;
        }
        Some(self.entries.remove(index))
    }

    /// Says whether code blocks are highlighted now (see
    /// [`crate::markdown::highlighting_ready`]). Once they are, renderings
    /// made before (code in the plain colour) are dropped, to be made again
    /// as they come into view.
    pub(crate) fn set_highlighted(&mut self, highlighted: bool) {
        if highlighted && !self.highlighted {
            self.rendered.fill_with(|| None);
            self.stream = None;
        }
        self.highlighted = highlighted;
    }

    /// Brings entry `index` to the top of the chat at the next draw.
    pub(crate) fn jump_to(&mut self, index: usize) {
        self.jump = Some(index);
    }

    pub(crate) fn take_jump(&mut self) -> Option<usize> {
        self.jump.take()
    }

    pub(crate) fn scroll_up(&mut self, rows: usize) {
        self.scroll += rows;
    }

    pub(crate) fn scroll_down(&mut self, rows: usize) {
        self.scroll = self.scroll.saturating_sub(rows);
    }

    /// Keeps the scroll within `max` rows (what the view can show).
    pub(crate) fn clamp_scroll(&mut self, max: usize) {
        self.scroll = self.scroll.min(max);
    }

    /// The lines of entry `index` wrapped to `width`: `render` makes them
    /// unless they are cached for that width.
    pub(crate) fn lines(
        &mut self,
        index: usize,
        width: u16,
        render: impl FnOnce(&Entry) -> Vec<Line<'static>>,
    ) -> &[Line<'static>] {
        let (Some(entry), Some(slot)) = (self.entries.get(index), self.rendered.get_mut(index))
        else {
            return &[];
        };
        if slot.as_ref().is_none_or(|r| r.width != width) {
            *slot = Some(Rendered {
                width,
                lines: render(entry),
            });
        }
        slot.as_ref().map_or(&[], |r| r.lines.as_slice())
    }

    /// The rows of the chat that fit `height` rows at `width` columns:
    /// entries bottom-anchored, each followed by a blank row, scrolled up by
    /// [`Self::scroll`] rows (clamped here to what there is). Entries are
    /// rendered through `render` as they come into view and kept per width;
    /// `streamed` stands in for the last entry's lines while it streams, and
    /// a message that has just finished streaming is rendered from its
    /// settled part (see [`Self::finish_stream`]) with `markdown`.
    /// The history's older messages are made into entries a slice at a
    /// time as the rows reach them.
    /// Only the rows that show are copied, so a frame costs the screen, not
    /// the history below it; scrolled up, finding the top row sums the kept
    /// row counts of the entries below.
    pub(crate) fn window(
        &mut self,
        width: u16,
        height: usize,
        streamed: Option<&[Line<'static>]>,
        render: impl Fn(&Entry) -> Vec<Line<'static>>,
        markdown: impl Fn(&str) -> Vec<Line<'static>>,
    ) -> Vec<Line<'static>> {
        if streamed.is_none()
            && let Some(index) = self.stream.as_ref().map(|c| c.index)
        {
            self.finish_stream(index, width, |text| (markdown(text), true));
        }
        let needed = height + self.scroll;
        // From the bottom up, the entries that reach the top row; reaching
        // the oldest made from the history, its next older slice is made.
        let mut first = self.entries.len();
        let mut total = 0;
        while total < needed {
            if first == self.base
                && let Some(made) = self.load_older()
            {
                first += made;
                continue;
            }
            if first == 0 {
                break;
            }
            first -= 1;
            total += self.rows(first, width, streamed, &render).len() + 1;
        }
        self.clamp_scroll(total.saturating_sub(height));
        let end = total - self.scroll.min(total);
        let start = end.saturating_sub(height);
        let mut visible = Vec::with_capacity(end - start);
        let mut top = 0;
        for index in first..self.entries.len() {
            if top >= end {
                break;
            }
            let lines = self.rows(index, width, streamed, &render);
            let rows = lines.len() + 1;
            if top + rows > start {
                let from = start.saturating_sub(top);
                let to = (end - top).min(rows);
                // Row `lines.len()` is the blank row after the entry.
                visible.extend((from..to).map(|r| lines.get(r).cloned().unwrap_or_default()));
            }
            top += rows;
        }
        visible
    }

    /// Keeps, as assistant entry `index`'s rendering, the settled part that
    /// was rendered while it streamed and the rest rendered now by
    /// `markdown`, when the stream's cache still fits the entry's text; the
    /// finished message is then not rendered again whole (code fences
    /// highlighted anew) in one frame. The cache is used up either way; a
    /// rest whose code was not all highlighted is not kept.
    fn finish_stream(&mut self, index: usize, width: u16, markdown: impl Fn(&str) -> Rendering) {
        let Some(cache) = self.stream.take() else {
            return;
        };
        let (Some(Entry::Assistant(text)), Some(slot)) =
            (self.entries.get(index), self.rendered.get_mut(index))
        else {
            return;
        };
        if cache.index != index
            || cache.width != width
            || slot.is_some()
            || !text.starts_with(&cache.prefix)
        {
            return;
        }
        let mut lines = cache.lines;
        let (rest, whole) = markdown(&text[cache.prefix.len()..]);
        if !whole {
            return;
        }
        if !lines.is_empty() && !rest.is_empty() {
            lines.push(Line::default());
        }
        lines.extend(rest);
        *slot = Some(Rendered { width, lines });
    }

    /// Entry `index`'s lines: `streamed` for the last entry while it
    /// streams, else the kept rendering.
    fn rows<'a>(
        &'a mut self,
        index: usize,
        width: u16,
        streamed: Option<&'a [Line<'static>]>,
        render: impl Fn(&Entry) -> Vec<Line<'static>>,
    ) -> &'a [Line<'static>] {
        match streamed {
            Some(lines) if index + 1 == self.entries.len() => lines,
            _ => self.lines(index, width, render),
        }
    }

    /// The last `needed` rows (about) of assistant entry `index` while it
    /// streams, `render` turning markdown into lines wrapped to `width`. The
    /// settled prefix is rendered once and grows by whole paragraphs; only the
    /// unsettled tail is rendered each frame, so a frame costs the tail, not
    /// the whole message. A paragraph whose code `render` did not highlight
    /// whole (the frame's limit) is not settled yet: it shows as rendered
    /// and is rendered again next frame, its highlighting going on.
    pub(crate) fn streamed(
        &mut self,
        index: usize,
        width: u16,
        needed: usize,
        render: impl Fn(&str) -> Rendering,
    ) -> Vec<Line<'static>> {
        // The message streamed before this one (a turn's answer before its
        // tool call) keeps what it rendered.
        if let Some(earlier) = self.stream.as_ref().map(|c| c.index)
            && earlier != index
        {
            self.finish_stream(earlier, width, &render);
        }
        let Some(Entry::Assistant(text)) = self.entries.get(index) else {
            return Vec::new();
        };
        let mut cache = self
            .stream
            .take()
            .filter(|c| c.index == index && c.width == width && text.starts_with(&c.prefix))
            .unwrap_or(StreamCache {
                index,
                width,
                prefix: String::new(),
                lines: Vec::new(),
            });
        // The prefix ends at a blank line outside a fence, so the text after
        // it is scanned alone: a frame's scan is the tail, not the message.
        // What settled since is kept a paragraph at a time, while each
        // comes out highlighted whole.
        let start = cache.prefix.len();
        let mut split = start;
        let mut unsettled = None;
        for end in paragraph_ends(&text[start..]).map(|end| start + end) {
            let (more, whole) = render(&text[split..end]);
            if !whole {
                unsettled = Some((more, end));
                break;
            }
            if !cache.lines.is_empty() && !more.is_empty() {
                cache.lines.push(Line::default());
            }
            cache.lines.extend(more);
            split = end;
        }
        if start < split {
            cache.prefix = text[..split].to_owned();
        }
        let tail = match unsettled {
            None => render(&text[split..]).0,
            // Shown as far as it was highlighted; the next frame goes on.
            Some((mut lines, end)) => {
                let (after, _) = render(&text[end..]);
                if !lines.is_empty() && !after.is_empty() {
                    lines.push(Line::default());
                }
                lines.extend(after);
                lines
            }
        };
        // Only the rows that can show are copied out of the settled part.
        let keep = needed.saturating_sub(tail.len() + 1);
        let mut lines: Vec<Line<'static>> =
            cache.lines[cache.lines.len().saturating_sub(keep)..].to_vec();
        if !lines.is_empty() && !tail.is_empty() {
            lines.push(Line::default());
        }
        lines.extend(tail);
        self.stream = Some(cache);
        lines
    }
}

/// The byte length of `text` up to its last blank line outside a code fence.
#[cfg(test)]
fn settled_len(text: &str) -> usize {
    paragraph_ends(text).last().unwrap_or(0)
}

/// The byte offsets of `text` just after each blank line outside a code
/// fence: where a paragraph (or block) ends that later text cannot change.
fn paragraph_ends(text: &str) -> impl Iterator<Item = usize> {
    let mut in_fence = false;
    let mut offset = 0;
    text.split_inclusive('\n').filter_map(move |line| {
        offset += line.len();
        let trimmed = line.trim();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
            None
        } else {
            (trimmed.is_empty() && line.ends_with('\n') && !in_fence).then_some(offset)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(text: &str) -> Entry {
        Entry::Info(text.to_owned())
    }

    /// Renders an entry to one line naming it and counts how often it ran.
    fn draw(t: &mut Transcript, index: usize, width: u16, calls: &mut usize) -> Vec<String> {
        t.lines(index, width, |e| {
            *calls += 1;
            vec![Line::raw(format!("{e:?}"))]
        })
        .iter()
        .map(ToString::to_string)
        .collect()
    }

    #[test]
    fn renderings_follow_their_entries() {
        let mut t = Transcript::default();
        t.push(info("a"));
        t.push(Entry::ExtFailure("b".into()));
        t.push(info("c"));
        let mut calls = 0;
        for i in 0..3 {
            draw(&mut t, i, 10, &mut calls);
        }
        assert_eq!(calls, 3);
        draw(&mut t, 2, 10, &mut calls);
        assert_eq!(calls, 3, "cached");
        draw(&mut t, 2, 11, &mut calls);
        assert_eq!(calls, 4, "another width renders again");

        t.retain(|e| !e.is_ext_failure());
        assert_eq!(t.entries(), [info("a"), info("c")]);
        assert_eq!(draw(&mut t, 1, 11, &mut calls), [r#"Info("c")"#]);
        assert_eq!(calls, 4, "the kept entry kept its rendering");

        assert!(t.update_last(|e| matches!(e, Entry::Info(_)), |e| *e = info("d")));
        assert_eq!(draw(&mut t, 1, 11, &mut calls), [r#"Info("d")"#]);
        assert_eq!(calls, 5, "a changed entry renders again");

        assert_eq!(t.remove_last(|e| *e == info("a")), Some(info("a")));
        assert_eq!(draw(&mut t, 0, 11, &mut calls), [r#"Info("d")"#]);
        assert_eq!(calls, 5, "removal keeps the others' renderings in place");
        assert!(!t.update_last(Entry::is_assistant, |_| {}));
    }

    #[test]
    fn a_window_renders_only_the_entries_that_show() {
        let mut t = Transcript::default();
        for i in 0..10_000 {
            t.push(info(&i.to_string()));
        }
        let calls = std::cell::Cell::new(0);
        let render = |e: &Entry| {
            calls.set(calls.get() + 1);
            vec![Line::raw(format!("{e:?}"))]
        };
        let shown = |rows: Vec<Line<'static>>| -> Vec<String> {
            rows.iter().map(ToString::to_string).collect()
        };
        // Each entry is a row and the blank row after it.
        let rows = t.window(10, 6, None, render, |_| Vec::new());
        assert_eq!(
            shown(rows),
            [
                r#"Info("9997")"#,
                "",
                r#"Info("9998")"#,
                "",
                r#"Info("9999")"#,
                ""
            ]
        );
        assert_eq!(calls.get(), 3, "only the entries on screen");

        t.scroll_up(21);
        let rows = t.window(10, 6, None, render, |_| Vec::new());
        assert_eq!(
            shown(rows),
            [
                "",
                r#"Info("9987")"#,
                "",
                r#"Info("9988")"#,
                "",
                r#"Info("9989")"#
            ]
        );
        assert_eq!(calls.get(), 14, "the ones scrolled past once, and no more");
        t.window(10, 6, None, render, |_| Vec::new());
        assert_eq!(calls.get(), 14);

        // Code coloured from now on: what was rendered is rendered again.
        t.set_highlighted(false);
        t.set_highlighted(true);
        t.window(10, 6, None, render, |_| Vec::new());
        assert_eq!(calls.get(), 28);
        t.scroll_up(usize::MAX / 2);
        let rows = t.window(
            10,
            6,
            None,
            |e: &Entry| vec![Line::raw(format!("{e:?}"))],
            |_| Vec::new(),
        );
        assert_eq!(shown(rows)[0], r#"Info("0")"#, "clamped to the top");
        assert_eq!(t.scroll(), 20_000 - 6);
    }

    /// `count` one-line prompts, each a row and the blank row after it.
    fn prompts(count: usize) -> History {
        History::new(
            (0..count)
                .map(|i| zot_core::message::Message {
                    role: zot_core::message::Role::User,
                    content: vec![zot_core::message::Block::Text {
                        text: format!("q{i}"),
                    }],
                    time: None,
                })
                .collect(),
        )
    }

    #[test]
    fn a_shown_history_is_made_as_the_window_reaches_it() {
        let render = |e: &Entry| vec![Line::raw(format!("{e:?}"))];
        let mut t = Transcript::default();
        t.push(Entry::ExtFailure("bad".into()));
        t.show_history(prompts(10 * SLICE_MESSAGES));
        assert_eq!(t.entries().len(), 1 + SLICE_MESSAGES, "one slice");
        assert_eq!(
            t.last(),
            Some(&Entry::User(format!("q{}", 10 * SLICE_MESSAGES - 1)))
        );
        t.window(10, 6, None, render, |_| Vec::new());
        assert_eq!(
            t.entries().len(),
            1 + SLICE_MESSAGES,
            "the screen needs no more"
        );

        // Streaming below while scrolled up past the slice: the stream's
        // entry moves down with the slices made above it.
        t.push(Entry::Assistant("one\n\ntwo".into()));
        let last = t.entries().len() - 1;
        let streamed = t.streamed(last, 10, 6, |text| {
            (vec![Line::raw(text.trim().to_owned())], true)
        });
        t.scroll_up(2 * SLICE_MESSAGES + 10);
        let rows = t.window(10, 6, Some(&streamed), render, |_| Vec::new());
        assert_eq!(t.entries().len(), 2 + 2 * SLICE_MESSAGES, "one more slice");
        assert_eq!(
            t.stream.as_ref().map(|c| c.index),
            Some(t.entries().len() - 1)
        );
        let shown: Vec<String> = rows.iter().map(ToString::to_string).collect();
        let q = |i: usize| format!(r#"User("q{}")"#, 10 * SLICE_MESSAGES - i);
        assert_eq!(
            shown,
            [q(134), "".into(), q(133), "".into(), q(132), "".into()]
        );

        // The top is the extension's failure above the first prompt.
        t.jump_to(2);
        t.scroll_up(usize::MAX / 2);
        let rows = t.window(10, 4, None, render, |_| Vec::new());
        let shown: Vec<String> = rows.iter().map(ToString::to_string).collect();
        assert_eq!(shown, [r#"ExtFailure("bad")"#, "", r#"User("q0")"#, ""]);
        assert_eq!(t.entries().len(), 2 + 10 * SLICE_MESSAGES);
        assert_eq!(
            t.take_jump(),
            Some(2 + 8 * SLICE_MESSAGES),
            "moved with its entry"
        );
    }

    #[test]
    fn the_history_is_made_in_steps_between_frames() {
        let mut t = Transcript::default();
        t.show_history(prompts(3 * SLICE_MESSAGES + 1));
        assert_eq!(t.entries().len(), SLICE_MESSAGES);
        assert_eq!(t.make_older(SLICE_MESSAGES + 1), SLICE_MESSAGES + 1);
        assert!(t.has_history());
        assert_eq!(t.make_older(usize::MAX), SLICE_MESSAGES, "the rest");
        assert!(!t.has_history());
        let made: Vec<Entry> = (0..=3 * SLICE_MESSAGES)
            .map(|i| Entry::User(format!("q{i}")))
            .collect();
        assert_eq!(t.entries(), made);
    }

    #[test]
    fn what_finds_the_last_entry_makes_the_history_when_it_must() {
        let mut t = Transcript::default();
        t.show_history(prompts(1000));
        t.push(Entry::Info("newer".into()));
        assert!(t.update_last(|e| matches!(e, Entry::Info(_)), |_| {}));
        assert!(t.entries().len() < 1000, "found among the made ones");
        let first = |e: &Entry| *e == Entry::User("q0".into());
        assert_eq!(t.find_last(first), Some(&Entry::User("q0".into())));
        assert_eq!(t.entries().len(), 1001);
        assert_eq!(t.remove_last(first), Some(Entry::User("q0".into())));

        t.show_history(prompts(1000));
        assert!(t.remove_last(|e| matches!(e, Entry::Note(_))).is_none());
        assert_eq!(t.entries().len(), 2000, "all made, none matched");
        t.show_history(prompts(1000));
        t.clear();
        assert!(t.is_empty());
        t.window(10, 6, None, |_| Vec::new(), |_| Vec::new());
        assert!(t.entries().is_empty(), "the history went with it");
    }

    #[test]
    fn pushing_scrolls_to_the_bottom() {
        let mut t = Transcript::default();
        t.scroll_up(10);
        t.scroll_down(3);
        assert_eq!(t.scroll(), 7);
        t.clamp_scroll(5);
        assert_eq!(t.scroll(), 5);
        t.push(info("x"));
        assert_eq!(t.scroll(), 0);
        t.scroll_up(4);
        t.restart(|_| true);
        assert_eq!(t.scroll(), 0);
    }

    #[test]
    fn a_paragraph_not_highlighted_whole_settles_a_frame_later() {
        let mut t = Transcript::default();
        t.push(Entry::Assistant("one\n\n```\ncode\n```\n\nthree".into()));
        // Renders each line of its text; "code" is whole only from the
        // second time it is asked for.
        let asked = std::cell::Cell::new(0);
        let render = |text: &str| {
            let lines: Vec<Line<'static>> = text
                .lines()
                .filter(|l| !l.is_empty())
                .map(|l| Line::raw(l.to_owned()))
                .collect();
            let code = text.contains("code");
            if code {
                asked.set(asked.get() + 1);
            }
            (lines, !code || asked.get() > 1)
        };
        let shown = |lines: Vec<Line<'static>>| -> Vec<String> {
            lines.iter().map(ToString::to_string).collect()
        };
        let all = ["one", "", "```", "code", "```", "", "three"];
        assert_eq!(shown(t.streamed(0, 10, 20, render)), all);
        assert_eq!(
            t.stream.as_ref().map(|c| c.prefix.as_str()),
            Some("one\n\n")
        );
        assert_eq!(shown(t.streamed(0, 10, 20, render)), all);
        assert_eq!(
            t.stream.as_ref().map(|c| c.prefix.len()),
            Some("one\n\n```\ncode\n```\n\n".len()),
            "settled once whole"
        );
        assert_eq!(asked.get(), 2);
        t.streamed(0, 10, 20, render);
        assert_eq!(asked.get(), 2, "kept, not rendered again");
    }

    #[test]
    fn settled_text_ends_at_the_last_blank_line_outside_a_fence() {
        assert_eq!(settled_len("one\n\ntwo"), 5);
        assert_eq!(settled_len("a\n\n```\nx\n\ny"), 3);
        assert_eq!(settled_len("no break yet"), 0);
    }
}
