//! Reading a server-sent event stream (a model's answer, MCP's legacy
//! HTTP+SSE transport). `eventsource-stream` parses
//! it; in front of it, [`Lines`] hands the parser one complete line at a
//! time, checked for UTF-8 and size.
//!
//! Why: the parser appends every network read to its buffer and re-parses
//! the buffer from the start, so one event arriving in many reads (a 20 MB
//! text delta) cost time quadratic in its size. Fed whole lines, it parses
//! each byte a bounded number of times. The checks turn what would be
//! silent buffering (bytes that are not UTF-8 are held back by the parser
//! until the stream ends) or unbounded growth (a line that never ends) into
//! clear errors. Lines also strips the byte-order mark the parser would
//! panic on (it cuts the 3-byte character at byte 1).

use std::collections::VecDeque;
use std::error::Error;
use std::pin::Pin;
use std::task::{Context, Poll};

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures_util::{Stream, StreamExt};

use crate::error_chain;

/// Largest event (all its lines) or single line accepted from a model's
/// stream. Well above any real delta (a 20 MB text delta is 20 to 40 MB
/// JSON-escaped); past it the stream fails instead of growing memory.
pub const MAX_SSE_EVENT_BYTES: usize = 64 * 1024 * 1024;

/// U+FEFF in UTF-8.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Why a stream could not be read, as the error message says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SseError {
    /// The connection failed mid-stream.
    Transport(String),
    /// Line `line` (1-based) is not UTF-8.
    Utf8 { line: u64 },
    /// An event or line over [`MAX_SSE_EVENT_BYTES`], starting at line `line`.
    TooLarge { line: u64 },
}

impl std::fmt::Display for SseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Transport(message) => write!(f, "stream broken: {message}"),
            Self::Utf8 { line } => write!(f, "invalid event stream: line {line} is not UTF-8"),
            Self::TooLarge { line } => write!(
                f,
                "invalid event stream: the event at line {line} is larger than {MAX_SSE_EVENT_BYTES} bytes"
            ),
        }
    }
}

impl Error for SseError {}

/// The events of `body` (a response body as a stream of byte chunks), or
/// an error message for the first thing wrong with it; after an error the
/// stream ends.
pub fn events<S, B, E>(body: S) -> impl Stream<Item = Result<Event, String>>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
    E: Error + 'static,
{
    Lines::new(body).eventsource().map(|item| {
        item.map_err(|err| match err {
            EventStreamError::Transport(err) => err.to_string(),
            // Lines only passes UTF-8 on, and every complete line parses;
            // kept for completeness.
            EventStreamError::Utf8(err) => format!("invalid event stream: {err}"),
            EventStreamError::Parser(err) => format!("invalid event stream: {err}"),
        })
    })
}

/// Splits a byte stream into complete lines (each with its terminator:
/// LF, CRLF or a lone CR), one per item. A partial last line is passed on
/// when the stream ends.
pub(crate) struct Lines<S> {
    inner: Pin<Box<S>>,
    buf: Vec<u8>,
    /// Start of the unconsumed bytes in `buf`.
    start: usize,
    /// Bytes before this were searched for a line end already.
    scanned: usize,
    /// Lines found but not yet handed on.
    ready: VecDeque<Vec<u8>>,
    /// Bytes of the event being read so far (since the last blank line).
    event_bytes: usize,
    /// Lines handed on so far.
    line: u64,
    /// The source ended (or failed): no more bytes will come.
    done: bool,
    /// An error was reported: nothing more is.
    failed: bool,
    /// The parser got its first item: see [`Lines::poll_next`].
    primed: bool,
}

impl<S> Lines<S> {
    pub(crate) fn new(inner: S) -> Self {
        Self {
            inner: Box::pin(inner),
            buf: Vec::new(),
            start: 0,
            scanned: 0,
            ready: VecDeque::new(),
            event_bytes: 0,
            line: 0,
            done: false,
            failed: false,
            primed: false,
        }
    }

    /// Moves every complete line in `buf` to `ready`.
    fn split(&mut self) {
        loop {
            let from = self.scanned.max(self.start);
            let Some(offset) = self.buf[from..]
                .iter()
                .position(|&b| b == b'\n' || b == b'\r')
            else {
                self.scanned = self.buf.len();
                return;
            };
            let at = from + offset;
            let end = if self.buf[at] == b'\n' {
                at + 1
            } else if at + 1 < self.buf.len() {
                // CR: CRLF, or a lone CR ending the line.
                if self.buf[at + 1] == b'\n' {
                    at + 2
                } else {
                    at + 1
                }
            } else if self.done {
                at + 1
            } else {
                // A CR last: whether an LF follows is not known yet.
                self.scanned = at;
                return;
            };
            if self.start == 0 && 2 * end >= self.buf.len() {
                // The line is most of the buffer (a big event's line): hand
                // the buffer itself on and copy only the smaller rest, which
                // keeps the copying linear.
                let rest = self.buf.split_off(end);
                let line = std::mem::replace(&mut self.buf, rest);
                self.ready.push_back(line);
                self.scanned = 0;
            } else {
                self.ready.push_back(self.buf[self.start..end].to_vec());
                self.start = end;
                self.scanned = end;
            }
        }
    }

