//! Request bodies as JSON bytes, and the cache that makes a long session's
//! body cost what its new messages cost: the serialised wire messages of a
//! history's settled head (those no later message can change) are kept in
//! the last body, whose buffer the next one is written into, only the rest
//! is serialised again, and what moves
//! between requests (cache marks, the system prompt, tools, limits) is
//! written outside the kept pieces. The bytes are exactly a plain
//! serialisation's, which prompt caching needs (a test compares them over
//! long scripted sessions on every wire API).

use std::ops::Range;

use bytes::Bytes;
use serde::Serialize;

use super::call::Request;
use super::config::Wire;
use crate::tool::{ToolSpec, ToolsSeen};

/// Serialised through a writer type of zot-core's own, so serde_json's
/// serializer for it (string escaping is most of a turn's CPU once the
/// transcript grows) is an instance only zot-core makes, compiled at zot-core's
/// own opt-level (`"s"`, `Cargo.toml`), not the profile's `"z"`. Through `serde_json::to_vec`, the `Vec<u8>` instance is
/// shared with every crate that writes JSON, and fat LTO kept one copy, built
/// for size (the release profile's `"z"`), which cost the 200-read benchmark
/// (`scripts/bench read200`) about a tenth more CPU.
struct Writer<'a>(&'a mut Vec<u8>);

impl std::io::Write for Writer<'_> {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }
    #[inline]
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.0.extend_from_slice(buf);
        Ok(())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Appends `value` as JSON to `out`.
fn write(out: &mut Vec<u8>, value: &impl Serialize) {
    // Serialising borrowed strings and `Value`s into memory cannot fail;
    // were it to, the server would refuse the malformed body.
    let _ = serde_json::to_writer(Writer(out), value);
}

/// A request body: `head`'s fields, then `field` holding the list's items
/// (its lead, then the conversation's), then `"tools"` holding `tools` (the
/// JSON array [`BodyCache::tools`] wrote) when there are any, then `tail`'s
/// fields; in the order the API documents them. A request that names
/// its history takes the settled items from `cache` and leaves the new
/// ones there; any other is serialised plainly.
pub(crate) fn request<T: Serialize>(
    cache: &mut BodyCache,
    request: &Request<'_>,
    head: &impl Serialize,
    field: &str,
    list: List<'_, T>,
    tools: Option<&[u8]>,
    tail: &impl Serialize,
) -> Bytes {
    if request.history.is_some() {
        return cache.body(head, field, list, tools, tail);
    }
    let mut out = Vec::with_capacity(4096);
    begin(&mut out, head, field, list.lead);
    write_items(&mut out, list.items);
    end(&mut out, tools, tail);
    Bytes::from(out)
}

/// Appends `head`'s fields without its `}`, then `field` with its `[`,
/// then the `lead` items.
fn begin<T: Serialize>(out: &mut Vec<u8>, head: &impl Serialize, field: &str, lead: &[T]) {
    let start = out.len();
    write(out, head);
    out.pop();
    // `{"a":1` takes a comma before the field; an empty head is just `{`.
    if out.len() > start + 1 {
        out.push(b',');
    }
    write(out, &field);
    out.extend_from_slice(b":[");
    write_items(out, lead);
}

/// Appends each item and a comma, so a body can go on from any of them.
fn write_items<T: Serialize>(out: &mut Vec<u8>, items: &[T]) {
    for item in items {
        write(out, item);
        out.push(b',');
    }
}

/// Ends the list [`begin`] began (taking back the last item's comma), then
/// appends the `tools` field, `tail`'s fields and the body's `}`.
fn end(out: &mut Vec<u8>, tools: Option<&[u8]>, tail: &impl Serialize) {
    if out.last() == Some(&b',') {
        out.pop();
    }
    out.push(b']');
    if let Some(tools) = tools {
        out.extend_from_slice(b",\"tools\":");
        out.extend_from_slice(tools);
    }
    let start = out.len();
    write(out, tail);
    // `{"b":2}` goes on the body as `,"b":2}`; an empty tail is just `}`.
    if out.len() > start + 2 {
        out[start] = b',';
    } else {
        out.truncate(start);
        out.push(b'}');
    }
}

/// A place where a conversation's wire items may be cut in two: the items
/// before it come only from messages before `source`, and would come out
/// the same whatever follows; the items after it come only from messages
/// from `source` on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cut {
    /// Index of the message in the whole conversation.
    pub source: usize,
    /// How many of the items written in this call come before it.
    pub items: usize,
}

/// The settled head of one history's wire items, serialised. Kept across
/// requests while the request names the same history (an append-only
/// [`Conversation`](crate::conversation::Conversation) identity), on the same
/// wire API, with the same thinking left out; anything else starts it again.
///
/// The kept items are not a copy of their own: they sit in the last body
/// written, whose buffer the next body is written into once the request
/// that sent it is done with it (its bytes are no longer shared). Only the
/// fields before the items are rewritten in front of them, and what follows
/// them is written anew, so a turn neither copies the conversation nor
/// allocates a body of the conversation's size.
#[derive(Debug, Default)]
pub(crate) struct BodyCache {
    key: Option<Key>,
    /// Messages of the history the kept items were made from.
    sources: usize,
    /// The last body written.
    last: Bytes,
    /// Where in `last` the kept items are, each followed by a comma.
    kept: Range<usize>,
    /// The fields and lead before the items, written for one request.
    front: Vec<u8>,
    /// The tools' JSON, written once while they stay the same.
    tools: ToolsJson,
}

