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

/// How much highlighting one code block may cost, as the sum of its lines' squared lengths in
/// bytes. syntect's work grows with the square of a line's longest token (a 2,000-byte
/// identifier took seconds), so a hostile answer with one long line could freeze the UI; this
/// budget allows one 1,024-byte line, or 160 lines of 80 columns, and shows bigger blocks plain.
const HIGHLIGHT_BUDGET: usize = 1 << 20;

/// Whether `code` is small enough to highlight within [`HIGHLIGHT_BUDGET`].
fn within_budget(code: &str) -> bool {
    let mut cost = 0usize;
    code.lines().all(|l| {
        cost = cost.saturating_add(l.len().saturating_mul(l.len()));
        cost <= HIGHLIGHT_BUDGET
    })
}

/// Highlights `code` written in `lang` (a fence info string such as `rust` or `py`).
/// Unknown languages, and blocks over the highlighting budget, come back unstyled.
pub fn highlight_code(code: &str, lang: &str) -> Vec<Line<'static>> {
    let plain = || code.lines().map(|l| Line::from(l.to_string())).collect();
    if !within_budget(code) {
        return plain();
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn styled(lines: &[Line<'static>]) -> bool {
        lines
            .iter()
            .flat_map(|l| &l.spans)
            .any(|s| s.style.fg.is_some())
    }

    #[test]
    fn a_block_within_the_budget_is_highlighted() {
        let code = "fn main() {\n    let x = 1;\n}\n".repeat(40);
        assert!(styled(&highlight_code(&code, "rust")));
    }

    #[test]
    fn a_block_with_one_huge_line_is_shown_plain_with_its_text_intact() {
        // 1,029 bytes squared is over the budget: never handed to syntect.
        let code = format!("let {} = 1;\n", "a".repeat(1020));
        assert!(!within_budget(&code));
        let lines = highlight_code(&code, "rust");
        assert!(!styled(&lines));
        assert_eq!(lines, vec![Line::from(code.trim_end().to_string())]);
    }

    #[test]
    fn many_short_lines_add_up_to_the_budget_too() {
        let line = "x".repeat(79) + "\n";
        assert!(within_budget(&line.repeat(160)));
        assert!(!within_budget(&line.repeat(200)));
    }
}
