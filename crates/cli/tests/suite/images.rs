//! `-i/--image FILE`: images attached to the prompt of print and JSON modes
//! reach the model as image blocks; other types and big files are refused
//! before any request, naming the file.

use base64::Engine as _;
use zot_testkit::{MockModel, anthropic, openai};

use super::support::{Run, World};

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
            run.stderr.contains(&format!("image {file}: ")) && run.stderr.contains(says),
            "{file}: {run:?}"
        );
    }
    assert!(model.requests().is_empty());
}