/// A request's tools as their wire JSON array, with what it was written
/// from. A session's tools rarely change between turns, and their schemas
/// are most of what the fields around the conversation cost to write.
#[derive(Debug, Default)]
struct ToolsJson {
    /// The wire API and the caller's variant (a cache mark on the last tool).
    variant: Option<(Wire, u8)>,
    from: ToolsSeen,
    json: Option<Bytes>,
}

impl ToolsJson {
    fn matches(&self, variant: (Wire, u8), tools: &[ToolSpec]) -> bool {
        self.variant == Some(variant) && self.from.matches(tools)
    }
}

/// What the cache holds, for the tests that check it is reused.
#[cfg(test)]
impl BodyCache {
    /// Messages of the history the kept items were made from.
    pub(super) fn sources(&self) -> usize {
        self.sources
    }

    /// Bytes of the kept items.
    pub(super) fn kept_len(&self) -> usize {
        self.kept.len()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Key {
    history: u64,
    wire: Wire,
    drop_thinking_before: usize,
}

impl BodyCache {
    /// `tools` as the JSON array `wire_tool` makes of them (given each
    /// tool's index), `None` when there are none. Written again only when
    /// the tools, the wire API or `variant` changed since the last call.
    pub(crate) fn tools<'t, W: Serialize>(
        &mut self,
        variant: (Wire, u8),
        tools: &'t [ToolSpec],
        wire_tool: impl Fn(usize, &'t ToolSpec) -> W,
    ) -> Option<Bytes> {
        if tools.is_empty() {
            return None;
        }
        if !self.tools.matches(variant, tools) {
            let items: Vec<W> = tools
                .iter()
                .enumerate()
                .map(|(i, tool)| wire_tool(i, tool))
                .collect();
            let mut json = Vec::new();
            write(&mut json, &items);
            self.tools = ToolsJson {
                variant: Some(variant),
                from: ToolsSeen::of(tools),
                json: Some(Bytes::from(json)),
            };
        }
        self.tools.json.clone()
    }

    /// The first message of `request` whose wire items must be written:
    /// past the kept ones when it continues the kept history, else 0 (and
    /// what was kept is dropped). A request without a history leaves the
    /// cache as it is.
    pub(crate) fn resume(&mut self, wire: Wire, request: &Request<'_>) -> usize {
        let Some(history) = request.history else {
            return 0;
        };
        let key = Key {
            history,
            wire,
            drop_thinking_before: request.drop_thinking_before,
        };
        if self.key != Some(key) || self.sources > request.messages.len() {
            self.key = Some(key);
            self.sources = 0;
            // Let the memory of a long history go with it.
            self.last = Bytes::new();
            self.kept = 0..0;
        }
        self.sources
    }

    /// The body, with the items before the last cut that leaves `open`
    /// items after it kept for the next request.
    fn body<T: Serialize>(
        &mut self,
        head: &impl Serialize,
        field: &str,
        list: List<'_, T>,
        tools: Option<&[u8]>,
        tail: &impl Serialize,
    ) -> Bytes {
        let List {
            lead,
            items,
            cuts,
            open,
        } = list;
        let settled = cuts
            .iter()
            .rev()
            .find(|cut| cut.items + open <= items.len() && cut.source > self.sources)
            .copied();
        let keep = settled.map_or(0, |cut| cut.items);
        let last = std::mem::take(&mut self.last);
        // While the HTTP client still holds the last body (its connection
        // not yet done with it), the kept part is copied out of it instead.
        let mut out = if last.is_unique() {
            Vec::from(last)
        } else {
            last.get(..self.kept.end).unwrap_or_default().to_vec()
        };
        out.truncate(self.kept.end);
        // `end` took back the last kept item's comma if nothing followed it.
        if !self.kept.is_empty()
            && let Some(comma) = out.last_mut()
        {
            *comma = b',';
        }
        self.front.clear();
        begin(&mut self.front, head, field, lead);
        // In front of the kept items, the fields written for this request:
        // nearly always as long as the last request's, so copied over them.
        if self.front.len() == self.kept.start {
            out[..self.kept.start].copy_from_slice(&self.front);
        } else {
            out.splice(..self.kept.start, self.front.iter().copied());
        }
        self.kept.start = self.front.len();
        write_items(&mut out, &items[..keep]);
        self.kept.end = out.len();
        if let Some(cut) = settled {
            self.sources = cut.source;
        }
        write_items(&mut out, &items[keep..]);
        end(&mut out, tools, tail);
        self.last = Bytes::from(out);
        self.last.clone()
    }
}

/// The wire items of a request's conversation, for [`request`].
pub(crate) struct List<'a, T> {
    /// Items before the conversation's, never kept (a system message).
    pub lead: &'a [T],
    /// The items of the messages from [`BodyCache::resume`]'s index on.
    pub items: &'a [T],
    /// Where `items` may be cut.
    pub cuts: &'a [Cut],
    /// Items that must stay fresh at the end (they may carry a mark that
    /// moves with the next request).
    pub open: usize,
}
