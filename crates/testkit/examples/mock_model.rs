//! The loopback model server on its own, for measuring zot by hand (RSS,
//! time) the way a user runs it. Prints its URL, then serves until killed.
//!
//! ```text
//! cargo run -p zot-testkit --example mock_model -- bash 'yes | head -c 200000000'
//! cargo run -p zot-testkit --example mock_model -- text-mb 20
//! zot --provider anthropic --api-key k --base-url URL --json -p go
//! ```
//!
//! `bash CMD`: the answer is one bash call running CMD, then "done".
//! `text-mb N`: the answer is N MB of text in a single SSE event, written
//! in 16 KiB pieces.
//! `tool NAME [ARGS_JSON]`: the answer is one call of tool NAME (arguments
//! `{}` unless given), then "done".
//! `tools N NAME`: the answer is N calls of tool NAME in one message, then "done".
//! `turns N NAME [ARGS_JSON]`: N answers of one call of tool NAME each (one
//! model turn per call), then "done".
//! `text TEXT`: the answer is TEXT.
//!
//! `--latency-ms N` before the script: each answer waits N ms first, as a
//! model takes time to its first token (0 unless given). Either way the
//! server's own work per answer does not grow with the conversation (see
//! `MockModel::start_for_bench`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write as _;
use std::time::Duration;

use zot_testkit::{MockModel, anthropic};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut latency = Duration::ZERO;
    if args.first().map(String::as_str) == Some("--latency-ms") {
        let ms = args
            .get(1)
            .and_then(|ms| ms.parse().ok())
            .unwrap_or_else(|| {
                eprintln!("--latency-ms takes a whole number of milliseconds");
                std::process::exit(2);
            });
        latency = Duration::from_millis(ms);
        args.drain(..2);
    }
    let responses = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["bash", command] => {
            let args = serde_json::json!({ "command": command }).to_string();
            vec![
                anthropic::tool_call("t1", "bash", &args),
                anthropic::text("done"),
            ]
        }
        ["tool", name] => vec![
            anthropic::tool_call("t1", name, "{}"),
            anthropic::text("done"),
        ],
        ["tool", name, args] => vec![
            anthropic::tool_call("t1", name, args),
            anthropic::text("done"),
        ],
        ["tools", count, name] => {
            let count: usize = count.parse().expect("a number of calls");
            let mut script = anthropic::Script::new();
            for i in 0..count {
                script = script.tool_call(&format!("t{i}"), name, "{}");
            }
            vec![script.build(), anthropic::text("done")]
        }
        ["turns", count, name, ref rest @ ..] if rest.len() <= 1 => {
            let count: usize = count.parse().expect("a number of turns");
            let args = rest.first().copied().unwrap_or("{}");
            let mut responses: Vec<_> = (0..count)
                .map(|i| anthropic::tool_call(&format!("t{i}"), name, args))
                .collect();
            responses.push(anthropic::text("done"));
            responses
        }
        ["text", text] => vec![anthropic::text(text)],
        ["text-mb", mb] => {
            let mb: usize = mb.parse().expect("a number of MB");
            let line = "0123456789 abcdefghijklmnopqrstuvwxyz \"quoted\" é\n";
            let text = line.repeat(mb * 1_000_000 / line.len() + 1);
            // In 16 KiB writes, as TLS records bring it.
            vec![
                anthropic::Script::new()
                    .pieces(1)
                    .text(&text)
                    .build()
                    .in_writes_of(16 * 1024),
            ]
        }
        _ => {
            eprintln!(
                "usage: mock_model [--latency-ms N] bash CMD | tool NAME [ARGS_JSON] | tools N NAME \
                 | turns N NAME [ARGS_JSON] | text TEXT | text-mb N"
            );
            std::process::exit(2);
        }
    };
    let model = MockModel::start_for_bench(responses, latency).await;
    println!("{}", model.url());
    std::io::stdout().flush().unwrap();
    std::future::pending::<()>().await;
}
