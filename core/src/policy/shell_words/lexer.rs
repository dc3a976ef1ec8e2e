//! Cuts a command line into simple commands and their words the way bash's lexer does, as
//! far as approval rules need: quoting of every kind (`\`, `'...'`, `"..."`, `$'...'`,
//! `$"..."`), line continuations, operators, comments, here-documents and every redirection
//! form. What it does not model exactly (substitutions, subshells, odd syntax) makes the whole
//! line opaque, and what it models but a prefix must not vouch for (a write to a file, a
//! here-document) makes its simple command not plain.

use super::Word;
use super::quoting::{Cursor, Lexed};

/// What the lexer found in a line.
pub(super) struct Scan {
    pub parts: Vec<Part>,
    /// No prefix may vouch for any of the line: a substitution, a subshell, an unterminated
    /// quote, a syntax error or a construct the lexer does not model.
    pub opaque: bool,
}

/// One simple command: its words (redirections taken out) and whether a prefix may vouch
/// for its redirections.
#[derive(Default)]
pub(super) struct Part {
    pub words: Vec<Word>,
    pub plain: bool,
    /// The files its `<` redirections read.
    pub reads: Vec<Word>,
    /// It has a redirection (so it is not an empty command even without words).
    redirected: bool,
}

/// The control operators that end a simple command.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Newline,
    Semi,
    Background,
    And,
    Or,
    Pipe,
}

/// A here-document whose body starts after the next newline.
struct Heredoc {
    delimiter: String,
    strip_tabs: bool,
}

/// Characters that end a word outside quotes (bash's metacharacters).
pub(super) fn is_meta(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')'
    )
}

/// Scans `line` (never fails: what it cannot follow makes the line opaque).
pub(super) fn scan(line: &str) -> Scan {
    let mut lexer = Lexer {
        cur: Cursor::new(line),
        opaque: line.contains('\0'),
        heredocs: Vec::new(),
        parts: Vec::new(),
        part: Part::new(),
        // Like right after `&&`: a command must follow, but a newline may come first.
        needs_more: false,
    };
    lexer.run();
    Scan {
        parts: lexer.parts,
        opaque: lexer.opaque,
    }
}

struct Lexer {
    cur: Cursor,
    opaque: bool,
    heredocs: Vec<Heredoc>,
    parts: Vec<Part>,
    part: Part,
    /// The last operator was `&&`, `||` or `|`: the line may not end before another command.
    needs_more: bool,
}

impl Part {
    fn new() -> Self {
        Self {
            plain: true,
            ..Self::default()
        }
    }

    fn is_empty(&self) -> bool {
        self.words.is_empty() && !self.redirected
    }
}

impl Lexer {
    fn run(&mut self) {
        loop {
            self.skip_blanks();
            let Some(c) = self.cur.peek(0) else {
                break;
            };
            match c {
                // Only reached at the start of a word: a comment, which ends at the next
                // newline even after a backslash (bash reads it raw).
                '#' => {
                    self.cur.bump();
                    while self.cur.raw_peek().is_some_and(|c| c != '\n') {
                        self.cur.raw_bump();
                    }
                }
                '\n' => {
                    self.cur.bump();
                    self.end_part(Op::Newline);
                    self.read_heredoc_bodies();
                }
                ';' => {
                    self.cur.bump();
                    // `;;`, `;&`, `;;&` end `case` items; anywhere else they are errors.
                    if matches!(self.cur.peek(0), Some(';' | '&')) {
                        self.opaque = true;
                        self.cur.bump();
                    }
                    self.end_part(Op::Semi);
                }
                '&' => match self.cur.peek(1) {
                    Some('&') => {
                        self.bump_n(2);
                        self.end_part(Op::And);
                    }
                    Some('>') => self.redirection(),
                    _ => {
                        self.cur.bump();
                        self.end_part(Op::Background);
                    }
                },
                '|' => {
                    self.cur.bump();
                    match self.cur.peek(0) {
                        Some('|') => {
                            self.cur.bump();
                            self.end_part(Op::Or);
                        }
                        Some('&') => {
                            self.cur.bump();
                            self.end_part(Op::Pipe);
                        }
                        _ => self.end_part(Op::Pipe),
                    }
                }
                // Subshells, function definitions, `((`, process substitution: not modelled.
                '(' | ')' => {
                    self.opaque = true;
                    self.cur.bump();
                }
                '<' | '>' if self.cur.peek(1) == Some('(') => {
                    self.opaque = true;
                    self.bump_n(2);
                }
                '<' | '>' => self.redirection(),
                _ => {
                    let word = self.read_word();
                    let before_redirection = matches!(self.cur.peek(0), Some('<' | '>'))
                        && self.cur.peek(1) != Some('(');
                    if before_redirection && word.is_number() {
                        // `2>x`: a descriptor number, not a word. A huge one is not modelled.
                        if word.word.text.len() > 9 {
                            self.opaque = true;
                        }
                        self.redirection();
                    } else if before_redirection && word.is_braced_name() {
                        // `{fd}>x` allocates a descriptor and assigns a variable.
                        self.part.plain = false;
                        self.redirection();
                    } else {
                        self.part.words.push(word.word);
                    }
                }
            }
        }
        if self.needs_more && self.part.is_empty() {
            // `ls &&` at the end: bash waits for more and fails.
            self.opaque = true;
        }
        self.finish_part();
        if !self.heredocs.is_empty() {
            // A here-document without its body (and newline): not modelled.
            self.opaque = true;
        }
    }

