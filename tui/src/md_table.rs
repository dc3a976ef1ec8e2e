//! Markdown tables laid out as aligned columns that fit the terminal width.

use pulldown_cmark::Alignment;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::wrap::{str_width, wrap_line};

/// Between two columns.
const SEPARATOR: &str = " │ ";
/// A column is not squeezed narrower than this (unless the terminal itself is narrower).
const MIN_COLUMN: usize = 3;

/// One cell: its styled inline content (a table cell is one line of markdown).
pub type Cell = Vec<Span<'static>>;

/// A table as parsed: column alignments, the header row and the body rows.
#[derive(Debug, Default)]
pub struct Table {
    pub aligns: Vec<Alignment>,
    pub head: Vec<Cell>,
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    /// The table's rows at `width` columns: cells padded to their column and aligned, columns
    /// separated by `│`, the header bold and underlined by `─┼─`. Columns too wide for the
    /// terminal share the room left and their cells wrap inside them.
    pub fn render(&self, width: usize) -> Vec<Line<'static>> {
        let cols = self
            .rows
            .iter()
            .map(Vec::len)
            .chain([self.head.len(), self.aligns.len()])
            .max()
            .unwrap_or(0);
        if cols == 0 {
            return Vec::new();
        }
        let natural: Vec<usize> = (0..cols)
            .map(|c| {
                std::iter::once(&self.head)
                    .chain(&self.rows)
                    .filter_map(|r| r.get(c))
                    .map(cell_width)
                    .max()
                    .unwrap_or(0)
                    .max(1)
            })
            .collect();
        let widths = fit(
            &natural,
            width.saturating_sub(str_width(SEPARATOR) * (cols - 1)),
        );
        let dim = Style::new().fg(Color::DarkGray);
        let bold = Style::new().add_modifier(Modifier::BOLD);
        let mut out = self.row_lines(&self.head, &widths, bold);
        let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
        out.push(Line::from(Span::styled(rule.join("─┼─"), dim)));
        for row in &self.rows {
            out.extend(self.row_lines(row, &widths, Style::new()));
        }
        out
    }

    /// One table row as terminal rows: each cell wrapped in its column, the row as tall as
    /// its tallest cell.
    fn row_lines(&self, row: &[Cell], widths: &[usize], style: Style) -> Vec<Line<'static>> {
        let empty = Cell::new();
        let wrapped: Vec<Vec<Line<'static>>> = widths
            .iter()
            .enumerate()
            .map(|(c, w)| {
                let cell = row.get(c).unwrap_or(&empty);
                let spans = cell.iter().map(|s| s.clone().patch_style(style));
                let w16 = u16::try_from(*w).unwrap_or(u16::MAX);
                wrap_line(&Line::from(spans.collect::<Vec<_>>()), w16, 0)
            })
            .collect();
        let height = wrapped.iter().map(Vec::len).max().unwrap_or(1);
        let sep = Style::new().fg(Color::DarkGray);
        (0..height)
            .map(|i| {
                let mut spans = Vec::new();
                for (c, lines) in wrapped.iter().enumerate() {
                    if c > 0 {
                        spans.push(Span::styled(SEPARATOR, sep));
                    }
                    let line = lines.get(i).cloned().unwrap_or_default();
                    let align = self.aligns.get(c).copied().unwrap_or(Alignment::None);
                    let last = c + 1 == wrapped.len();
                    spans.extend(pad(line, widths[c], align, last));
                }
                Line::from(spans)
            })
            .collect()
    }
}

fn cell_width(cell: &Cell) -> usize {
    cell.iter().map(|s| str_width(&s.content)).sum()
}

/// Column widths that fit `room`: narrow columns keep their natural width, the wide ones
/// share what is left evenly.
fn fit(natural: &[usize], room: usize) -> Vec<usize> {
    if natural.iter().sum::<usize>() <= room {
        return natural.to_vec();
    }
    let mut widths = vec![0; natural.len()];
    let mut order: Vec<usize> = (0..natural.len()).collect();
    order.sort_by_key(|&c| natural[c]);
    let mut left = room;
    for (i, &c) in order.iter().enumerate() {
        let share = left / (order.len() - i);
        let w = natural[c].min(share.max(MIN_COLUMN.min(natural[c])));
        widths[c] = w.max(1);
        left = left.saturating_sub(widths[c]);
    }
    widths
}

/// A cell's row padded to its column width; the last column gets no trailing padding unless
/// it is aligned right or centred.
fn pad(line: Line<'static>, width: usize, align: Alignment, last: bool) -> Vec<Span<'static>> {
    let used: usize = line.spans.iter().map(|s| str_width(&s.content)).sum();
    let gap = width.saturating_sub(used);
    let (before, after) = match align {
        Alignment::Right => (gap, 0),
        Alignment::Center => (gap / 2, gap - gap / 2),
        Alignment::Left | Alignment::None => (0, if last { 0 } else { gap }),
    };
    let mut spans = Vec::new();
    if before > 0 {
        spans.push(Span::raw(" ".repeat(before)));
    }
    spans.extend(line.spans);
    if after > 0 {
        spans.push(Span::raw(" ".repeat(after)));
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn columns_that_fit_keep_their_width_and_wide_ones_share_the_rest() {
        assert_eq!(fit(&[3, 4], 20), vec![3, 4]);
        assert_eq!(fit(&[3, 30, 30], 23), vec![3, 10, 10]);
        assert_eq!(fit(&[2, 50], 12), vec![2, 10]);
    }
}
