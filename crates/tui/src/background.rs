//! Whether the terminal's background is light or dark, so the default theme
//! stays readable on both. Asked at start-up with the OSC 11 query, followed
//! by the primary device attributes query (DA1) that every terminal answers:
//! a terminal that ignores OSC 11 costs no wait, and both answers are read
//! off the terminal before the TUI reads keys, so none reaches the editor.

use std::io::Write as _;
use std::os::fd::AsFd as _;
use std::time::{Duration, Instant};

/// How long start-up waits for the terminal's answers at most: a local
/// terminal answers within milliseconds and an ssh round trip is usually
/// well under this; one that answers nothing (an old console) delays
/// start-up by no more.
pub const BACKGROUND_TIMEOUT: Duration = Duration::from_millis(150);

/// Overrides [`BACKGROUND_TIMEOUT`] in milliseconds (a slow link, a
/// loaded machine running the tests), up to [`MAX_BACKGROUND_TIMEOUT`].
pub const TIMEOUT_ENV: &str = "ZOT_TERMINAL_TIMEOUT_MS";

/// The longest wait [`TIMEOUT_ENV`] may ask for: start-up stays prompt
/// even when it is set by mistake.
pub const MAX_BACKGROUND_TIMEOUT: Duration = Duration::from_secs(5);

/// The answers are a few dozen bytes; anything past this is not them.
const MAX_ANSWER_BYTES: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Background {
    Light,
    Dark,
}

/// Asks the terminal on stdin/stdout for its background colour. `None`
/// when it does not say (then `COLORFGBG`, set by some terminals, decides).
/// Needs stdin and stdout to be the terminal.
pub fn detect() -> Option<Background> {
    let asked = ask().and_then(|answer| parse_osc11(&answer)).map(of_rgb);
    asked.or_else(|| {
        std::env::var("COLORFGBG")
            .ok()
            .and_then(|v| from_colorfgbg(&v))
    })
}

/// Writes the queries and reads the answers, the terminal in raw mode
/// meanwhile (so nothing is echoed and no line waits for Enter).
fn ask() -> Option<Vec<u8>> {
    crossterm::terminal::enable_raw_mode().ok()?;
    let answer = query_and_read();
    let _ = crossterm::terminal::disable_raw_mode();
    answer
}

fn query_and_read() -> Option<Vec<u8>> {
    let mut out = std::io::stdout();
    out.write_all(b"\x1b]11;?\x1b\\\x1b[c").ok()?;
    out.flush().ok()?;
    let stdin = std::io::stdin();
    let fd = stdin.as_fd();
    let deadline = Instant::now() + timeout(std::env::var(TIMEOUT_ENV).ok().as_deref());
    let mut answer = Vec::new();
    let mut chunk = [0u8; 256];
    while !has_device_attributes(&answer) && answer.len() < MAX_ANSWER_BYTES {
        let left = deadline.saturating_duration_since(Instant::now());
        let millis = u16::try_from(left.as_millis()).unwrap_or(u16::MAX);
        if millis == 0 {
            break;
        }
        let mut fds = [nix::poll::PollFd::new(fd, nix::poll::PollFlags::POLLIN)];
        match nix::poll::poll(&mut fds, millis) {
            Ok(0) => break,
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => break,
        }
        match nix::unistd::read(fd, &mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => answer.extend_from_slice(&chunk[..n]),
        }
    }
    Some(answer)
}

/// The wait for the answers: [`TIMEOUT_ENV`]'s value when it is a number.
fn timeout(value: Option<&str>) -> Duration {
    value
        .and_then(|v| v.trim().parse().ok())
        .map_or(BACKGROUND_TIMEOUT, |ms| {
            Duration::from_millis(ms).min(MAX_BACKGROUND_TIMEOUT)
        })
}

/// Whether `bytes` hold a whole DA1 answer (`ESC [ ? … c`), the last of
/// the two: once it is in, so is any OSC 11 answer.
fn has_device_attributes(bytes: &[u8]) -> bool {
    let Some(start) = bytes.windows(3).position(|w| w == b"\x1b[?") else {
        return false;
    };
    bytes[start + 3..]
        .iter()
        .find(|b| !(b.is_ascii_digit() || **b == b';'))
        .is_some_and(|b| *b == b'c')
}

