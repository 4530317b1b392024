//! Colours. The built-in dark (default) and light themes, picked by the
//! terminal's background unless the config names one, and `theme.json` from
//! a theme-only extension bundle (schema in docs/themes.md): any subset of
//! the colour slots, each a `#rrggbb` string or a named terminal colour.

use std::path::Path;

use ratatui::style::Color;
use serde::Deserialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    pub accent: Color,
    pub user: Color,
    pub assistant: Color,
    pub muted: Color,
    pub error: Color,
    pub warn: Color,
    pub success: Color,
    pub border: Color,
    pub code: Color,
    pub tool: Color,
    /// The syntect theme code blocks are highlighted with.
    pub highlight: &'static str,
}

impl Default for Theme {
    fn default() -> Self {
        Self {
            accent: Color::Cyan,
            user: Color::LightBlue,
            assistant: Color::Reset,
            muted: Color::DarkGray,
            error: Color::Red,
            warn: Color::Yellow,
            success: Color::Green,
            border: Color::DarkGray,
            code: Color::LightYellow,
            tool: Color::Magenta,
            highlight: "base16-ocean.dark",
        }
    }
}

impl Theme {
    /// For a light background: darker colours, each readable on white
    /// (the terminal's bright colours, the dark theme's, are not).
    pub fn light() -> Self {
        Self {
            accent: Color::Rgb(0x00, 0x5f, 0x87),
            user: Color::Rgb(0x1f, 0x4e, 0xa8),
            assistant: Color::Reset,
            muted: Color::Rgb(0x6e, 0x6e, 0x6e),
            error: Color::Rgb(0xb3, 0x1d, 0x28),
            warn: Color::Rgb(0x8a, 0x5a, 0x00),
            success: Color::Rgb(0x1a, 0x7f, 0x37),
            border: Color::Rgb(0x9a, 0x9a, 0x9a),
            code: Color::Rgb(0x95, 0x38, 0x00),
            tool: Color::Rgb(0x8a, 0x2b, 0x9e),
            highlight: "InspiredGitHub",
        }
    }

    /// The built-in theme called `name` in the config (`light`, `dark`).
    pub fn builtin(name: &str) -> Option<Self> {
        match name {
            "light" => Some(Self::light()),
            "dark" => Some(Self::default()),
            _ => None,
        }
    }

    /// The built-in theme for the terminal's background (dark when it
    /// does not say).
    pub fn for_terminal() -> Self {
        match crate::background::detect() {
            Some(crate::background::Background::Light) => Self::light(),
            _ => Self::default(),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
struct ThemeFile {
    #[serde(default)]
    colors: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ThemeError {
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

impl Theme {
    /// Loads `theme.json`; unknown slots and bad colours are errors naming them.
    pub fn load(path: &Path) -> Result<Self, ThemeError> {
        let invalid = |message: String| ThemeError::Invalid {
            path: path.display().to_string(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| invalid(e.to_string()))?;
        let file: ThemeFile =
            serde_json::from_str(&text).map_err(|e| invalid(format!("invalid JSON: {e}")))?;
        let mut theme = Self::default();
        for (slot, value) in &file.colors {
            let color = parse_color(value)
                .ok_or_else(|| invalid(format!("colors.{slot}: not a colour: {value:?}")))?;
            let target = match slot.as_str() {
                "accent" => &mut theme.accent,
                "user" => &mut theme.user,
                "assistant" => &mut theme.assistant,
                "muted" => &mut theme.muted,
                "error" => &mut theme.error,
                "warn" => &mut theme.warn,
                "success" => &mut theme.success,
                "border" => &mut theme.border,
                "code" => &mut theme.code,
                "tool" => &mut theme.tool,
                other => return Err(invalid(format!("colors.{other}: unknown colour slot"))),
            };
            *target = color;
        }
        Ok(theme)
    }
}

fn parse_color(value: &str) -> Option<Color> {
    if let Some(hex) = value.strip_prefix('#') {
        if hex.len() != 6 {
            return None;
        }
        let byte = |i: usize| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok();
        return Some(Color::Rgb(byte(0)?, byte(2)?, byte(4)?));
    }
    value.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<Theme, ThemeError> {
        let dir =
            std::env::temp_dir().join(format!("zot-theme-{}-{}", std::process::id(), text.len()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("theme.json");
        std::fs::write(&path, text).unwrap();
        let theme = Theme::load(&path);
        std::fs::remove_dir_all(&dir).unwrap();
        theme
    }

    #[test]
    fn colours_override_slots() {
        let theme =
            load(r##"{"name":"dusk","colors":{"accent":"#ff8800","error":"lightred"}}"##).unwrap();
        assert_eq!(theme.accent, Color::Rgb(0xff, 0x88, 0x00));
        assert_eq!(theme.error, Color::LightRed);
        assert_eq!(theme.user, Theme::default().user);
    }

    #[test]
    fn bad_themes_name_the_problem() {
        let err = load(r##"{"colors":{"accent":"#ff88"}}"##)
            .unwrap_err()
            .to_string();
        assert!(err.contains("colors.accent: not a colour"), "{err}");
        let err = load(r##"{"colors":{"sparkle":"red"}}"##)
            .unwrap_err()
            .to_string();
        assert!(err.contains("colors.sparkle: unknown colour slot"), "{err}");
        let err = load("{oops").unwrap_err().to_string();
        assert!(err.contains("invalid JSON"), "{err}");
    }
}
