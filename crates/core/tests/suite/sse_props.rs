//! The model stream reader (`provider::read_stream`, the SSE reader under
//! both providers) fed random, mutated and oddly chunked input: it never
//! panics, ends in a completion or a clear `ProviderError::Stream`, and how
//! the bytes are split into reads never changes the result.

use std::convert::Infallible;

use futures_util::FutureExt as _;
use proptest::prelude::*;
use tokio::sync::mpsc;
use zot_core::provider::{
    Completion, MAX_SSE_EVENT_BYTES, ProviderError, ProviderKind, StreamEvent, read_stream,
};
use zot_testkit::{anthropic, openai};

/// Cases per property, as the hardening issue asks.
const CASES: u32 = 256;

type Outcome = (Result<Completion, ProviderError>, Vec<StreamEvent>);

/// Reads `chunks` as one response body of `kind`.
fn read<E: std::error::Error + 'static>(
    kind: ProviderKind,
    chunks: Vec<Result<Vec<u8>, E>>,
) -> Outcome {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let result = read_stream(kind, futures_util::stream::iter(chunks), &tx)
        .now_or_never()
        .expect("reading an in-memory body never waits");
    drop(tx);
    let mut events = Vec::new();
    while let Ok(event) = rx.try_recv() {
        events.push(event);
    }
    (result, events)
}

fn read_chunks(kind: ProviderKind, chunks: Vec<Vec<u8>>) -> Outcome {
    read(kind, chunks.into_iter().map(Ok::<_, Infallible>).collect())
}

/// `bytes` cut at `cuts` (taken modulo its length), in order.
fn chunked(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    if bytes.is_empty() {
        return Vec::new();
    }
    let mut at: Vec<usize> = cuts.iter().map(|c| c % bytes.len()).collect();
    at.sort_unstable();
    at.dedup();
    let mut chunks = Vec::new();
    let mut start = 0;
    for cut in at.into_iter().chain([bytes.len()]) {
        if cut > start {
            chunks.push(bytes[start..cut].to_vec());
            start = cut;
        }
    }
    chunks
}

/// Ok, or the stream error of `kind` with a message.
fn assert_clear(kind: ProviderKind, result: &Result<Completion, ProviderError>) {
    match result {
        Ok(_) => {}
        Err(
            ProviderError::Stream { provider, message }
            | ProviderError::ErrorEvent {
                provider, message, ..
            },
        ) => {
            assert_eq!(*provider, kind.name());
            assert!(!message.trim().is_empty(), "an error without a message");
        }
        Err(other) => panic!("not a stream error: {other:?}"),
    }
}

fn kinds() -> impl Strategy<Value = ProviderKind> {
    prop_oneof![Just(ProviderKind::Anthropic), Just(ProviderKind::OpenAi)]
}

/// A valid streamed answer of `kind`: text, maybe thinking, maybe a tool
/// call, each in `pieces` deltas.
fn valid_body(
    kind: ProviderKind,
    text: &str,
    thinking: Option<&str>,
    call: Option<&str>,
    pieces: usize,
) -> String {
    let args = call.map(|arg| serde_json::json!({ "arg": arg }).to_string());
    match kind {
        ProviderKind::Anthropic => {
            let mut script = anthropic::Script::new().pieces(pieces);
            if let Some(thinking) = thinking {
                script = script.thinking(thinking, "sig");
            }
            script = script.text(text);
            if let Some(args) = &args {
                script = script.tool_call("toolu_1", "read", args);
            }
            script.build().body()
        }
        _ => {
            let mut script = openai::Script::new().pieces(pieces);
            if let Some(thinking) = thinking {
                script = script.reasoning(thinking);
            }
            script = script.text(text);
            if let Some(args) = &args {
                script = script.tool_call("call_1", "read", args);
            }
            script.build().body()
        }
    }
}

/// A change to a byte string.
#[derive(Debug, Clone)]
enum Mutation {
    Flip { at: usize, bits: u8 },
    Insert { at: usize, bytes: Vec<u8> },
    Delete { at: usize, len: usize },
    Truncate { at: usize },
    Repeat { at: usize, len: usize },
}

