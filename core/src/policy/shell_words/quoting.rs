//! One word as bash reads it: backslash escapes, single quotes (nothing escapes), double
//! quotes (a backslash escapes only `$`, `` ` ``, `"`, `\` and a newline), ANSI-C quotes
//! `$'...'` with their escapes decoded, locale quotes `$"..."`, and line continuations.
//!
//! A word is exact when its text is what bash passes to the program. Expansions (`$x`,
//! globs, `~`, braces), a locale translation, or an escape whose value depends on the locale
//! or cuts the word (`\u00e9`, `\0`, `\cx`) make it inexact; a substitution or an
//! unterminated quote makes the whole line opaque.

use super::Word;
use super::lexer::is_meta;

/// The characters of a line, read the way bash's input layer hands them to its lexer.
pub(super) struct Cursor {
    chars: Vec<char>,
    pos: usize,
}

impl Cursor {
    pub(super) fn new(line: &str) -> Self {
        Self {
            chars: line.chars().collect(),
            pos: 0,
        }
    }

    /// Skips line continuations (backslash newline) at `at`, as bash does everywhere but
    /// inside single quotes, `$'...'`, comments and the character after a backslash.
    fn skip_continuations(&self, mut at: usize) -> usize {
        while self.chars.get(at) == Some(&'\\') && self.chars.get(at + 1) == Some(&'\n') {
            at += 2;
        }
        at
    }

    /// The character `ahead` characters on, line continuations skipped.
    pub(super) fn peek(&self, ahead: usize) -> Option<char> {
        let mut at = self.pos;
        for _ in 0..ahead {
            at = self.skip_continuations(at) + 1;
        }
        self.chars.get(self.skip_continuations(at)).copied()
    }

    /// The next character, line continuations skipped.
    pub(super) fn bump(&mut self) -> Option<char> {
        self.pos = self.skip_continuations(self.pos);
        let c = self.chars.get(self.pos).copied()?;
        self.pos += 1;
        Some(c)
    }

    /// The next character as written.
    pub(super) fn raw_peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    /// Takes the next character as written.
    pub(super) fn raw_bump(&mut self) -> Option<char> {
        let c = self.raw_peek()?;
        self.pos += 1;
        Some(c)
    }
}

/// A word as read, with how it was written (the lexer needs it for `2>`, `{fd}>`, `>&2`).
pub(super) struct Lexed {
    pub word: Word,
    /// Some part of it was quoted or escaped.
    quoted: bool,
}

impl Lexed {
    /// Unquoted digits: before `<` or `>`, a descriptor number.
    pub(super) fn is_number(&self) -> bool {
        !self.quoted
            && !self.word.text.is_empty()
            && self.word.text.bytes().all(|b| b.is_ascii_digit())
    }

    /// Unquoted `{name}`: before `<` or `>`, a descriptor bash allocates into `name`.
    pub(super) fn is_braced_name(&self) -> bool {
        !self.quoted
            && self
                .word
                .text
                .strip_prefix('{')
                .and_then(|rest| rest.strip_suffix('}'))
                .is_some_and(is_name)
    }

    /// After `>&` or `<&`: a descriptor to copy (`2`), close (`-`) or move (`3-`), written
    /// plainly. Anything else, even quoted digits, is decided by bash at run time.
    pub(super) fn is_descriptor(&self) -> bool {
        let text = self.word.text.as_str();
        let digits = text.strip_suffix('-').unwrap_or(text);
        !self.quoted
            && (text == "-" || (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())))
    }

    /// Exactly `/dev/null`.
    pub(super) fn is_dev_null(&self) -> bool {
        self.word.exact && self.word.text == "/dev/null"
    }
}

