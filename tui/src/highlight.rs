//! Syntax highlighting of fenced code blocks (syntect, pure-Rust regex engine).

use std::sync::OnceLock;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, Theme, ThemeSet};
use syntect::parsing::SyntaxSet;

struct Assets {
    syntaxes: SyntaxSet,
    theme: Theme,
}

/// Loading the syntax and theme sets takes milliseconds: do it once, on first use.
fn assets() -> Option<&'static Assets> {
    static ASSETS: OnceLock<Option<Assets>> = OnceLock::new();
    ASSETS
        .get_or_init(|| {
            let syntaxes = SyntaxSet::load_defaults_newlines();
            let mut themes = ThemeSet::load_defaults();
            let theme = themes.themes.remove("base16-ocean.dark")?;
            Some(Assets { syntaxes, theme })
        })
        .as_ref()
}

/// Highlights `code` written in `lang` (a fence info string such as `rust` or `py`).
/// Unknown languages come back unstyled.
pub fn highlight_code(code: &str, lang: &str) -> Vec<Line<'static>> {
    let plain = || code.lines().map(|l| Line::from(l.to_string())).collect();
    let Some(assets) = assets() else {
        return plain();
    };
    let token = lang.split([',', ' ']).next().unwrap_or_default();
    let Some(syntax) = assets
        .syntaxes
        .find_syntax_by_token(token)
        .or_else(|| assets.syntaxes.find_syntax_by_extension(token))
    else {
        return plain();
    };
    let mut h = HighlightLines::new(syntax, &assets.theme);
    let mut out = Vec::new();
    for line in syntect::util::LinesWithEndings::from(code) {
        let Ok(ranges) = h.highlight_line(line, &assets.syntaxes) else {
            return plain();
        };
        let spans: Vec<Span<'static>> = ranges
            .into_iter()
            .map(|(style, text)| {
                let text = text.trim_end_matches(['\n', '\r']).to_string();
                Span::styled(text, convert(style))
            })
            .filter(|s| !s.content.is_empty())
            .collect();
        out.push(Line::from(spans));
    }
    out
}

fn convert(s: syntect::highlighting::Style) -> Style {
    let fg = s.foreground;
    let mut style = Style::new().fg(Color::Rgb(fg.r, fg.g, fg.b));
    if s.font_style.contains(FontStyle::BOLD) {
        style = style.add_modifier(Modifier::BOLD);
    }
    if s.font_style.contains(FontStyle::ITALIC) {
        style = style.add_modifier(Modifier::ITALIC);
    }
    style
}
