//! A shell command line as approval rules see it: the simple commands it runs (split at
//! `&&`, `||`, `;`, `|`, `|&`, `&` and newlines, outside quotes), their words as bash passes
//! them, and whether a prefix rule may vouch for it at all. Commands run as `bash -c`, so the
//! lexer (`lexer`, `quoting`) follows bash: every quoting form, escapes, line
//! continuations, comments, here-documents and every redirection form.
//!
//! Conservative by design: a line with command or process substitution, arithmetic, a
//! parameter expansion beyond `${name}`, an output redirection to a file (or a `>&word` that
//! is not a descriptor), a here-document or here-string, a subshell or function definition, a
//! leading variable assignment, a shell keyword, a syntax error or a form the lexer does not
//! model is never allowed by a prefix (it is asked, or matched only as the exact same text).
//! A prefix only vouches for words whose text is certain (see [`Word::exact`]).

mod lexer;
mod quoting;

/// A parsed command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandLine {
    raw: String,
    parts: Vec<SimpleCommand>,
    /// Substitution, subshell, unterminated quote, syntax error or an unmodelled form
    /// somewhere in the line: no prefix vouches for any of it.
    opaque: bool,
}

/// One simple command of a line (`cargo test --lib`), redirections taken out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    words: Vec<Word>,
    /// The files its `<` redirections read (taken out of `words`).
    reads: Vec<Word>,
    /// A prefix may vouch for it (no file redirection, here-document, assignment, keyword).
    plain: bool,
}

/// One word of a simple command, after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    text: String,
    exact: bool,
}

impl Word {
    /// The word with quotes removed and escapes decoded (expansions left as written).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether [`Self::text`] is certainly what bash passes: no expansion (`$x`, globs,
    /// braces, `~`), no locale translation (`$"..."`) and no escape whose value bash decides
    /// by locale or that cuts the word (`$'\u00e9'`, `$'\0'`).
    pub fn exact(&self) -> bool {
        self.exact
    }
}

/// Words that start a compound command or change what the next word means.
const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
    "select", "function", "{", "}", "!", "[[", "]]", "time", "coproc", "in",
];

/// Programs that run the rest of their words as another command; deny rules look past them.
const WRAPPERS: &[&str] = &[
    "sudo", "env", "command", "exec", "nohup", "nice", "time", "builtin", "xargs", "doas",
];

impl CommandLine {
    /// Parses `command` (never fails: problems make the line opaque to prefix rules).
    pub fn parse(command: &str) -> Self {
        let scan = lexer::scan(command);
        let parts = scan
            .parts
            .into_iter()
            .map(|part| {
                let plain = part.plain && plain_words(&part.words);
                SimpleCommand {
                    words: part.words,
                    reads: part.reads,
                    plain,
                }
            })
            .collect();
        Self {
            raw: command.to_owned(),
            parts,
            opaque: scan.opaque,
        }
    }

    /// The command as written.
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// The simple commands of the line, in order (including any a prefix may not vouch for).
    pub fn parts(&self) -> &[SimpleCommand] {
        &self.parts
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

    /// Whether every part is allowed by one of `prefixes` (and the line is not opaque). The
    /// words a prefix covers must be exact: `git $x` is not `git status` even if `x=status`.
    pub fn allowed_by<'a>(&self, prefixes: impl Iterator<Item = &'a [String]> + Clone) -> bool {
        self.prefix_safe()
            && self
                .parts
                .iter()
                .all(|part| prefixes.clone().any(|p| part.starts_with_exactly(p)))
    }

    /// Whether some part runs `prefix`, looking past assignments and wrappers (`sudo`,
    /// `env`); in an opaque line, or one with inexact words, whether the words of `prefix`
    /// appear anywhere in a row. Deny rules use this: it errs towards matching.
    pub fn runs(&self, prefix: &[String]) -> bool {
        if prefix.is_empty() {
            return true;
        }
        let direct = self.parts.iter().any(|part| {
            let words: Vec<&str> = skip_assignments(&part.words)
                .iter()
                .map(Word::text)
                .collect();
            let wrapped = words.first().is_some_and(|w| WRAPPERS.contains(w));
            let at = |w: &[&str]| w.iter().zip(prefix).all(|(a, b)| *a == b.as_str());
            (words.len() >= prefix.len() && at(&words))
                || (wrapped && words.windows(prefix.len()).any(at))
        });
        if direct {
            return true;
        }
        let uncertain = self
            .parts
            .iter()
            .any(|p| !p.plain || p.words.iter().any(|w| !w.exact));
        if self.opaque || uncertain {
            let loose = loose_words(&self.raw);
            return loose.windows(prefix.len()).any(|w| w == prefix);
        }
        false
    }

    /// Every word of the line split at whitespace and shell metacharacters, quotes dropped:
    /// what a check that must err towards finding a path (redirection targets included)
    /// looks at.
    pub fn loose_words(&self) -> Vec<String> {
        loose_words(&self.raw)
    }

    /// Whether the line is fully modelled and every part is plain (no substitution, file
    /// redirection, here-document, assignment or keyword anywhere).
    pub fn prefix_safe(&self) -> bool {
        !self.opaque && !self.parts.is_empty() && self.parts.iter().all(|p| p.plain)
    }
}

