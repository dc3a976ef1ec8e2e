//! Model text made safe for a terminal. A model (or a file it read back) can emit escape
//! sequences that set the window title, write to the clipboard (OSC 52), hide text or move the
//! cursor over earlier output; printed raw to a terminal they act. Removed are: CSI, OSC, DCS,
//! SOS, PM and APC sequences (7-bit and 8-bit forms), other `ESC x` pairs, and every C0/C1
//! control character except `\n` and `\t`.

/// Where headless text output goes, deciding whether escapes must be stripped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextSafety {
    /// A pipe or file: text is written exactly as the model sent it.
    Verbatim,
    /// A terminal: control characters and escape sequences are removed.
    StripControls,
}

impl TextSafety {
    /// The policy for a stream that is (or is not) a terminal.
    pub fn for_terminal(is_terminal: bool) -> Self {
        if is_terminal {
            Self::StripControls
        } else {
            Self::Verbatim
        }
    }

    /// Applies the policy to `text`.
    pub fn apply<'a>(self, text: &'a str) -> std::borrow::Cow<'a, str> {
        match self {
            Self::Verbatim => std::borrow::Cow::Borrowed(text),
            Self::StripControls => strip_terminal_controls(text),
        }
    }
}

const ESC: char = '\u{1b}';
const BEL: char = '\u{7}';
/// The 8-bit String Terminator.
const ST: char = '\u{9c}';

/// `text` without escape sequences and control characters (`\n` and `\t` are kept).
pub fn strip_terminal_controls(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(is_unwanted) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ESC => match chars.next() {
                Some('[') => skip_csi(&mut chars),
                Some(']' | 'P' | 'X' | '^' | '_') => skip_string(&mut chars),
                // `ESC x` with an intermediate (`ESC ( B`): drop the final byte too.
                Some(' '..='/') => {
                    chars.next();
                }
                _ => {}
            },
            '\u{9b}' => skip_csi(&mut chars),
            '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            c if is_unwanted(c) => {}
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

fn is_unwanted(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

/// Skips a CSI sequence's parameters and intermediates up to its final byte (`@` to `~`).
fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for c in chars.by_ref() {
        if ('@'..='~').contains(&c) {
            return;
        }
        // A control inside a CSI aborts it in terminals; nothing of it is shown either way.
    }
}

/// Skips a string sequence (OSC, DCS, SOS, PM, APC) up to BEL, ST or `ESC \`.
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            BEL | ST => return,
            ESC => {
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                return;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn escape_sequences_and_controls_are_removed_but_newlines_and_tabs_stay() {
        let cases = [
            ("plain text\n\tindented", "plain text\n\tindented"),
            (
                "\u{1b}[31mred\u{1b}[0m and \u{1b}[2J\u{1b}[Hcleared",
                "red and cleared",
            ),
            ("title\u{1b}]0;pwned\u{7} set", "title set"),
            ("clip\u{1b}]52;c;ZWNobyBoaQ==\u{1b}\\board", "clipboard"),
            (
                "link \u{1b}]8;;http://evil\u{1b}\\text\u{1b}]8;;\u{1b}\\",
                "link text",
            ),
            ("dcs\u{1b}P1;2|secret\u{1b}\\ end", "dcs end"),
            ("8-bit \u{9b}31mcsi\u{9d}0;t\u{9c} done", "8-bit csi done"),
            ("charset \u{1b}(Bok \u{1b}7saved", "charset ok saved"),
            ("over\rwrite\u{8}\u{7}\u{0}\u{7f} bell", "overwrite bell"),
            ("unterminated \u{1b}]0;title forever", "unterminated "),
            ("café ☕ — fine", "café ☕ — fine"),
        ];
        for (input, expected) in cases {
            assert_eq!(strip_terminal_controls(input), expected, "{input:?}");
        }
    }

    #[test]
    fn verbatim_output_keeps_the_text_as_sent() {
        let text = "\u{1b}[31mred\u{1b}[0m";
        assert_eq!(TextSafety::Verbatim.apply(text), text);
        assert_eq!(TextSafety::StripControls.apply(text), "red");
    }
}