fn mutations() -> impl Strategy<Value = Vec<Mutation>> {
    let one = prop_oneof![
        (any::<usize>(), 1..=255u8).prop_map(|(at, bits)| Mutation::Flip { at, bits }),
        (
            any::<usize>(),
            prop_oneof![
                prop::collection::vec(any::<u8>(), 1..16),
                prop::sample::select(vec![
                    b"\n".to_vec(),
                    b"\r".to_vec(),
                    b"\n\n".to_vec(),
                    b"data: ".to_vec(),
                    b"event: error\n".to_vec(),
                    b"data: [DONE]\n\n".to_vec(),
                    b"\xff".to_vec(),
                    b"\xe2\x82".to_vec(),
                    b"{\"type\":\"message_stop\"}".to_vec(),
                ]),
            ]
        )
            .prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        (any::<usize>(), 1..64usize).prop_map(|(at, len)| Mutation::Delete { at, len }),
        any::<usize>().prop_map(|at| Mutation::Truncate { at }),
        (any::<usize>(), 1..64usize).prop_map(|(at, len)| Mutation::Repeat { at, len }),
    ];
    prop::collection::vec(one, 1..6)
}

fn mutate(bytes: &mut Vec<u8>, mutation: &Mutation) {
    let at = |at: usize, len: usize| if len == 0 { 0 } else { at % (len + 1) };
    match mutation {
        Mutation::Flip { at: i, bits } => {
            if !bytes.is_empty() {
                let i = i % bytes.len();
                bytes[i] ^= bits;
            }
        }
        Mutation::Insert { at: i, bytes: new } => {
            let i = at(*i, bytes.len());
            bytes.splice(i..i, new.iter().copied());
        }
        Mutation::Delete { at: i, len } => {
            let i = at(*i, bytes.len());
            let end = (i + len).min(bytes.len());
            bytes.drain(i..end);
        }
        Mutation::Truncate { at: i } => {
            let i = at(*i, bytes.len());
            bytes.truncate(i);
        }
        Mutation::Repeat { at: i, len } => {
            let i = at(*i, bytes.len());
            let end = (i + len).min(bytes.len());
            let copy = bytes[i..end].to_vec();
            bytes.splice(end..end, copy);
        }
    }
}

/// Lines that look like an event stream: field names, JSON pieces, event
/// types, terminators, comments.
fn sse_like() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop::sample::select(vec![
        "data: ",
        "data:",
        "event: ",
        "id: 7",
        "retry: 10",
        ": comment",
        "\n",
        "\r\n",
        "\r",
        "\n\n",
        "{",
        "}",
        "[",
        "]",
        ",",
        "\"type\":",
        "\"message_start\"",
        "\"content_block_start\"",
        "\"content_block_delta\"",
        "\"content_block_stop\"",
        "\"message_delta\"",
        "\"message_stop\"",
        "\"error\"",
        "\"index\":0",
        "\"index\":18446744073709551615",
        "\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}",
        "\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\"}",
        "\"choices\":[{\"delta\":{\"content\":\"x\"},\"finish_reason\":\"stop\"}]",
        "\"tool_calls\":[{\"index\":3,\"function\":{\"arguments\":\"{\"}}]",
        "\"usage\":{\"prompt_tokens\":-1}",
        "[DONE]",
        "null",
        "\u{feff}",
        "é",
    ]);
    prop::collection::vec(piece, 0..80).prop_map(|pieces| pieces.concat().into_bytes())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: CASES,
        // Failing cases are printed; no regression files in the source tree.
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// However a valid stream is split into reads, the completion and the
    /// stream events are those of reading it whole.
    #[test]
    fn chunking_never_changes_the_result(
        kind in kinds(),
        text in "\\PC{0,60}",
        thinking in prop::option::of("\\PC{1,30}"),
        call in prop::option::of("\\PC{0,30}"),
        pieces in 1..5usize,
        cuts in prop::collection::vec(any::<usize>(), 0..40),
    ) {
        let body = valid_body(kind, &text, thinking.as_deref(), call.as_deref(), pieces);
        let (whole, whole_events) = read_chunks(kind, vec![body.clone().into_bytes()]);
        let whole = whole.expect("a valid stream reads");
        prop_assert_eq!(whole.message.text(), text);
        let (split, split_events) = read_chunks(kind, chunked(body.as_bytes(), &cuts));
        let mut split = split.expect("a valid stream reads, however split");
        // The message's time is when it was read, which may be a second later.
        split.message.time.clone_from(&whole.message.time);
        prop_assert_eq!(split, whole);
        prop_assert_eq!(split_events, whole_events);
    }

    /// Arbitrary bytes in arbitrary reads: a completion or a clear error.
    #[test]
    fn random_bytes_give_a_clear_error(
        kind in kinds(),
        bytes in prop::collection::vec(any::<u8>(), 0..2048),
        cuts in prop::collection::vec(any::<usize>(), 0..16),
    ) {
        let (result, _) = read_chunks(kind, chunked(&bytes, &cuts));
        assert_clear(kind, &result);
    }

    /// Event-stream-looking input in arbitrary reads: a completion or a
    /// clear error.
    #[test]
    fn stream_like_input_gives_a_clear_error(
        kind in kinds(),
        bytes in sse_like(),
        cuts in prop::collection::vec(any::<usize>(), 0..16),
    ) {
        let (result, _) = read_chunks(kind, chunked(&bytes, &cuts));
        assert_clear(kind, &result);
    }

    /// A valid stream with bytes flipped, inserted, deleted, repeated or cut
    /// off: a completion or a clear error.
    #[test]
    fn mutated_streams_give_a_clear_error(
        kind in kinds(),
        text in "\\PC{0,40}",
        call in prop::option::of("\\PC{0,20}"),
        changes in mutations(),
        cuts in prop::collection::vec(any::<usize>(), 0..16),
    ) {
        let mut bytes = valid_body(kind, &text, None, call.as_deref(), 2).into_bytes();
        for change in &changes {
            mutate(&mut bytes, change);
        }
        let (result, _) = read_chunks(kind, chunked(&bytes, &cuts));
        assert_clear(kind, &result);
    }
}