    fn bump_n(&mut self, n: usize) {
        for _ in 0..n {
            self.cur.bump();
        }
    }

    fn skip_blanks(&mut self) {
        while matches!(self.cur.peek(0), Some(' ' | '\t')) {
            self.cur.bump();
        }
    }

    /// Ends the current simple command at `op`.
    fn end_part(&mut self, op: Op) {
        if self.part.is_empty() {
            // Blank lines, and a newline after `&&`, `||` or `|`, are fine; an operator with no
            // command before it (`; ls`, `ls && ; x`) is a syntax error.
            if op != Op::Newline {
                self.opaque = true;
            }
            return;
        }
        self.needs_more = matches!(op, Op::And | Op::Or | Op::Pipe);
        self.finish_part();
    }

    fn finish_part(&mut self) {
        let part = std::mem::replace(&mut self.part, Part::new());
        if !part.words.is_empty() {
            self.parts.push(part);
        } else if !part.plain {
            // Only redirections (`> file`): it runs nothing but still writes; keep it so the
            // line is not plain.
            self.parts.push(part);
        }
    }

    /// Skips the bodies of the here-documents opened on the line just ended.
    fn read_heredoc_bodies(&mut self) {
        for doc in std::mem::take(&mut self.heredocs) {
            loop {
                let mut line = String::new();
                while let Some(c) = self.cur.raw_bump() {
                    if c == '\n' {
                        break;
                    }
                    line.push(c);
                }
                let line = if doc.strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    line.as_str()
                };
                if line == doc.delimiter || self.cur.raw_peek().is_none() {
                    break;
                }
            }
        }
    }

    /// Reads one redirection (the cursor is on its operator, after any descriptor number)
    /// and decides whether the part stays plain: descriptors, `/dev/null` and reading a file
    /// do; anything that writes a file, a here-document, `<>` and every form it is not sure
    /// of do not.
    fn redirection(&mut self) {
        self.part.redirected = true;
        let op = self.redirection_operator();
        self.skip_blanks();
        if self.cur.peek(0).is_none_or(is_meta) {
            // `ls >` or `ls > ;`: a syntax error.
            self.opaque = true;
            return;
        }
        let target = self.read_word();
        let plain = match op {
            // Reading a file, but not bash's `/dev/tcp/host/port` (a connection).
            "<" => {
                let reads = target.word.exact
                    && !target.word.text.contains("dev/tcp")
                    && !target.word.text.contains("dev/udp");
                self.part.reads.push(target.word.clone());
                reads
            }
            // `>&2`, `2>&1`, `>&-`, `3>&1-`: descriptors. Anything else after `>&` is a file
            // (bash takes `>&2x` for `&>2x`), after `<&` an error.
            ">&" => target.is_descriptor() || target.is_dev_null(),
            "<&" => target.is_descriptor(),
            ">" | ">>" | ">|" | "&>" | "&>>" => target.is_dev_null(),
            "<<" | "<<-" => {
                self.heredocs.push(Heredoc {
                    delimiter: target.word.text,
                    strip_tabs: op == "<<-",
                });
                false
            }
            // `<<<` (here-string), `<>` (opens for writing).
            _ => false,
        };
        if !plain {
            self.part.plain = false;
        }
    }

    fn redirection_operator(&mut self) -> &'static str {
        let first = self.cur.bump();
        let next = self.cur.peek(0);
        let (op, extra) = match (first, next) {
            (Some('>'), Some('>')) => (">>", 1),
            (Some('>'), Some('|')) => (">|", 1),
            (Some('>'), Some('&')) => (">&", 1),
            (Some('>'), _) => (">", 0),
            (Some('<'), Some('<')) => match self.cur.peek(1) {
                Some('<') => ("<<<", 2),
                Some('-') => ("<<-", 2),
                _ => ("<<", 1),
            },
            (Some('<'), Some('>')) => ("<>", 1),
            (Some('<'), Some('&')) => ("<&", 1),
            (Some('<'), _) => ("<", 0),
            // `&>` and `&>>` (the caller saw the `>`).
            _ => match self.cur.peek(1) {
                Some('>') => ("&>>", 2),
                _ => ("&>", 1),
            },
        };
        self.bump_n(extra);
        op
    }

    /// Reads one word (the cursor is on a character that is not a metacharacter).
    fn read_word(&mut self) -> Lexed {
        let (lexed, opaque) = super::quoting::read_word(&mut self.cur);
        if opaque {
            self.opaque = true;
        }
        lexed
    }
}