/// A shell variable name.
pub(super) fn is_name(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Reads one word at the cursor (on a character that is not a metacharacter); the flag says
/// whether the line became opaque.
pub(super) fn read_word(cur: &mut Cursor) -> (Lexed, bool) {
    let mut reader = Reader {
        cur,
        out: Lexed {
            word: Word {
                text: String::new(),
                exact: true,
            },
            quoted: false,
        },
        opaque: false,
    };
    reader.word();
    (reader.out, reader.opaque)
}

struct Reader<'c> {
    cur: &'c mut Cursor,
    out: Lexed,
    opaque: bool,
}

impl Reader<'_> {
    fn push(&mut self, c: char) {
        // bash's internal quoting markers (CTLESC, CTLNUL) have had bugs of their own.
        if c == '\u{1}' || c == '\u{7f}' {
            self.out.word.exact = false;
        }
        self.out.word.text.push(c);
    }

    fn inexact(&mut self, text: &str) {
        self.out.word.exact = false;
        self.out.word.text.push_str(text);
    }

    fn word(&mut self) {
        while let Some(c) = self.cur.peek(0) {
            if is_meta(c) {
                break;
            }
            self.cur.bump();
            match c {
                '\\' => {
                    self.out.quoted = true;
                    // The escaped character is taken as written; a trailing backslash stays.
                    let escaped = self.cur.raw_bump().unwrap_or('\\');
                    self.push(escaped);
                }
                '\'' => {
                    self.out.quoted = true;
                    self.single_quoted();
                }
                '"' => {
                    self.out.quoted = true;
                    self.double_quoted();
                }
                '$' => self.dollar(false),
                '`' => {
                    self.opaque = true;
                    self.inexact("`");
                }
                // Globs, brace expansion, tilde expansion.
                '*' | '?' | '[' | '{' | '~' => {
                    self.out.word.exact = false;
                    self.push(c);
                }
                _ => self.push(c),
            }
        }
    }

    fn single_quoted(&mut self) {
        loop {
            match self.cur.raw_bump() {
                None => {
                    self.opaque = true;
                    return;
                }
                Some('\'') => return,
                Some(c) => self.push(c),
            }
        }
    }

    fn double_quoted(&mut self) {
        loop {
            match self.cur.bump() {
                None => {
                    self.opaque = true;
                    return;
                }
                Some('"') => return,
                // A backslash-newline was skipped as a continuation by `bump`.
                Some('\\') => match self.cur.raw_peek() {
                    Some(c @ ('$' | '`' | '"' | '\\')) => {
                        self.cur.raw_bump();
                        self.push(c);
                    }
                    _ => self.push('\\'),
                },
                Some('$') => self.dollar(true),
                Some('`') => {
                    self.opaque = true;
                    self.inexact("`");
                }
                Some(c) => self.push(c),
            }
        }
    }

    /// After a `$` (inside double quotes when `quoted`).
    fn dollar(&mut self, quoted: bool) {
        match self.cur.peek(0) {
            Some('\'') if !quoted => {
                self.cur.bump();
                self.out.quoted = true;
                self.ansi_c();
            }
            Some('"') if !quoted => {
                self.cur.bump();
                self.out.quoted = true;
                // Translated through the locale's message catalogue, if it has one.
                self.out.word.exact = false;
                self.double_quoted();
            }
            // `$(...)`, `$((...))`, `$[...]`: substitution and arithmetic.
            Some('(' | '[') => {
                self.opaque = true;
                self.inexact("$");
            }
            Some('{') => {
                self.cur.bump();
                self.braced_parameter();
            }
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                let mut name = String::from("$");
                while let Some(c) = self.cur.peek(0) {
                    if !(c.is_ascii_alphanumeric() || c == '_') {
                        break;
                    }
                    self.cur.bump();
                    name.push(c);
                }
                self.inexact(&name);
            }
            Some(c) if c.is_ascii_digit() || "@*#?-$!".contains(c) => {
                self.cur.bump();
                self.inexact(&format!("${c}"));
            }
            // A lone `$` is a dollar sign.
            _ => self.push('$'),
        }
    }

    /// `${...}`: only `${name}`, `${1}`, `${#name}` and special parameters are modelled;
    /// operators (`${x:-$(...)}`, `${x@P}`, `${!x}`) make the line opaque.
    fn braced_parameter(&mut self) {
        let mut inner = String::new();
        loop {
            match self.cur.bump() {
                None => {
                    self.opaque = true;
                    return;
                }
                Some('}') => break,
                Some(c) => inner.push(c),
            }
        }
        let body = match inner.strip_prefix('#') {
            Some(rest) if !rest.is_empty() => rest,
            _ => inner.as_str(),
        };
        let simple = is_name(body)
            || (!body.is_empty() && body.bytes().all(|b| b.is_ascii_digit()))
            || (body.len() == 1 && "@*#?-$!".contains(body));
        if !simple {
            self.opaque = true;
        }
        self.inexact(&format!("${{{inner}}}"));
    }

    /// `$'...'` after its opening quote: a backslash passes the next character, so `\'` does
    /// not end it.
    fn ansi_c(&mut self) {
        let mut body = Vec::new();
        loop {
            match self.cur.raw_bump() {
                None => {
                    self.opaque = true;
                    return;
                }
                Some('\'') => break,
                Some('\\') => {
                    body.push('\\');
                    match self.cur.raw_bump() {
                        Some(c) => body.push(c),
                        None => {
                            self.opaque = true;
                            return;
                        }
                    }
                }
                Some(c) => body.push(c),
            }
        }
        let (text, exact) = decode_ansi_c(&body);
        if !exact {
            self.out.word.exact = false;
        }
        for c in text.chars() {
            self.push(c);
        }
    }
}