#[test]
fn a_line_that_never_ends_is_refused_at_the_limit() {
    // 1 MiB reads of one endless data line, a few past the limit: the
    // reader must give up at the limit instead of buffering all of it.
    let read_size = 1 << 20;
    let reads = MAX_SSE_EVENT_BYTES / read_size + 4;
    let mut chunks = vec![b"data: ".to_vec()];
    chunks.extend((0..reads).map(|_| vec![b'a'; read_size]));
    for kind in [ProviderKind::Anthropic, ProviderKind::OpenAi] {
        let (result, _) = read_chunks(kind, chunks.clone());
        let Err(ProviderError::Stream { message, .. }) = result else {
            panic!("{kind:?}: accepted an endless line: {result:?}");
        };
        assert_eq!(
            message,
            format!(
                "invalid event stream: the event at line 1 is larger than {MAX_SSE_EVENT_BYTES} bytes"
            )
        );
    }
}

#[test]
fn invalid_utf8_names_the_line() {
    let mut bytes = anthropic::text("hello").body().into_bytes();
    let ping = bytes.windows(4).position(|w| w == b"ping").unwrap();
    bytes[ping + 1] = 0xff;
    let line = bytes[..ping].iter().filter(|&&b| b == b'\n').count() + 1;
    let (result, _) = read_chunks(ProviderKind::Anthropic, chunked(&bytes, &[7, 100, 333]));
    let Err(ProviderError::Stream { message, .. }) = result else {
        panic!("accepted invalid UTF-8: {result:?}");
    };
    assert_eq!(
        message,
        format!("invalid event stream: line {line} is not UTF-8")
    );
}

#[test]
fn a_broken_connection_is_reported_with_its_cause() {
    let body = openai::text("hello there").body().into_bytes();
    let chunks = vec![
        Ok(body[..40].to_vec()),
        Err(std::io::Error::other("connection reset by peer")),
        Ok(body[40..].to_vec()),
    ];
    let (result, _) = read(ProviderKind::OpenAi, chunks);
    let Err(ProviderError::Stream { provider, message }) = result else {
        panic!("a broken stream was accepted: {result:?}");
    };
    assert_eq!(provider, "openai");
    assert_eq!(message, "stream broken: connection reset by peer");
}

/// Text deltas are read straight into their fields, and any the direct read
/// refuses (a piece of another type, a duplicate field) the way every other
/// event is: both give the text the API sent, escapes undone.
#[test]
fn text_deltas_read_either_way_give_the_text_sent() {
    let events = [
        r#"{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"x","usage":{"input_tokens":1,"output_tokens":0}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"say \"hi\"\n\u00e9 "}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":7}}"#,
        r#"{"type":"content_block_delta","index":0,"extra":[1],"delta":{"type":"text_delta","text":"!","text":"?"}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"lost"}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}"#,
        r#"{"type":"message_stop"}"#,
    ];
    let body: String = events
        .iter()
        .map(|data| {
            let name = serde_json::from_str::<serde_json::Value>(data).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned();
            format!("event: {name}\ndata: {data}\n\n")
        })
        .collect();
    let (result, seen) = read_chunks(ProviderKind::Anthropic, vec![body.into_bytes()]);
    let completion = result.expect("a completion");
    assert_eq!(completion.message.text(), "say \"hi\"\né ?");
    let deltas: Vec<&str> = seen
        .iter()
        .filter_map(|event| match event {
            StreamEvent::TextDelta(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, ["say \"hi\"\né ", "", "?"]);
}