impl SimpleCommand {
    /// The words, program first.
    pub fn words(&self) -> &[Word] {
        &self.words
    }

    /// The files its `<` redirections read.
    pub fn reads(&self) -> &[Word] {
        &self.reads
    }

    /// Whether a prefix rule may vouch for this command (given its line is not opaque).
    pub fn plain(&self) -> bool {
        self.plain
    }

    /// The program, plus its subcommand when the second word looks like one (`git status`,
    /// `cargo test`; `ls -la` is just `ls`). Only called on plain commands, whose program
    /// is exact.
    fn prefix(&self) -> Vec<String> {
        let take = match self.words.get(1) {
            Some(second) if second.exact && subcommand_like(&second.text) => 2,
            _ => 1,
        };
        self.words
            .iter()
            .take(take)
            .map(|w| w.text.clone())
            .collect()
    }

    fn starts_with_exactly(&self, prefix: &[String]) -> bool {
        self.words.len() >= prefix.len()
            && self
                .words
                .iter()
                .zip(prefix)
                .all(|(word, p)| word.exact && word.text == *p)
    }
}

fn subcommand_like(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// Whether the words of a part can be vouched for by their first words: the program is
/// exact, not a keyword and not an assignment.
fn plain_words(words: &[Word]) -> bool {
    let Some(program) = words.first() else {
        return false;
    };
    program.exact && !is_assignment(program) && !KEYWORDS.contains(&program.text.as_str())
}

/// `name=value`, `name+=value` (and, conservatively, anything spelled like them once
/// unquoted).
fn is_assignment(word: &Word) -> bool {
    match word.text.split_once('=') {
        Some((name, _)) => quoting::is_name(name.strip_suffix('+').unwrap_or(name)),
        None => false,
    }
}

/// The words from the program on, leading assignments skipped.
fn skip_assignments(words: &[Word]) -> &[Word] {
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
            // Forms the lexer does not model, or models as not plain.
            "git status ${x:-$(id)}",
            "git status ${x@P}",
            "git status $((1 + 2))",
            "git status $[1]",
            "coproc git status",
            "f() { git status; }",
            "{ git status; }",
            "git status >(ls)",
            "git status a<(ls)",
            "git status ;; ls",
            "; git status",
            "git status &&",
            "git status | | ls",
            "git status $'unterminated",
            "git status \"unterminated",
            "git status >",
            "X+=1 git status",
            "{fd}>/dev/null git status",
            "git status <<<x",
            "git status <>f",
            "git status < /dev/tcp/example.com/80",
            "git status >&$fd",
            "git status <&x",
            "git status >&2x",
            "git status 1>&foo",
            "git status &>>log",
            "git status >|log",
            "git status <<-EOF\n\tx\n\tEOF\nls",
            "git status\0; rm x",
        ] {
            assert_eq!(prefixes(command), None, "{command}");
        }
    }

    fn texts(command: &str) -> Vec<Vec<(String, bool)>> {
        CommandLine::parse(command)
            .parts()
            .iter()
            .map(|p| {
                p.words()
                    .iter()
                    .map(|w| (w.text.clone(), w.exact))
                    .collect()
            })
            .collect()
    }

    fn exact(list: &[&str]) -> Vec<(String, bool)> {
        list.iter().map(|w| ((*w).to_owned(), true)).collect()
    }

    #[test]
    fn words_are_what_bash_passes_in_every_quoting() {
        assert_eq!(
            texts(r#"p $'a\x41\'\\\101\u0042\z' "x\"\$\a\'" 'b\c' \;d"#),
            vec![exact(&["p", "aA'\\AB\\z", "x\"$\\a\\'", "b\\c", ";d"])]
        );
        // Line continuations join words and operators, but not inside single quotes.
        assert_eq!(
            texts("git sta\\\ntus 'a\\\nb' &\\\n& ls"),
            vec![exact(&["git", "status", "a\\\nb"]), exact(&["ls"])]
        );
        // Redirections are not words; a number glued to `>` is a descriptor.
        assert_eq!(
            texts("2>/dev/null git status 2x>/dev/null >&2 3>&1- <in"),
            vec![exact(&["git", "status", "2x"])]
        );
        // A comment ends at the next newline, even one after a backslash.
        assert_eq!(
            texts("git status \\\n#c \\\nls\nls -a"),
            vec![
                exact(&["git", "status"]),
                exact(&["ls"]),
                exact(&["ls", "-a"])
            ]
        );
        // A here-document's body is not a command.
        assert_eq!(
            texts("cat <<'EOF'\nrm -rf x\nEOF\nls"),
            vec![exact(&["cat"]), exact(&["ls"])]
        );
    }

    #[test]
    fn inexact_words_are_never_covered_by_a_prefix() {
        let rule = words(&["git", "status"]);
        let allowed = |command: &str| {
            CommandLine::parse(command).allowed_by(std::iter::once(rule.as_slice()))
        };
        assert!(allowed("git status --short"));
        assert!(allowed(r"git $'st\x61tus' $x"));
        for command in [
            r#"git $"status""#,
            "git $x",
            "git st*",
            r"git $'st\u00e1tus'",
            r"git $'status\0x'",
            r"git $'\cstatus'",
        ] {
            assert!(!allowed(command), "{command}");
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
