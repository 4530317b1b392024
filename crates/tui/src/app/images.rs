//! Images in the editor: a pasted path of an image file (bracketed paste, as
//! a terminal sends a dropped file) and `zot -i FILE` become `[image N]`
//! chips; a prompt sends the images its chips name, after its text.

use std::path::PathBuf;

use zot_core::message::Block;

use super::{App, StatusKind};

impl App {
    /// Keeps an image for the prompt and returns its chip.
    pub(super) fn attach(&mut self, image: Block) -> String {
        self.images.push(image);
        chip(self.images.len())
    }

    /// A paste that is the path of an image file inserts its chip (or says
    /// why the file cannot be sent); `false` when the paste is text.
    pub(super) fn paste_image(&mut self, text: &str) -> bool {
        let Some(path) = pasted_image_path(text) else {
            return false;
        };
        match zot_core::image::load(&path) {
            Ok(image) => {
                let chip = self.attach(image);
                self.editor.paste(&format!("{chip} "));
            }
            Err(e) => self.set_status(e.to_string(), StatusKind::Error),
        }
        true
    }

    /// `zot "prompt"` and `zot -i FILE` at start-up: the prompt is sent as
    /// if typed, the images' chips after its text; images without a prompt
    /// wait as chips in the editor.
    pub fn start_up_prompt(&mut self) {
        let images = std::mem::take(&mut self.config.images);
        let chips: Vec<String> = images.into_iter().map(|i| self.attach(i)).collect();
        match self.config.prompt.clone() {
            Some(prompt) if chips.is_empty() => self.submit(&prompt),
            Some(prompt) => self.submit(&format!("{prompt} {}", chips.join(" "))),
            None if !chips.is_empty() => self.editor.paste(&format!("{} ", chips.join(" "))),
            None => {}
        }
    }

    /// The images whose chips `text` holds, in the order they were attached.
    pub(super) fn images_in(&self, text: &str) -> Vec<Block> {
        self.images
            .iter()
            .enumerate()
            .filter(|(i, _)| text.contains(&chip(i + 1)))
            .map(|(_, image)| image.clone())
            .collect()
    }
}

fn chip(n: usize) -> String {
    format!("[image {n}]")
}

/// The path a paste names when it is one existing file with an image's
/// extension: as typed, quoted, with backslash-escaped spaces or as a
/// `file://` URL (how terminals and file managers drop a file).
fn pasted_image_path(text: &str) -> Option<PathBuf> {
    let text = text.trim();
    if text.contains('\n') {
        return None;
    }
    let unquoted = ['\'', '"']
        .iter()
        .find_map(|q| text.strip_prefix(*q)?.strip_suffix(*q))
        .unwrap_or(text);
    let path = unquoted.strip_prefix("file://").unwrap_or(unquoted);
    let path = PathBuf::from(path.replace("\\ ", " "));
    (zot_core::image::has_image_extension(&path) && path.is_file()).then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pasted_path_is_an_image_only_when_it_is_one_image_file() {
        let dir = tempfile::tempdir().unwrap();
        let shot = dir.path().join("my shot.PNG");
        std::fs::write(&shot, b"x").unwrap();
        let plain = shot.display().to_string();
        assert_eq!(
            pasted_image_path(&format!(" {plain}\n")),
            Some(shot.clone())
        );
        assert_eq!(pasted_image_path(&format!("'{plain}'")), Some(shot.clone()));
        let escaped = plain.replace(' ', "\\ ");
        assert_eq!(pasted_image_path(&escaped), Some(shot.clone()));
        assert_eq!(pasted_image_path(&format!("file://{plain}")), Some(shot));
        // Text that mentions a path, a missing file, a text file: text.
        assert_eq!(pasted_image_path(&format!("look at {plain}")), None);
        assert_eq!(pasted_image_path("/no/such/shot.png"), None);
        let notes = dir.path().join("notes.txt");
        std::fs::write(&notes, b"x").unwrap();
        assert_eq!(pasted_image_path(&notes.display().to_string()), None);
        assert_eq!(pasted_image_path(&format!("{plain}\n{plain}")), None);
    }
}
