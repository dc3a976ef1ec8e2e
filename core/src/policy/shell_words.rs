//! A shell command line as approval rules see it: the simple commands it runs (split at
//! `&&`, `||`, `;`, `|`, `&` and newlines, outside quotes), and whether a prefix rule may
//! vouch for it at all. Words are tokenized by the `shell-words` crate; only the operator
//! splitting and the safety checks are ours.
//!
//! Conservative by design: a line with command or process substitution, an output
//! redirection to a file, a here-document, a subshell, a leading variable assignment or a
//! shell keyword is never allowed by a prefix (it is asked, or matched only as the exact
//! same text).

/// A parsed command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandLine {
    raw: String,
    parts: Vec<SimpleCommand>,
    /// Command or process substitution (`$(...)`, backticks, `<(...)`) somewhere in the line.
    substitution: bool,
    /// Quotes left open, or words the tokenizer rejected.
    unparsable: bool,
}

/// One simple command of a line (`cargo test --lib`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    words: Vec<String>,
    /// A prefix may vouch for it (no file redirection, here-document, subshell, assignment).
    plain: bool,
}

/// Words that start a compound command or change what the next word means.
const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
    "select", "function", "{", "}", "!", "[[", "]]", "time", "coproc",
];

/// Programs that run the rest of their words as another command; deny rules look past them.
const WRAPPERS: &[&str] = &[
    "sudo", "env", "command", "exec", "nohup", "nice", "time", "builtin", "xargs", "doas",
];

impl CommandLine {
    /// Parses `command` (never fails: problems make the line opaque to prefix rules).
    pub fn parse(command: &str) -> Self {
        let split = split_operators(command);
        let mut unparsable = split.unterminated;
        let mut parts = Vec::new();
        for segment in split.segments {
            match shell_words::split(&segment.text) {
                Ok(words) if words.is_empty() => {}
                Ok(words) => {
                    let plain = segment.plain && plain_words(&words);
                    parts.push(SimpleCommand { words, plain });
                }
                Err(_) => unparsable = true,
            }
        }
        Self {
            raw: command.to_owned(),
            parts,
            substitution: split.substitution,
            unparsable,
        }
    }

    /// The command as written.
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// The prefix (program and subcommand) of every part, in order without repeats, when a
    /// prefix rule may vouch for the whole line; `None` when the line is opaque.
    pub fn prefixes(&self) -> Option<Vec<Vec<String>>> {
        if !self.prefix_safe() {
            return None;
        }
        let mut out: Vec<Vec<String>> = Vec::new();
        for part in &self.parts {
            let prefix = part.prefix();
            if !out.contains(&prefix) {
                out.push(prefix);
            }
        }
        Some(out)
    }

    /// Whether every part is allowed by one of `prefixes` (and the line is not opaque).
    pub fn allowed_by<'a>(&self, prefixes: impl Iterator<Item = &'a [String]> + Clone) -> bool {
        self.prefix_safe()
            && self
                .parts
                .iter()
                .all(|part| prefixes.clone().any(|p| part.words.starts_with(p)))
    }

    /// Whether some part runs `prefix`, looking past assignments and wrappers (`sudo`,
    /// `env`); in an opaque line, whether the words of `prefix` appear anywhere in a row.
    /// Deny rules use this: it errs towards matching.
    pub fn runs(&self, prefix: &[String]) -> bool {
        if prefix.is_empty() {
            return true;
        }
        let direct = self.parts.iter().any(|part| {
            let words = skip_assignments(&part.words);
            let wrapped = words
                .first()
                .is_some_and(|w| WRAPPERS.contains(&w.as_str()));
            words.starts_with(prefix)
                || (wrapped && words.windows(prefix.len()).any(|w| w == prefix))
        });
        if direct {
            return true;
        }
        if self.substitution || self.unparsable || self.parts.iter().any(|p| !p.plain) {
            let loose = loose_words(&self.raw);
            return loose.windows(prefix.len()).any(|w| w == prefix);
        }
        false
    }

    fn prefix_safe(&self) -> bool {
        !self.substitution
            && !self.unparsable
            && !self.parts.is_empty()
            && self.parts.iter().all(|p| p.plain)
    }
}