/// The colour in an OSC 11 answer (`ESC ] 11 ; rgb:RRRR/GGGG/BBBB`, ended
/// by BEL or ST; one to four hex digits a component; `rgba:` too), each
/// component from 0 to 1.
pub fn parse_osc11(bytes: &[u8]) -> Option<[f64; 3]> {
    let start = bytes.windows(4).position(|w| w == b"]11;")? + 4;
    let rest = &bytes[start..];
    let end = rest.iter().position(|b| matches!(b, 0x07 | 0x1b))?;
    let value = std::str::from_utf8(&rest[..end]).ok()?;
    let components = value
        .strip_prefix("rgb:")
        .or_else(|| value.strip_prefix("rgba:"))?;
    let mut parts = components.split('/');
    let mut rgb = [0.0; 3];
    for slot in &mut rgb {
        let hex = parts.next()?;
        if hex.is_empty() || hex.len() > 4 {
            return None;
        }
        let max = (1u32 << (4 * hex.len())) - 1;
        *slot = f64::from(u32::from_str_radix(hex, 16).ok()?) / f64::from(max);
    }
    Some(rgb)
}

/// Light when the colour's luma (Rec. 709 weights) is over half.
pub fn of_rgb([r, g, b]: [f64; 3]) -> Background {
    if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.5 {
        Background::Light
    } else {
        Background::Dark
    }
}

/// `COLORFGBG` (`fg;bg`, rxvt's and Konsole's): background colours 7 and
/// 15 are light, the other ANSI colours dark.
pub fn from_colorfgbg(value: &str) -> Option<Background> {
    let bg: u8 = value.rsplit(';').next()?.trim().parse().ok()?;
    Some(if matches!(bg, 7 | 15) {
        Background::Light
    } else {
        Background::Dark
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn osc11_answers_are_read_in_their_forms() {
        let white = b"\x1b]11;rgb:ffff/ffff/ffff\x1b\\\x1b[?62;22c";
        assert_eq!(parse_osc11(white), Some([1.0, 1.0, 1.0]));
        assert!(has_device_attributes(white));
        let dark = parse_osc11(b"\x1b]11;rgb:28/2c/34\x07").unwrap();
        assert!((dark[0] - 40.0 / 255.0).abs() < 1e-9);
        assert_eq!(parse_osc11(b"\x1b]11;rgba:f/f/f/f\x07"), Some([1.0; 3]));
        assert_eq!(
            parse_osc11(b"\x1b]11;rgb:fff/000/8\x07").map(|c| c[1]),
            Some(0.0)
        );
        for bad in [
            &b"\x1b]11;rgb:ffff/ffff\x07"[..],
            b"\x1b]11;rgb:fffff/0/0\x07",
            b"\x1b]11;rgb:zz/00/00\x07",
            b"\x1b]11;cmyk:1/2/3\x07",
            b"\x1b]11;rgb:ff/ff/ff",
            b"\x1b[?1;2c",
            b"",
        ] {
            assert_eq!(parse_osc11(bad), None, "{bad:?}");
        }
        assert!(!has_device_attributes(b"\x1b[?1;2"));
        assert!(!has_device_attributes(b"\x1b]11;rgb:0/0/0\x07"));
    }

    #[test]
    fn the_wait_can_be_set_within_bounds() {
        assert_eq!(timeout(None), BACKGROUND_TIMEOUT);
        assert_eq!(timeout(Some("400")), Duration::from_millis(400));
        assert_eq!(timeout(Some("999999")), MAX_BACKGROUND_TIMEOUT);
        assert_eq!(timeout(Some("soon")), BACKGROUND_TIMEOUT);
    }

    #[test]
    fn luma_decides_light_or_dark() {
        assert_eq!(of_rgb([1.0, 1.0, 1.0]), Background::Light);
        assert_eq!(of_rgb([0.0, 0.0, 0.0]), Background::Dark);
        // Solarized light's base3 and dark's base03.
        assert_eq!(of_rgb([0.992, 0.965, 0.890]), Background::Light);
        assert_eq!(of_rgb([0.0, 0.169, 0.212]), Background::Dark);
        // Pure blue is bright to the eye of a formula without weights only.
        assert_eq!(of_rgb([0.0, 0.0, 1.0]), Background::Dark);
        assert_eq!(of_rgb([0.0, 1.0, 0.0]), Background::Light);
    }

    #[test]
    fn colorfgbg_names_the_background_last() {
        assert_eq!(from_colorfgbg("0;15"), Some(Background::Light));
        assert_eq!(from_colorfgbg("15;default;0"), Some(Background::Dark));
        assert_eq!(from_colorfgbg("0;7"), Some(Background::Light));
        assert_eq!(from_colorfgbg("nonsense"), None);
    }
}
