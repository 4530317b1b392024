//! Images the user attaches to a prompt (`-i FILE`, a pasted path in the
//! TUI): the file's type is read from its first bytes, only the types every
//! provider takes are sent, and the size is capped before the file is read.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use base64::Engine as _;

use crate::message::Block;

/// Largest image sent; provider APIs reject bigger ones (Anthropic at
/// 5 MB), and base64 makes the request a third larger still.
pub const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;

/// Why a file could not be attached; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    // Not `source`: the message says it already, and a chain of causes
    // (`{err:#}`) would say it twice.
    #[error("image {}: {error}", path.display())]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("image {}: not a regular file", path.display())]
    NotAFile { path: PathBuf },
    #[error("image {}: not a png, jpeg, gif or webp image (the types the models take)", path.display())]
    Format { path: PathBuf },
    #[error("image {}: {len} bytes is over the {MAX_IMAGE_BYTES}-byte (5 MiB) cap for images", path.display())]
    TooLarge { path: PathBuf, len: u64 },
}

/// The MIME type of an image by its signature, when it is one of the types
/// the providers accept.
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Whether `path` names an image file by its extension: how a pasted path
/// is told from pasted text before the file is read.
pub fn has_image_extension(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
        matches!(
            e.to_ascii_lowercase().as_str(),
            "png" | "jpg" | "jpeg" | "gif" | "webp"
        )
    })
}

/// Reads the image at `path` as an image block, refusing other types and
/// files over [`MAX_IMAGE_BYTES`].
pub fn load(path: &Path) -> Result<Block, ImageError> {
    let read = |error| ImageError::Read {
        path: path.to_owned(),
        error,
    };
    let file = std::fs::File::open(path).map_err(read)?;
    let metadata = file.metadata().map_err(read)?;
    if !metadata.is_file() {
        return Err(ImageError::NotAFile {
            path: path.to_owned(),
        });
    }
    let too_large = |len| ImageError::TooLarge {
        path: path.to_owned(),
        len,
    };
    if metadata.len() > MAX_IMAGE_BYTES {
        return Err(too_large(metadata.len()));
    }
    let mut bytes = Vec::new();
    file.take(MAX_IMAGE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read)?;
    // It grew since it was measured.
    if bytes.len() as u64 > MAX_IMAGE_BYTES {
        return Err(too_large(bytes.len() as u64));
    }
    let mime_type = sniff(&bytes).ok_or_else(|| ImageError::Format {
        path: path.to_owned(),
    })?;
    Ok(Block::Image {
        mime_type: mime_type.to_owned(),
        data: base64::engine::general_purpose::STANDARD.encode(bytes),
    })
}

/// An image sent as base64 (an RPC prompt's), checked as [`load`] checks a
/// file: an image a provider refuses would be kept in the session and make
/// every later request of it fail. Its type is read from its bytes.
pub fn from_base64(data: &str) -> Result<Block, String> {
    let data = data.trim();
    // Four base64 characters hold three bytes: larger cannot be under the cap.
    if data.len() as u64 > MAX_IMAGE_BYTES.div_ceil(3) * 4 + 4 {
        return Err(format!(
            "over the {MAX_IMAGE_BYTES}-byte (5 MiB) cap for images"
        ));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| format!("not base64 ({e})"))?;
    if bytes.len() as u64 > MAX_IMAGE_BYTES {
        return Err(format!(
            "{} bytes is over the {MAX_IMAGE_BYTES}-byte (5 MiB) cap for images",
            bytes.len()
        ));
    }
    let mime_type =
        sniff(&bytes).ok_or("not a png, jpeg, gif or webp image (the types the models take)")?;
    Ok(Block::Image {
        mime_type: mime_type.to_owned(),
        data: data.to_owned(),
    })
}

/// Reads every image of `paths` (`-i`), stopping at the first refused.
pub fn load_all(paths: &[PathBuf]) -> Result<Vec<Block>, ImageError> {
    paths.iter().map(|path| load(path)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_are_told_by_their_signature() {
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\nrest"), Some("image/png"));
        assert_eq!(sniff(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(sniff(b"GIF89a.."), Some("image/gif"));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(sniff(b"RIFF\0\0\0\0WAVEfmt "), None);
        assert_eq!(sniff(b"BM6\0\0\0"), None);
        assert_eq!(sniff(b""), None);
    }

    #[test]
    fn base64_images_are_checked_as_sent() {
        let gif = base64::engine::general_purpose::STANDARD.encode(b"GIF89a..");
        let block = from_base64(&format!(" {gif}\n")).unwrap();
        assert_eq!(
            block,
            Block::Image {
                mime_type: "image/gif".into(),
                data: gif
            }
        );
        assert!(from_base64("R0lG!").unwrap_err().starts_with("not base64"));
    }

    #[test]
    fn image_extensions_are_recognised_in_any_case() {
        assert!(has_image_extension(Path::new("/tmp/Shot.PNG")));
        assert!(has_image_extension(Path::new("a.jpeg")));
        assert!(!has_image_extension(Path::new("notes.txt")));
        assert!(!has_image_extension(Path::new("png")));
    }

    #[test]
    fn load_refuses_other_types_and_big_files_naming_them() {
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("notes.png");
        std::fs::write(&text, "not an image").unwrap();
        let e = load(&text).unwrap_err().to_string();
        assert!(e.contains("notes.png") && e.contains("not a png"), "{e}");

        let big = dir.path().join("big.png");
        let file = std::fs::File::create(&big).unwrap();
        file.set_len(MAX_IMAGE_BYTES + 1).unwrap();
        let e = load(&big).unwrap_err().to_string();
        assert!(e.contains("big.png") && e.contains("5 MiB"), "{e}");

        let e = load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
    }
}
