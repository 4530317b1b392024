//! Reading newline-delimited requests with a hard limit: a line longer than
//! the limit is never held in memory. Its bytes are skipped up to the next
//! newline and reported as [`Line::TooLong`], so one huge line costs no more
//! memory than the limit, and the reader goes on with the next line.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// One line (without its `\n`, and without a `\r` before it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    Text(Vec<u8>),
    /// Longer than the limit; its length in bytes as read.
    TooLong(usize),
}

pub struct LineReader<R> {
    input: R,
    max: usize,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    pub fn new(input: R, max: usize) -> Self {
        Self { input, max }
    }

    /// The next line; `None` at the end of the input. A last line without
    /// a newline still counts.
    pub async fn next(&mut self) -> std::io::Result<Option<Line>> {
        let mut line = Vec::new();
        let mut seen = 0usize;
        loop {
            let buf = self.input.fill_buf().await?;
            if buf.is_empty() {
                return Ok((seen > 0).then(|| self.finish(line, seen)));
            }
            let (chunk, found) = match buf.iter().position(|b| *b == b'\n') {
                Some(at) => (&buf[..at], true),
                None => (buf, false),
            };
            seen += chunk.len();
            if seen <= self.max {
                line.extend_from_slice(chunk);
            } else {
                // Over the limit: drop what was kept and only count from here on.
                line = Vec::new();
            }
            let used = chunk.len() + usize::from(found);
            self.input.consume(used);
            if found {
                return Ok(Some(self.finish(line, seen)));
            }
        }
    }

    fn finish(&self, mut line: Vec<u8>, seen: usize) -> Line {
        if seen > self.max {
            return Line::TooLong(seen);
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        Line::Text(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn all(input: &[u8], max: usize) -> Vec<Line> {
        // A tiny buffer so lines span many reads.
        let reader = tokio::io::BufReader::with_capacity(3, input);
        let mut lines = LineReader::new(reader, max);
        let mut out = Vec::new();
        while let Some(line) = lines.next().await.unwrap() {
            out.push(line);
        }
        out
    }

    #[tokio::test]
    async fn lines_over_the_limit_are_skipped_to_the_next_newline() {
        let got = all(b"ok\r\n0123456789abc\nnext\n\nlast", 10).await;
        assert_eq!(
            got,
            [
                Line::Text(b"ok".to_vec()),
                Line::TooLong(13),
                Line::Text(b"next".to_vec()),
                Line::Text(Vec::new()),
                Line::Text(b"last".to_vec()),
            ]
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        /// Any input: no panic, never more than the limit kept, and the
        /// short lines come back exactly as split by `\n`.
        #[test]
        fn any_input_splits_like_split_and_stays_bounded(
            input in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400),
            max in 1usize..40,
        ) {
            let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
            let got = runtime.block_on(all(&input, max));
            let mut want: Vec<&[u8]> = input.split(|b| *b == b'\n').collect();
            if want.last().is_some_and(|l| l.is_empty()) {
                want.pop();
            }
            proptest::prop_assert_eq!(got.len(), want.len());
            for (line, raw) in got.iter().zip(want) {
                match line {
                    Line::Text(text) => {
                        proptest::prop_assert!(text.len() <= max);
                        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
                        proptest::prop_assert_eq!(text.as_slice(), raw);
                    }
                    Line::TooLong(n) => proptest::prop_assert!(*n > max && *n == raw.len()),
                }
            }
        }
    }
}
