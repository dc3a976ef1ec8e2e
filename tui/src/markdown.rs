//! Markdown (assistant text) to styled lines, and where a streaming text's finished blocks end.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::highlight::highlight_code;
use crate::md_table::{Cell, Table};
use crate::wrap::{str_width, wrap_line};

/// One logical output line and the indent its wrapped continuation rows get.
#[derive(Debug, Clone, PartialEq)]
pub struct MdLine {
    pub line: Line<'static>,
    pub indent: u16,
}

/// Renders markdown and wraps it at `width`.
pub fn render_wrapped(src: &str, width: u16) -> Vec<Line<'static>> {
    render(src, width)
        .iter()
        .flat_map(|l| wrap_line(&l.line, width, l.indent))
        .collect()
}

/// Renders markdown into logical lines (not yet wrapped); tables are laid out to fit `width`.
pub fn render(src: &str, width: u16) -> Vec<MdLine> {
    let mut r = Renderer {
        width: usize::from(width),
        ..Renderer::default()
    };
    let opts = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS | Options::ENABLE_TABLES;
    for ev in Parser::new_ext(src, opts) {
        r.event(ev);
    }
    r.flush();
    while r.out.last().is_some_and(|l| l.line.spans.is_empty()) {
        r.out.pop();
    }
    r.out
}

/// The byte length of the prefix of `buf` made of finished blocks: everything up to the last
/// blank line outside a code fence, or up to a closing fence. The rest may still change.
pub fn finished_prefix_len(buf: &str) -> usize {
    let mut fence: Option<(char, usize)> = None;
    let mut end = 0;
    let mut pos = 0;
    for line in buf.split_inclusive('\n') {
        let line_end = pos + line.len();
        if !line.ends_with('\n') {
            break;
        }
        let trimmed = line.trim_start_matches(' ');
        let lead = line.len() - trimmed.len();
        let marker = trimmed.chars().next().filter(|c| *c == '`' || *c == '~');
        let run = marker.map_or(0, |m| trimmed.chars().take_while(|c| *c == m).count());
        match (fence, marker) {
            (None, Some(m)) if lead <= 3 && run >= 3 => fence = Some((m, run)),
            (Some((fm, frun)), Some(m))
                if m == fm && run >= frun && trimmed[run..].trim().is_empty() =>
            {
                fence = None;
                end = line_end;
            }
            (None, _) if line.trim().is_empty() => end = line_end,
            _ => {}
        }
        pos = line_end;
    }
    end
}

#[derive(Default)]
struct Renderer {
    out: Vec<MdLine>,
    spans: Vec<Span<'static>>,
    /// The open inline styles, each already patched onto the ones outside it, so the current
    /// style is the last one: folding the whole stack for every text event made a deeply
    /// nested answer (`*a *a *a … a* a* a*`) quadratic.
    styles: Vec<Style>,
    lists: Vec<Option<u64>>,
    /// Per open list: the column where its current item's text starts.
    item_cols: Vec<usize>,
    item_marker: Option<String>,
    quote: usize,
    code: Option<(String, String)>,
    /// The open link's destination and the index in `spans` where its text starts.
    link: Option<(String, usize)>,
    blank_before_next: bool,
    width: usize,
    /// Extra continuation indent of the code line being flushed (its own leading spaces).
    code_indent: usize,
    /// The table being read, and the cells of its current row.
    table: Option<Table>,
    row: Vec<Cell>,
}

impl Renderer {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_style(&mut self, s: Style) {
        self.styles.push(self.style().patch(s));
    }

