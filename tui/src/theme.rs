//! Dark and light palettes, and which one the terminal wants: `ui.theme`, or with `auto` the
//! terminal's background colour asked with OSC 11 (through tmux's passthrough inside tmux).
//!
//! The UI is drawn in the dark palette's colours; the light palette recolours each drawn
//! buffer, so no widget needs to know about themes.

use std::io::{self, Write};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use corvid_core::settings::UiTheme;
use ratatui::buffer::Buffer;
use ratatui::style::Color;

/// How long start-up waits for the terminal's background colour. A terminal that answers
/// the device-attributes query sent after it, but not OSC 11, is not waited for at all.
pub const BACKGROUND_TIMEOUT: Duration = Duration::from_millis(150);
/// The most bytes read while waiting for the answers.
const MAX_ANSWER: usize = 256;

/// The colours the UI is drawn with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Palette {
    Dark,
    Light,
}

impl Palette {
    /// The palette for `theme`; `auto` asks `detect` (which may not answer: dark then).
    pub fn choose(theme: UiTheme, detect: impl FnOnce() -> Option<Palette>) -> Self {
        match theme {
            UiTheme::Dark => Self::Dark,
            UiTheme::Light => Self::Light,
            UiTheme::Auto => detect().unwrap_or(Self::Dark),
        }
    }
}

/// Recolours a buffer drawn in the dark palette for `palette`.
pub fn recolor(buf: &mut Buffer, palette: Palette) {
    if palette == Palette::Dark {
        return;
    }
    for cell in &mut buf.content {
        cell.fg = light(cell.fg);
        cell.bg = light_bg(cell.bg);
    }
}

/// Light-background versions of the dark palette's text colours: darker, so they read on
/// white (yellow and cyan on white are barely visible).
fn light(color: Color) -> Color {
    match color {
        Color::DarkGray => Color::Rgb(0x5f, 0x5f, 0x5f),
        Color::Gray | Color::White => Color::Black,
        Color::Yellow | Color::LightYellow => Color::Rgb(0x8a, 0x5a, 0x00),
        Color::Cyan | Color::LightCyan => Color::Rgb(0x00, 0x5f, 0x87),
        Color::Green | Color::LightGreen => Color::Rgb(0x00, 0x7a, 0x00),
        Color::Red | Color::LightRed => Color::Rgb(0xaf, 0x00, 0x00),
        Color::Blue | Color::LightBlue => Color::Rgb(0x00, 0x3f, 0xaf),
        Color::Magenta | Color::LightMagenta => Color::Rgb(0x87, 0x00, 0x87),
        Color::Rgb(r, g, b) => darkened(r, g, b),
        other => other,
    }
}

/// A true colour chosen for a dark background (syntax highlighting's theme) made readable on
/// a light one: a pale colour keeps its hue and is darkened to a fixed luminance; a colour
/// already dark enough stays.
fn darkened(r: u8, g: u8, b: u8) -> Color {
    const TARGET: f64 = 0.35;
    let lum = (0.2126 * f64::from(r) + 0.7152 * f64::from(g) + 0.0722 * f64::from(b)) / 255.0;
    if lum <= TARGET + 0.15 {
        return Color::Rgb(r, g, b);
    }
    let scale = |c: u8| (f64::from(c) * TARGET / lum).round().clamp(0.0, 255.0) as u8;
    Color::Rgb(scale(r), scale(g), scale(b))
}

/// Light versions of background tints (diff lines): pale instead of dark.
fn light_bg(color: Color) -> Color {
    match color {
        Color::Rgb(r, g, b) if u16::from(r) + u16::from(g) + u16::from(b) < 3 * 0x60 => {
            // A dark tint keeps its hue, moved towards white.
            let pale = |c: u8| 0xff - (0xff - c) / 6;
            Color::Rgb(pale(r), pale(g), pale(b))
        }
        Color::DarkGray => Color::Rgb(0xe4, 0xe4, 0xe4),
        other => other,
    }
}