/// The value of the body of `$'...'` and whether it is certain: an escape that yields NUL
/// (which ends the word in bash), a byte past ASCII (the locale decides what it means) or a
/// control escape `\cx` makes it uncertain.
pub(super) fn decode_ansi_c(body: &[char]) -> (String, bool) {
    let mut out = String::new();
    let mut exact = true;
    let mut i = 0;
    while i < body.len() {
        let c = body[i];
        i += 1;
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(&e) = body.get(i) else {
            out.push('\\');
            break;
        };
        i += 1;
        let simple = match e {
            'a' => Some('\u{7}'),
            'b' => Some('\u{8}'),
            'e' | 'E' => Some('\u{1b}'),
            'f' => Some('\u{c}'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\u{b}'),
            '\\' | '\'' | '"' | '?' => Some(e),
            _ => None,
        };
        if let Some(value) = simple {
            out.push(value);
            continue;
        }
        let (radix, max) = match e {
            '0'..='7' => (8, 3),
            'x' => (16, 2),
            'u' => (16, 4),
            'U' => (16, 8),
            'c' => {
                // A control character; `\c` at the end stays as written in bash.
                exact = false;
                match body.get(i) {
                    Some(_) => i += 1,
                    None => out.push_str("\\c"),
                }
                continue;
            }
            _ => {
                // Unknown escapes (`\z`, `\8`, backslash-newline) stay as written.
                out.push('\\');
                out.push(e);
                continue;
            }
        };
        // Octal takes the first digit from `e` itself.
        let mut digits = String::new();
        if radix == 8 {
            digits.push(e);
        }
        while digits.len() < max && body.get(i).is_some_and(|d| d.is_digit(radix)) {
            digits.push(body[i]);
            i += 1;
        }
        if digits.is_empty() {
            // `\x`, `\u` without digits stay as written.
            out.push('\\');
            out.push(e);
            continue;
        }
        match u32::from_str_radix(&digits, radix) {
            Ok(value) if (1..0x80).contains(&value) => {
                out.push(char::from(u8::try_from(value).unwrap_or(b'?')));
            }
            _ => {
                exact = false;
                out.push('\u{fffd}');
            }
        }
    }
    (out, exact)
}