    fn event(&mut self, ev: Event<'_>) {
        match ev {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => {
                if let Some((_, code)) = self.code.as_mut() {
                    code.push_str(&t);
                } else {
                    let s = self.style();
                    self.spans.push(Span::styled(t.into_string(), s));
                }
            }
            Event::Code(t) => {
                let s = self.style().fg(Color::Cyan);
                self.spans.push(Span::styled(t.into_string(), s));
            }
            Event::SoftBreak => self.spans.push(Span::styled(" ", self.style())),
            Event::HardBreak => self.flush(),
            Event::Rule => {
                self.block_start();
                self.spans
                    .push(Span::styled("───", Style::new().fg(Color::DarkGray)));
                self.flush();
                self.blank_before_next = true;
            }
            Event::TaskListMarker(done) => {
                let mark = if done { "[x] " } else { "[ ] " };
                self.spans.push(Span::raw(mark));
            }
            Event::Html(t) | Event::InlineHtml(t) => {
                let s = self.style();
                self.spans
                    .push(Span::styled(t.trim_end_matches('\n').to_string(), s));
            }
            _ => {}
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.block_start(),
            Tag::Table(aligns) => {
                self.block_start();
                self.table = Some(Table {
                    aligns,
                    ..Table::default()
                });
            }
            Tag::TableHead | Tag::TableRow => self.row.clear(),
            Tag::TableCell => self.spans.clear(),
            Tag::Heading { level, .. } => {
                self.block_start();
                let mut s = Style::new().add_modifier(Modifier::BOLD);
                if level == HeadingLevel::H1 {
                    s = s.add_modifier(Modifier::UNDERLINED);
                }
                let hashes = "#".repeat(level as usize);
                self.spans.push(Span::styled(format!("{hashes} "), s));
                self.push_style(s);
            }
            Tag::BlockQuote(_) => {
                self.block_start();
                self.quote += 1;
            }
            Tag::CodeBlock(kind) => {
                self.block_start();
                let lang = match kind {
                    CodeBlockKind::Fenced(l) => l.into_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(start) => {
                if self.lists.is_empty() {
                    self.block_start();
                } else {
                    self.flush();
                }
                self.lists.push(start);
                self.item_cols
                    .push(self.item_cols.last().copied().unwrap_or(0));
            }
            Tag::Item => {
                self.flush();
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => "- ".to_string(),
                };
                // A nested list starts under its parent item's text, not under its marker.
                let depth = self.item_cols.len();
                let base = if depth >= 2 {
                    self.item_cols[depth - 2]
                } else {
                    0
                };
                // Past half the width a deeper item indents no further: each level's
                // indent on each of its lines made a hostile `- - - … a` quadratic in size.
                let col = (base + marker.chars().count()).min((self.width / 2).max(base));
                if let Some(last) = self.item_cols.last_mut() {
                    *last = col;
                }
                self.item_marker = Some(marker);
            }
            Tag::Emphasis => self.push_style(Style::new().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(Style::new().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self.push_style(Style::new().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } => {
                self.link = Some((dest_url.into_string(), self.spans.len()));
                self.push_style(Style::new().add_modifier(Modifier::UNDERLINED));
            }
            _ => self.push_style(Style::new()),
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::TableCell => {
                let cell = std::mem::take(&mut self.spans);
                self.row.push(cell);
            }
            TagEnd::TableHead => {
                if let Some(t) = self.table.as_mut() {
                    t.head = std::mem::take(&mut self.row);
                }
            }
            TagEnd::TableRow => {
                if let Some(t) = self.table.as_mut() {
                    t.rows.push(std::mem::take(&mut self.row));
                }
            }
            TagEnd::Table => self.end_table(),
            TagEnd::Paragraph => {
                self.flush();
                self.blank_before_next = true;
            }
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.flush();
                self.blank_before_next = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.quote = self.quote.saturating_sub(1);
                self.blank_before_next = true;
            }
            TagEnd::CodeBlock => {
                if let Some((lang, code)) = self.code.take() {
                    for line in highlight_code(&code, &lang) {
                        let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
                        let lead = text.len() - text.trim_start_matches(' ').len();
                        // A wrapped code line continues under its own indent (at most half
                        // the width, so a deep one still has room).
                        self.code_indent = (2 + lead).min(self.width / 2);
                        self.spans.push(Span::raw("  "));
                        self.spans.extend(line.spans);
                        self.flush();
                        self.code_indent = 0;
                    }
                }
                self.blank_before_next = true;
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                self.item_cols.pop();
                self.blank_before_next = true;
            }
            TagEnd::Item => self.flush(),
            TagEnd::Link => {
                self.styles.pop();
                if let Some((url, start)) = self.link.take() {
                    // Only the link's own text: the whole paragraph, collected at every link's
                    // end, made an answer of many links quadratic.
                    let own = self.spans.get(start..).unwrap_or_default();
                    let text: String = own.iter().map(|s| s.content.as_ref()).collect();
                    if !text.ends_with(&url) {
                        let s = Style::new().fg(Color::DarkGray);
                        self.spans.push(Span::styled(format!(" ({url})"), s));
                    }
                }
            }
            _ => {
                self.styles.pop();
            }
        }
    }

    /// Lays the finished table out in the room its quote or list prefix leaves.
    fn end_table(&mut self) {
        let Some(table) = self.table.take() else {
            return;
        };
        let prefix = 2 * self.quote_marks() + self.item_cols.last().copied().unwrap_or(0);
        for line in table.render(self.width.saturating_sub(prefix)) {
            self.spans = line.spans;
            self.flush();
        }
        self.blank_before_next = true;
    }

    /// How many `▌ ` marks a line in the current quotes gets: one per level up to a quarter of
    /// the width (half of it in columns), so hostile nesting cannot make every line huge.
    fn quote_marks(&self) -> usize {
        self.quote.min((self.width / 4).max(1))
    }

    /// A new block begins: separate it from the previous one by one blank line.
    fn block_start(&mut self) {
        self.flush();
        if self.blank_before_next && !self.out.is_empty() && self.lists.is_empty() {
            self.out.push(MdLine {
                line: Line::default(),
                indent: 0,
            });
        }
        self.blank_before_next = false;
    }

    fn flush(&mut self) {
        if self.spans.is_empty() && self.item_marker.is_none() {
            return;
        }
        let depth = self.item_cols.len();
        let base = if depth >= 2 {
            self.item_cols[depth - 2]
        } else {
            0
        };
        let text_col = self.item_cols.last().copied().unwrap_or(0);
        let mut prefix = "▌ ".repeat(self.quote_marks());
        let mut prefix_spans = Vec::new();
        if !self.lists.is_empty() {
            prefix.push_str(&" ".repeat(base));
            // Continuation paragraphs of an item line up under its text.
            let marker = self
                .item_marker
                .take()
                .unwrap_or_else(|| " ".repeat(text_col - base));
            if !prefix.is_empty() {
                prefix_spans.push(Span::styled(
                    prefix.clone(),
                    Style::new().fg(Color::DarkGray),
                ));
            }
            prefix.push_str(&marker);
            prefix_spans.push(Span::styled(marker, Style::new().fg(Color::Blue)));
        } else if !prefix.is_empty() {
            prefix_spans.push(Span::styled(
                prefix.clone(),
                Style::new().fg(Color::DarkGray),
            ));
        }
        let indent = u16::try_from(str_width(&prefix) + self.code_indent).unwrap_or(0);
        let mut spans = prefix_spans;
        spans.append(&mut self.spans);
        self.out.push(MdLine {
            line: Line::from(spans),
            indent,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn text(src: &str) -> Vec<String> {
        render(src, 80).iter().map(|l| l.line.to_string()).collect()
    }

    #[test]
    fn headings_lists_and_code_render_as_plain_text_rows() {
        let src = "# Title\n\nSome `code` here.\n\n- one\n- two\n  1. nested\n\n```rust\nfn main() {}\n```\n";
        assert_eq!(
            text(src),
            vec![
                "# Title",
                "",
                "Some code here.",
                "",
                "- one",
                "- two",
                "  1. nested",
                "",
                "  fn main() {}",
            ]
        );
    }

    #[test]
    fn a_finished_block_ends_at_a_blank_line_outside_fences() {
        let buf = "para one\n\n```\ncode\n\nmore\n";
        assert_eq!(finished_prefix_len(buf), "para one\n\n".len());
        let closed = "para one\n\n```\ncode\n\nmore\n```\nnext";
        assert_eq!(finished_prefix_len(closed), closed.len() - "next".len());
        assert_eq!(finished_prefix_len("no newline yet"), 0);
    }

    #[test]
    fn only_a_link_s_own_text_decides_whether_its_address_is_shown() {
        // The paragraph ends with the address but the link's text is only "/x".
        assert_eq!(
            text("mirror of https://d[/x](https://d/x)"),
            vec!["mirror of https://d/x (https://d/x)"]
        );
        assert_eq!(
            text("[docs](https://d) and [https://d](https://d)"),
            vec!["docs (https://d) and https://d"]
        );
    }

    #[test]
    fn nested_inline_styles_add_up_and_end_in_order() {
        let lines = render("*a **b ~~c~~** d*", 80);
        let style_of = |t: &str| {
            let span = lines[0].line.spans.iter().find(|s| s.content.contains(t));
            span.map(|s| s.style.add_modifier)
        };
        assert_eq!(style_of("a"), Some(Modifier::ITALIC));
        assert_eq!(style_of("b"), Some(Modifier::ITALIC | Modifier::BOLD));
        let all = Modifier::ITALIC | Modifier::BOLD | Modifier::CROSSED_OUT;
        assert_eq!(style_of("c"), Some(all));
        assert_eq!(style_of("d"), Some(Modifier::ITALIC));
    }

    /// The widest line `src` renders to at `width`, in columns.
    fn widest(src: &str, width: u16) -> usize {
        let lines = render(src, width);
        let widths = lines.iter().map(|l| str_width(&l.line.to_string()));
        widths.max().unwrap_or(0)
    }

    #[test]
    fn hostile_list_nesting_indents_no_further_than_half_the_width() {
        // 2,000 levels used to give 2,000 lines of up to 4,000 columns each (16 MB from 4 KB).
        let src = format!("{}a\n", "- ".repeat(2000));
        assert!(widest(&src, 40) <= 20 + "- a".len(), "{}", widest(&src, 40));
        let ordered = format!("{}a\n", "1. ".repeat(500));
        assert!(widest(&ordered, 40) <= 20 + "1. a".len());
        // Shallow nesting is untouched.
        assert_eq!(
            text("- a\n  - b\n    - c\n"),
            vec!["- a", "  - b", "    - c"]
        );
    }

    #[test]
    fn hostile_quote_nesting_gets_at_most_half_the_width_of_marks() {
        let src = format!("{} a\n\n{} b\n", ">".repeat(3000), "> ".repeat(3000));
        assert!(widest(&src, 40) <= 20 + 2, "{}", widest(&src, 40));
        assert_eq!(text("> > a"), vec!["▌ ▌ a"]);
    }
}