/// Asks the terminal for its background colour: writes OSC 11 and then a device-attributes
/// query (DA1) to `out`, and reads the answers from `input` (in raw mode) until the colour
/// comes, the DA1 answer comes first (the terminal does not know OSC 11), or `timeout`.
pub fn query_background(
    input: impl AsFd,
    out: &mut impl Write,
    in_tmux: bool,
    timeout: Duration,
) -> Option<Palette> {
    let osc11 = "\x1b]11;?\x07";
    let query = if in_tmux {
        // tmux passes a query to the outer terminal only wrapped, with its ESCs doubled.
        format!(
            "\x1bPtmux;{}\x1b\\\x1b[c",
            osc11.replace('\x1b', "\x1b\x1b")
        )
    } else {
        format!("{osc11}\x1b[c")
    };
    out.write_all(query.as_bytes())
        .and_then(|()| out.flush())
        .ok()?;
    let deadline = Instant::now() + timeout;
    let mut answer = Vec::new();
    let mut chunk = [0u8; 64];
    while answer.len() < MAX_ANSWER {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || !readable(&input, left).ok()? {
            return None;
        }
        let n = rustix::io::read(&input, &mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        answer.extend_from_slice(&chunk[..n]);
        match parse_answers(&answer) {
            Answer::Background(palette) => return Some(palette),
            Answer::NoColour => return None,
            Answer::Incomplete => {}
        }
    }
    None
}

fn readable(input: &impl AsFd, wait: Duration) -> io::Result<bool> {
    let timeout = rustix::event::Timespec {
        tv_sec: i64::try_from(wait.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: i64::from(wait.subsec_nanos()),
    };
    let mut fds = [rustix::event::PollFd::new(
        input,
        rustix::event::PollFlags::IN,
    )];
    Ok(rustix::event::poll(&mut fds, Some(&timeout))? > 0)
}

/// What the bytes read so far say.
#[derive(Debug, PartialEq)]
enum Answer {
    Background(Palette),
    /// The DA1 answer came without a colour before it.
    NoColour,
    Incomplete,
}

fn parse_answers(bytes: &[u8]) -> Answer {
    let text = String::from_utf8_lossy(bytes);
    if let Some(start) = text.find("\x1b]11;") {
        let rest = &text[start + 5..];
        if let Some(end) = rest.find(['\x07', '\x1b']) {
            return match luminance(&rest[..end]) {
                Some(l) if l > 0.5 => Answer::Background(Palette::Light),
                Some(_) => Answer::Background(Palette::Dark),
                None => Answer::NoColour,
            };
        }
        return Answer::Incomplete;
    }
    // DA1: ESC [ ? ... c
    match text.find("\x1b[?") {
        Some(start) if text[start..].contains('c') => Answer::NoColour,
        _ => Answer::Incomplete,
    }
}

/// The relative luminance of `rgb:RRRR/GGGG/BBBB` (1 to 4 hex digits a component), 0 to 1.
fn luminance(spec: &str) -> Option<f64> {
    let body = spec.strip_prefix("rgb:")?;
    let parts: Vec<f64> = body
        .split('/')
        .map(|hex| {
            let digits = hex.len();
            if digits == 0 || digits > 4 {
                return None;
            }
            let value = u32::from_str_radix(hex, 16).ok()?;
            Some(f64::from(value) / f64::from((1u32 << (4 * digits)) - 1))
        })
        .collect::<Option<_>>()?;
    match parts.as_slice() {
        [r, g, b] => Some(0.2126 * r + 0.7152 * g + 0.0722 * b),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::os::unix::net::UnixStream;

    #[test]
    fn pale_highlighting_colours_are_darkened_for_a_light_background_and_dark_ones_stay() {
        let luminance = |c: Color| match c {
            Color::Rgb(r, g, b) => {
                (0.2126 * f64::from(r) + 0.7152 * f64::from(g) + 0.0722 * f64::from(b)) / 255.0
            }
            other => panic!("not a true colour: {other:?}"),
        };
        // base16-ocean.dark's plain text and its yellow: near-invisible on white before.
        for pale in [Color::Rgb(0xc0, 0xc5, 0xce), Color::Rgb(0xeb, 0xcb, 0x8b)] {
            let shown = light(pale);
            assert!(luminance(shown) < 0.4, "{pale:?} became {shown:?}");
        }
        // A colour already dark enough is drawn as the theme chose it.
        assert_eq!(
            light(Color::Rgb(0xbf, 0x61, 0x6a)),
            Color::Rgb(0xbf, 0x61, 0x6a)
        );
    }

    #[test]
    fn a_white_background_answer_picks_the_light_palette_and_a_black_one_the_dark() {
        assert_eq!(
            parse_answers(b"\x1b]11;rgb:ffff/ffff/ffff\x1b\\"),
            Answer::Background(Palette::Light)
        );
        assert_eq!(
            parse_answers(b"\x1b]11;rgb:1e/1e/2e\x07\x1b[?62;22c"),
            Answer::Background(Palette::Dark)
        );
        assert_eq!(parse_answers(b"\x1b]11;rgb:ff"), Answer::Incomplete);
        assert_eq!(parse_answers(b"\x1b[?1;2c"), Answer::NoColour);
        assert_eq!(parse_answers(b"\x1b]11;garbage\x07"), Answer::NoColour);
    }

    #[test]
    fn the_query_goes_through_tmux_passthrough_inside_tmux() {
        let (terminal, ours) = UnixStream::pair().unwrap();
        let mut sent = Vec::new();
        {
            let mut t = &terminal;
            t.write_all(b"\x1b]11;rgb:ffff/fefe/f0f0\x1b\\").unwrap();
        }
        let palette = query_background(&ours, &mut sent, true, Duration::from_secs(5));
        assert_eq!(palette, Some(Palette::Light));
        assert_eq!(
            String::from_utf8(sent).unwrap(),
            "\x1bPtmux;\x1b\x1b]11;?\x07\x1b\\\x1b[c"
        );
    }

    #[test]
    fn a_terminal_that_answers_only_device_attributes_is_not_waited_for() {
        let (terminal, ours) = UnixStream::pair().unwrap();
        (&terminal).write_all(b"\x1b[?62;22c").unwrap();
        // A minute-long bound: returning at all proves the DA1 answer ended the wait.
        let palette = query_background(&ours, &mut Vec::new(), false, Duration::from_secs(60));
        assert_eq!(palette, None);
    }

    #[test]
    fn a_terminal_that_never_answers_gives_up_at_the_timeout_and_starts_dark() {
        let (_terminal, ours) = UnixStream::pair().unwrap();
        let palette = Palette::choose(UiTheme::Auto, || {
            query_background(&ours, &mut Vec::new(), false, BACKGROUND_TIMEOUT)
        });
        assert_eq!(palette, Palette::Dark);
    }

    #[test]
    fn an_explicit_theme_asks_the_terminal_nothing() {
        let asked = std::cell::Cell::new(false);
        let detect = || {
            asked.set(true);
            Some(Palette::Dark)
        };
        assert_eq!(Palette::choose(UiTheme::Light, detect), Palette::Light);
        assert!(!asked.get());
    }
}
