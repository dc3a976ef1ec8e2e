//! Word wrapping of styled lines at a fixed width.
//!
//! `insert_before` needs the row count up front, so cells are wrapped here, once, at the
//! current width; the terminal never has to wrap anything itself.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// Wraps `line` at `width` columns; continuation rows start with `indent` spaces.
pub fn wrap_line(line: &Line<'static>, width: u16, indent: u16) -> Vec<Line<'static>> {
    let width = usize::from(width.max(1));
    let indent = usize::from(indent).min(width.saturating_sub(1));
    let cells: Vec<(char, Style)> = line
        .spans
        .iter()
        .flat_map(|s| {
            let style = line.style.patch(s.style);
            s.content.chars().map(move |c| (c, style))
        })
        .filter(|(c, _)| *c != '\n' && *c != '\r')
        .collect();

    let mut rows: Vec<Vec<(char, Style)>> = vec![Vec::new()];
    let mut row_width = 0usize;
    let mut i = 0;
    while i < cells.len() {
        let is_space = cells[i].0 == ' ';
        let mut j = i;
        while j < cells.len() && (cells[j].0 == ' ') == is_space {
            j += 1;
        }
        let token = &cells[i..j];
        let token_width: usize = token.iter().map(|(c, _)| char_width(*c)).sum();
        if is_space {
            // Spaces at a break are dropped; elsewhere kept as typed.
            if row_width + token_width <= width {
                extend(&mut rows, &mut row_width, token);
            } else {
                new_row(&mut rows, &mut row_width, indent);
            }
        } else if row_width + token_width <= width {
            extend(&mut rows, &mut row_width, token);
        } else if token_width <= width - indent && row_width > indent {
            trim_trailing_spaces(&mut rows, &mut row_width);
            new_row(&mut rows, &mut row_width, indent);
            extend(&mut rows, &mut row_width, token);
        } else {
            for cell in token {
                let w = char_width(cell.0);
                if row_width + w > width && row_width > 0 {
                    new_row(&mut rows, &mut row_width, indent);
                }
                extend(&mut rows, &mut row_width, std::slice::from_ref(cell));
            }
        }
        i = j;
    }
    rows.into_iter()
        .map(|cells| to_line(cells, line.style))
        .collect()
}

/// Wraps every line of `lines` (no continuation indent).
pub fn wrap_lines(lines: &[Line<'static>], width: u16) -> Vec<Line<'static>> {
    lines.iter().flat_map(|l| wrap_line(l, width, 0)).collect()
}

/// The display width of a string, as the wrapper counts it.
pub fn str_width(s: &str) -> usize {
    s.chars().map(char_width).sum()
}

/// Cuts `s` to at most `max` columns, ending in `…` when something was cut.
pub fn truncate(s: &str, max: usize) -> String {
    if str_width(s) <= max {
        return s.to_string();
    }
    let mut out = String::new();
    let mut w = 0;
    for c in s.chars() {
        let cw = char_width(c);
        if w + cw + 1 > max {
            break;
        }
        out.push(c);
        w += cw;
    }
    out.push('…');
    out
}

/// `s` without control characters (escape sequences lose their ESC and are shown as text),
/// for names a server or a model chose: model ids, session titles.
pub fn printable(s: &str) -> String {
    s.chars().filter(|c| !c.is_control()).collect()
}

fn char_width(c: char) -> usize {
    if c == '\t' { 4 } else { c.width().unwrap_or(0) }
}

fn extend(rows: &mut [Vec<(char, Style)>], row_width: &mut usize, token: &[(char, Style)]) {
    if let Some(row) = rows.last_mut() {
        for (c, s) in token {
            // Tabs become spaces so the width we counted is the width the terminal draws.
            if *c == '\t' {
                row.extend(std::iter::repeat_n((' ', *s), 4));
            } else {
                row.push((*c, *s));
            }
            *row_width += char_width(*c);
        }
    }
}

fn new_row(rows: &mut Vec<Vec<(char, Style)>>, row_width: &mut usize, indent: usize) {
    rows.push(vec![(' ', Style::default()); indent]);
    *row_width = indent;
}

fn trim_trailing_spaces(rows: &mut [Vec<(char, Style)>], row_width: &mut usize) {
    if let Some(row) = rows.last_mut() {
        while row.last().is_some_and(|(c, _)| *c == ' ') && *row_width > 0 {
            row.pop();
            *row_width -= 1;
        }
    }
}

fn to_line(cells: Vec<(char, Style)>, line_style: Style) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut text = String::new();
    let mut current: Option<Style> = None;
    for (c, s) in cells {
        if current.is_some_and(|cur| cur != s) {
            spans.push(Span::styled(
                std::mem::take(&mut text),
                current.unwrap_or_default(),
            ));
        }
        current = Some(s);
        text.push(c);
    }
    if !text.is_empty() {
        spans.push(Span::styled(text, current.unwrap_or_default()));
    }
    Line::from(spans).style(line_style)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn texts(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn words_move_to_the_next_row_instead_of_being_split() {
        let l = Line::from("alpha beta gamma delta");
        assert_eq!(
            texts(&wrap_line(&l, 11, 0)),
            vec!["alpha beta", "gamma delta"]
        );
    }

    #[test]
    fn an_overlong_word_is_cut_hard_and_continuations_get_the_indent() {
        let l = Line::from("- abcdefghijkl");
        assert_eq!(
            texts(&wrap_line(&l, 6, 2)),
            vec!["- abcd", "  efgh", "  ijkl"]
        );
    }

    #[test]
    fn wide_characters_count_two_columns() {
        let l = Line::from("漢字かな");
        assert_eq!(texts(&wrap_line(&l, 5, 0)), vec!["漢字", "かな"]);
    }

    #[test]
    fn truncation_marks_the_cut_with_an_ellipsis() {
        assert_eq!(truncate("hello world", 6), "hello…");
        assert_eq!(truncate("short", 6), "short");
    }
}
