//! Images attached to a prompt reach the model as image blocks: `-i FILE`
//! in print, JSON and TUI start-up, and a pasted image path in the TUI
//! (an `[image N]` chip); other types and big files are refused, naming the
//! file, before any request.

use base64::Engine as _;
use zot_testkit::{MockModel, anthropic, openai};

use super::support::{Event, Run, World, typed_events};
use super::tui::Tmux;

/// A 1×1 PNG's bytes (signature, IHDR, IDAT, IEND).
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89\0\0\0\rIDATx\x9cc\xf8\x0f\0\0\x01\x01\0\x05\x18\xd8N\0\0\0\0IEND\xaeB`\x82";
/// The start of a JPEG (SOI and an APP0 marker) is what zot reads its type by.
const JPEG: &[u8] = b"\xff\xd8\xff\xe0\0\x10JFIF\0\x01\x01\0\0\x01\0\x01\0\0\xff\xd9";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[tokio::test(flavor = "multi_thread")]
async fn print_mode_sends_each_image_after_the_text() {
    let w = World::new();
    std::fs::write(w.project.join("shot.png"), PNG).unwrap();
    // Named by its extension as something else: the bytes decide the type.
    std::fs::write(w.project.join("photo.webp.jpg"), JPEG).unwrap();
    let model = MockModel::start([anthropic::text("a red dot")]).await;
    let run: Run = w
        .against(
            &model,
            "anthropic",
            &[
                "-p",
                "-i",
                "shot.png",
                "--image",
                "photo.webp.jpg",
                "what is this",
            ],
        )
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout.trim(), "a red dot");
    let body = &model.requests()[0].body;
    let content = &body["messages"][0]["content"];
    assert_eq!(content[0]["text"], "what is this", "{content}");
    assert_eq!(content[1]["type"], "image");
    assert_eq!(content[1]["source"]["media_type"], "image/png");
    assert_eq!(content[1]["source"]["data"], b64(PNG));
    assert_eq!(content[2]["source"]["media_type"], "image/jpeg");
    assert_eq!(content[2]["source"]["data"], b64(JPEG));
    assert_eq!(content.as_array().map(Vec::len), Some(3), "{content}");
}

#[tokio::test(flavor = "multi_thread")]
async fn json_mode_sends_an_image_alone_to_an_openai_model() {
    let w = World::new();
    let shot = w.project.join("shot.png");
    std::fs::write(&shot, PNG).unwrap();
    let model = MockModel::start([openai::text("a dot")]).await;
    // No prompt text and nothing on stdin: the image is the prompt.
    let run: Run = w
        .against(
            &model,
            "openai",
            &["--json", "--api", "chat", "-i", shot.to_str().unwrap()],
        )
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    let body = &model.requests()[0].body;
    let user = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap();
    assert_eq!(
        user["content"],
        serde_json::json!([{"type": "image_url", "image_url": {
            "url": format!("data:image/png;base64,{}", b64(PNG))
        }}]),
        "{user}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_images_are_refused_naming_the_file_before_any_request() {
    let w = World::new();
    std::fs::write(w.project.join("notes.png"), "just text").unwrap();
    std::fs::write(w.project.join("pic.bmp"), b"BM6\0\0\0\0\0").unwrap();
    std::fs::File::create(w.project.join("huge.png"))
        .unwrap()
        .set_len(5 * 1024 * 1024 + 1)
        .unwrap();
    let model = MockModel::start([]).await;
    for (file, says) in [
        ("notes.png", "not a png, jpeg, gif or webp image"),
        ("pic.bmp", "not a png, jpeg, gif or webp image"),
        (
            "huge.png",
            "5242881 bytes is over the 5242880-byte (5 MiB) cap",
        ),
        ("gone.png", "No such file"),
    ] {
        let run: Run = w
            .against(&model, "anthropic", &["-p", "-i", file, "look"])
            .output()
            .unwrap()
            .into();
        assert_eq!(run.code, 1, "{file}: {run:?}");
        assert!(
            run.stderr.contains(&format!("image {file}: "))
                && run.stderr.matches(says).count() == 1,
            "{file}: {run:?}"
        );
    }
    // In JSON mode the reason is the stream's line too.
    let run: Run = w
        .against(&model, "anthropic", &["--json", "-i", "gone.png", "look"])
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        matches!(typed_events(&run).as_slice(),
            [Event::Error { message }] if message.starts_with("image gone.png: No such file")),
        "{run:?}"
    );
    assert!(model.requests().is_empty());
}

/// An RPC prompt's images are checked as `-i` checks files: one a provider
/// would refuse is refused at once, naming it (kept in the session, it made
/// every later request fail); a good one is sent as the type its bytes say.
#[tokio::test(flavor = "multi_thread")]
async fn rpc_prompt_images_are_checked_before_they_join_the_conversation() {
    let w = World::new();
    let model = MockModel::start([anthropic::text("a red dot")]).await;
    let mut rpc = super::rpc::Rpc::start(&w, &model, "anthropic", &[], None);
    let svg = b64(b"<svg/>");
    let big = b64(&vec![0; 5 * 1024 * 1024 + 1]);
    for (mime, data, says) in [
        (
            "image/svg+xml",
            svg.as_str(),
            "images[0] (image/svg+xml): not a png, jpeg, gif or webp image",
        ),
        (
            "image/png",
            "not base64!",
            "images[0] (image/png): not base64",
        ),
        (
            "image/png",
            big.as_str(),
            "images[0] (image/png): 5242881 bytes is over the 5242880-byte (5 MiB) cap",
        ),
    ] {
        let prompt = serde_json::json!({"type": "prompt", "message": "see",
            "images": [{"mime_type": mime, "data": data}]});
        rpc.send(&prompt.to_string());
        let response = rpc.response("prompt");
        assert_eq!(response["success"], false, "{response}");
        let error = response["error"].as_str().unwrap();
        assert!(error.starts_with(says), "{error}");
    }
    let prompt = serde_json::json!({"type": "prompt", "message": "see",
        "images": [{"mime_type": "image/jpeg", "data": b64(PNG)}]});
    rpc.send(&prompt.to_string());
    assert_eq!(rpc.response("prompt")["success"], true);
    rpc.done();
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let content = &requests[0].body["messages"][0]["content"];
    assert_eq!(content[1]["source"]["media_type"], "image/png", "{content}");
    assert_eq!(content[1]["source"]["data"], b64(PNG));
    assert_eq!(rpc.close(), 0);
}

/// Puts `text` in tmux's buffer and pastes it as a terminal does a dropped
/// file (bracketed paste).
fn paste(tmux: &Tmux, w: &World, text: &str) {
    let file = w.scratch.join("paste.txt");
    std::fs::write(&file, text).unwrap();
    tmux.command(&["load-buffer", "-b", "p", file.to_str().unwrap()]);
    tmux.command(&["paste-buffer", "-p", "-b", "p"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pasted_image_path_becomes_a_chip_sent_as_an_image_block() {
    let w = World::new();
    let shot = w.project.join("screen shot.png");
    std::fs::write(&shot, PNG).unwrap();
    std::fs::write(w.project.join("notes.png"), "just text").unwrap();
    let model = MockModel::start([anthropic::text("a dot it is")]).await;
    let tmux = Tmux::against(&w, "image-paste", &model, &[]);
    tmux.wait_for("anthropic/claude-sonnet-5-5");

    // Not an image: said on the status line, nothing inserted.
    paste(&tmux, &w, "notes.png");
    let screen = tmux.wait_for("image notes.png: not a png");
    assert!(!screen.contains("[image"), "{screen}");

    // Dropped as the terminal quotes it, with a trailing newline.
    paste(&tmux, &w, &format!("'{}'\n", shot.display()));
    tmux.wait_for("[image 1]");
    tmux.type_text("what is this?");
    tmux.keys(&["Enter"]);
    tmux.wait_for("a dot it is");
    let content = &model.requests()[0].body["messages"][0]["content"];
    assert_eq!(content[0]["text"], "[image 1] what is this?", "{content}");
    assert_eq!(content[1]["source"]["media_type"], "image/png", "{content}");
    assert_eq!(content[1]["source"]["data"], b64(PNG), "{content}");
    assert_eq!(content.as_array().map(Vec::len), Some(2), "{content}");
    tmux.type_text("/exit");
    tmux.keys(&["Enter"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn tui_start_up_sends_the_images_with_the_prompt() {
    let w = World::new();
    std::fs::write(w.project.join("shot.png"), PNG).unwrap();
    let model = MockModel::start([anthropic::text("seen at start")]).await;
    let tmux = Tmux::against(&w, "image-start", &model, &["-i", "shot.png", "describe"]);
    let screen = tmux.wait_for("seen at start");
    assert!(screen.contains("describe [image 1]"), "{screen}");
    let content = &model.requests()[0].body["messages"][0]["content"];
    assert_eq!(content[0]["text"], "describe [image 1]", "{content}");
    assert_eq!(content[1]["source"]["data"], b64(PNG), "{content}");
    tmux.type_text("/exit");
    tmux.keys(&["Enter"]);
}