impl SimpleCommand {
    /// The program, plus its subcommand when the second word looks like one (`git status`,
    /// `cargo test`; `ls -la` is just `ls`).
    fn prefix(&self) -> Vec<String> {
        let take = match self.words.get(1) {
            Some(second) if subcommand_like(second) => 2,
            _ => 1,
        };
        self.words.iter().take(take).cloned().collect()
    }
}

fn subcommand_like(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// Whether the words of a part can be vouched for by their first words.
fn plain_words(words: &[String]) -> bool {
    let Some(program) = words.first() else {
        return false;
    };
    !is_assignment(program)
        && !KEYWORDS.contains(&program.as_str())
        // The subcommand is plain by construction (see `subcommand_like`).
        && !program.contains(['$', '*', '?', '[', '`', '<', '>', '{', '('])
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            let mut chars = name.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// The words from the program on, leading assignments skipped.
fn skip_assignments(words: &[String]) -> &[String] {
    let start = words.iter().take_while(|w| is_assignment(w)).count();
    &words[start..]
}

/// Words of a line split at whitespace and every shell metacharacter, quotes dropped.
fn loose_words(raw: &str) -> Vec<String> {
    raw.split(|c: char| c.is_whitespace() || ";&|()$<>`'\"{}\\".contains(c))
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A command line cut at its operators.
struct Split {
    segments: Vec<Segment>,
    substitution: bool,
    unterminated: bool,
}

struct Segment {
    text: String,
    plain: bool,
}

#[derive(PartialEq)]
enum Quote {
    None,
    Single,
    Double,
}

/// Cuts `command` at `&&`, `||`, `;`, `|`, `|&`, `&` and newlines outside quotes, noting
/// substitutions and the redirections that make a part not plain.
fn split_operators(command: &str) -> Split {
    let chars: Vec<char> = command.chars().collect();
    let mut out = Split {
        segments: Vec::new(),
        substitution: false,
        unterminated: false,
    };
    let mut current = Segment {
        text: String::new(),
        plain: true,
    };
    let mut quote = Quote::None;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let prev = i.checked_sub(1).map(|p| chars[p]);
        match quote {
            Quote::Single => {
                current.text.push(c);
                if c == '\'' {
                    quote = Quote::None;
                }
            }
            Quote::Double => {
                current.text.push(c);
                match c {
                    '\\' => {
                        if let Some(n) = next {
                            current.text.push(n);
                            i += 1;
                        }
                    }
                    '"' => quote = Quote::None,
                    '`' => out.substitution = true,
                    '$' if next == Some('(') => out.substitution = true,
                    _ => {}
                }
            }
            Quote::None => {
                let word_start = prev.is_none_or(|p| p.is_whitespace() || ";&|()".contains(p));
                let mut cut = false;
                match c {
                    '#' if word_start => {
                        while i + 1 < chars.len() && chars[i + 1] != '\n' {
                            i += 1;
                        }
                    }
                    '\\' => {
                        current.text.push(c);
                        if let Some(n) = next {
                            current.text.push(n);
                            i += 1;
                        }
                    }
                    '\'' => {
                        quote = Quote::Single;
                        current.text.push(c);
                    }
                    '"' => {
                        quote = Quote::Double;
                        current.text.push(c);
                    }
                    '`' => {
                        out.substitution = true;
                        current.text.push(c);
                    }
                    '$' | '<' | '>' if next == Some('(') => {
                        out.substitution = true;
                        current.text.push(c);
                    }
                    '(' | ')' => {
                        current.plain = false;
                        current.text.push(c);
                    }
                    '>' => {
                        if redirects_to_file(&chars, i) {
                            current.plain = false;
                        }
                        current.text.push(c);
                    }
                    '<' => {
                        // `<<` (here-document, here-string) and `<>` (opens for writing).
                        if matches!(next, Some('<') | Some('>')) {
                            current.plain = false;
                        }
                        current.text.push(c);
                    }
                    '|' if prev == Some('>') => current.text.push(c),
                    '|' => {
                        cut = true;
                        if matches!(next, Some('|') | Some('&')) {
                            i += 1;
                        }
                    }
                    '&' if matches!(prev, Some('>') | Some('<')) || next == Some('>') => {
                        current.text.push(c);
                    }
                    '&' => {
                        cut = true;
                        if next == Some('&') {
                            i += 1;
                        }
                    }
                    ';' | '\n' => cut = true,
                    _ => current.text.push(c),
                }
                if cut {
                    let done = std::mem::replace(
                        &mut current,
                        Segment {
                            text: String::new(),
                            plain: true,
                        },
                    );
                    out.segments.push(done);
                }
            }
        }
        i += 1;
    }
    out.unterminated = quote != Quote::None;
    out.segments.push(current);
    out
}

/// Whether the `>` at `at` sends output to a file (not a descriptor, not `/dev/null`).
fn redirects_to_file(chars: &[char], at: usize) -> bool {
    let mut j = at + 1;
    if matches!(chars.get(j), Some('>') | Some('|')) {
        j += 1;
    }
    if chars.get(j) == Some(&'&') {
        j += 1;
        // `>&2`, `2>&1`, `>&-`: descriptors, not files.
        if chars
            .get(j)
            .is_some_and(|c| c.is_ascii_digit() || *c == '-')
        {
            return false;
        }
    }
    while chars.get(j).is_some_and(|c| *c == ' ' || *c == '\t') {
        j += 1;
    }
    let target: String = chars[j.min(chars.len())..]
        .iter()
        .take_while(|c| !c.is_whitespace() && !";&|<>()".contains(**c))
        .collect();
    target != "/dev/null"
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|w| (*w).to_owned()).collect()
    }

    fn prefixes(command: &str) -> Option<Vec<Vec<String>>> {
        CommandLine::parse(command).prefixes()
    }

    #[test]
    fn the_prefix_is_the_program_and_its_subcommand() {
        assert_eq!(
            prefixes("cargo test --lib"),
            Some(vec![words(&["cargo", "test"])])
        );
        assert_eq!(
            prefixes("git status"),
            Some(vec![words(&["git", "status"])])
        );
        assert_eq!(prefixes("ls -la src"), Some(vec![words(&["ls"])]));
        assert_eq!(prefixes("cat README.md"), Some(vec![words(&["cat"])]));
    }

    #[test]
    fn compound_commands_have_one_prefix_per_part() {
        assert_eq!(
            prefixes("cargo build && cargo test; ls | wc -l || echo 'a && b' &\ngit status"),
            Some(vec![
                words(&["cargo", "build"]),
                words(&["cargo", "test"]),
                words(&["ls"]),
                words(&["wc"]),
                words(&["echo"]),
                words(&["git", "status"]),
            ])
        );
    }

    #[test]
    fn opaque_lines_have_no_prefix() {
        for command in [
            "ls $(rm -rf x)",
            "ls `rm -rf x`",
            "echo \"$(id)\"",
            "diff <(ls) <(ls a)",
            "ls > listing.txt",
            "ls >> listing.txt",
            "ls &> out",
            "cat <<EOF\nx\nEOF",
            "(cd a; rm b)",
            "FOO=1 cargo test",
            "if true; then rm x; fi",
            "echo 'unterminated",
            "$CMD arg",
            "",
        ] {
            assert_eq!(prefixes(command), None, "{command}");
        }
    }

    #[test]
    fn descriptor_and_null_redirections_keep_a_line_plain() {
        assert_eq!(
            prefixes("cargo test 2>&1 | tail -n 5"),
            Some(vec![words(&["cargo", "test"]), words(&["tail"])])
        );
        assert_eq!(prefixes("ls 2>/dev/null"), Some(vec![words(&["ls"])]));
        assert_eq!(prefixes("ls > /dev/null"), Some(vec![words(&["ls"])]));
    }

    #[test]
    fn quoted_operators_and_comments_do_not_split() {
        assert_eq!(
            prefixes("echo \"a; b\" 'c | d' # it's; rm -rf x"),
            Some(vec![words(&["echo"])])
        );
    }

    #[test]
    fn deny_matching_looks_past_wrappers_and_into_opaque_lines() {
        let push = words(&["git", "push"]);
        assert!(CommandLine::parse("git push origin").runs(&push));
        assert!(CommandLine::parse("ls && sudo git push").runs(&push));
        assert!(CommandLine::parse("FOO=1 env git push").runs(&push));
        assert!(CommandLine::parse("sudo -u root git push").runs(&push));
        assert!(CommandLine::parse("echo $(git push)").runs(&push));
        assert!(!CommandLine::parse("echo git push").runs(&push));
        assert!(!CommandLine::parse("git pull").runs(&push));
    }
}