    /// The checks a line must pass before the parser sees it; the first
    /// loses its byte-order mark, if any (the stream's one allowed BOM).
    fn check(&mut self, line: &mut Vec<u8>) -> Result<(), SseError> {
        self.line += 1;
        if self.line == 1 && line.starts_with(BOM) {
            line.drain(..BOM.len());
        }
        if std::str::from_utf8(line).is_err() {
            return Err(SseError::Utf8 { line: self.line });
        }
        if line.iter().all(|&b| b == b'\r' || b == b'\n') {
            self.event_bytes = 0;
        } else {
            self.event_bytes += line.len();
            if self.event_bytes > MAX_SSE_EVENT_BYTES {
                return Err(SseError::TooLarge { line: self.line });
            }
        }
        Ok(())
    }

    fn fail(&mut self, error: SseError) -> Poll<Option<Result<Vec<u8>, SseError>>> {
        self.failed = true;
        self.buf = Vec::new();
        self.ready.clear();
        Poll::Ready(Some(Err(error)))
    }
}

impl<S, B, E> Stream for Lines<S>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
    E: Error + 'static,
{
    type Item = Result<Vec<u8>, SseError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        // Every field is Unpin (the source is boxed).
        let this = self.get_mut();
        if !this.primed {
            // The parser checks the first text it gets for a BOM and, when
            // there is one, slices it off at byte 1, inside the character:
            // a panic. An empty line first is a no-op for it (no data, no
            // event) and gets that check over with; the real BOM is
            // stripped in `check`.
            this.primed = true;
            return Poll::Ready(Some(Ok(b"\n".to_vec())));
        }
        loop {
            if this.failed {
                return Poll::Ready(None);
            }
            if let Some(mut line) = this.ready.pop_front() {
                return match this.check(&mut line) {
                    Ok(()) => Poll::Ready(Some(Ok(line))),
                    Err(error) => this.fail(error),
                };
            }
            let pending = this.buf.len() - this.start;
            if this.done {
                if pending == 0 {
                    return Poll::Ready(None);
                }
                let rest = this.buf.split_off(this.start);
                this.start = this.buf.len();
                this.ready.push_back(rest);
                continue;
            }
            // A line that has not ended yet counts against the limit too.
            if this.event_bytes + pending > MAX_SSE_EVENT_BYTES {
                let line = this.line + 1;
                return this.fail(SseError::TooLarge { line });
            }
            match this.inner.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(chunk))) => {
                    // Drop what was handed on before growing the buffer, so
                    // it holds at most one partial line plus one chunk.
                    if this.start > 0 {
                        this.buf.drain(..this.start);
                        this.scanned -= this.start;
                        this.start = 0;
                    }
                    this.buf.extend_from_slice(chunk.as_ref());
                    this.split();
                }
                Poll::Ready(Some(Err(err))) => {
                    let message = if crate::timed_out(&err) {
                        crate::idle_message()
                    } else {
                        error_chain(&err)
                    };
                    return this.fail(SseError::Transport(message));
                }
                Poll::Ready(None) => {
                    this.done = true;
                    this.split();
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    /// The lines after the primer.
    async fn lines(chunks: &[&[u8]]) -> Vec<Result<Vec<u8>, SseError>> {
        let chunks: Vec<Result<Vec<u8>, Infallible>> =
            chunks.iter().map(|c| Ok(c.to_vec())).collect();
        let mut lines = Lines::new(futures_util::stream::iter(chunks))
            .collect::<Vec<_>>()
            .await;
        assert_eq!(lines.remove(0), Ok(b"\n".to_vec()), "the primer");
        lines
    }

    fn ok(lines: &[&str]) -> Vec<Result<Vec<u8>, SseError>> {
        lines.iter().map(|l| Ok(l.as_bytes().to_vec())).collect()
    }

    #[tokio::test]
    async fn splits_on_every_line_ending_across_chunks() {
        assert_eq!(
            lines(&[
                b"a: 1\nb",
                b": 2\r",
                b"\nc: 3\r",
                b"d: 4\r",
                b"\r\n",
                b"tail"
            ])
            .await,
            ok(&["a: 1\n", "b: 2\r\n", "c: 3\r", "d: 4\r", "\r\n", "tail"])
        );
        assert_eq!(lines(&[b"x\r"]).await, ok(&["x\r"]));
        assert!(lines(&[]).await.is_empty());
    }

    #[tokio::test]
    async fn the_first_bom_is_stripped_even_split_across_reads() {
        assert_eq!(
            lines(&[b"\xEF", b"\xBB\xBF\xEF\xBB\xBFdata: x\n", b"\xEF\xBB\xBF\n"]).await,
            ok(&["\u{feff}data: x\n", "\u{feff}\n"])
        );
    }

    #[tokio::test]
    async fn invalid_utf8_is_an_error_naming_the_line() {
        let got = lines(&[b"data: ok\n", b"data: \xff\n", b"data: more\n"]).await;
        assert_eq!(
            got,
            vec![Ok(b"data: ok\n".to_vec()), Err(SseError::Utf8 { line: 2 })]
        );
        assert_eq!(
            SseError::Utf8 { line: 2 }.to_string(),
            "invalid event stream: line 2 is not UTF-8"
        );
    }
}
