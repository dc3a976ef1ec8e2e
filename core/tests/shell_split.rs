//! The command splitter against bash itself (issue 25 finding 4): on generated command lines
//! (words in every quoting form with escapes, line continuations, operators, comments and
//! redirections), every line the splitter would let a prefix rule allow must run in bash as
//! exactly the simple commands the splitter saw, with the same words.
//!
//! bash runs each line as corvid runs it (`bash -c LINE`), but with nothing it could run: a
//! `BASH_ENV` file empties `PATH`, disables every builtin but `printf`, `return` and `wait`,
//! turns globbing off and defines `command_not_found_handle`, which records the argv of
//! each command in a file of its own. A line a rule could allow must also write no file.
//! Each line runs twice, with every command succeeding
//! and then failing, so both sides of every `&&` and `||` run once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use corvid_core::policy::shell_words::{CommandLine, SimpleCommand};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};

const BASH_ENV: &str = r#"set -f
command_not_found_handle() { printf '%s\0' "$@" > "$CORVID_ARGV_DIR/$BASHPID"; return "$CORVID_STATUS"; }
trap wait EXIT
for b in $(compgen -b); do
  case $b in printf|return|wait|enable) ;; *) enable -n "$b" ;; esac
done
enable -n enable
PATH=/nonexistent-corvid-test
"#;

/// A scratch folder where bash runs the lines, with its start-up file.
struct Bash {
    dir: tempfile::TempDir,
    bash_env: PathBuf,
}

impl Bash {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let bash_env = dir.path().join("bash_env.sh");
        std::fs::write(&bash_env, BASH_ENV).unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir(&work).unwrap();
        // Lines read from `in` (`< in`).
        std::fs::write(work.join("in"), "input\n").unwrap();
        Self { dir, bash_env }
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new("bash");
        cmd.current_dir(self.dir.path().join("work"))
            .env_clear()
            // Where to find bash; the start-up file then empties it.
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("LC_ALL", "C")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd
    }

    /// Whether bash parses the whole line.
    fn parses(&self, line: &str) -> bool {
        let status = self.command().args(["-n", "-c", line]).status();
        status
            .expect("bash must be installed to run this test")
            .success()
    }

    /// The argv of every command bash runs for `line`, every command exiting with `status`,
    /// and whether bash reported no error (a failed redirection skips its command).
    fn run(&self, line: &str, status: u8) -> (Vec<Vec<String>>, bool) {
        let out = tempfile::tempdir().unwrap();
        // The exit status is the commands' own; only what ran matters.
        let output = self
            .command()
            .args(["-c", line])
            .env("BASH_ENV", &self.bash_env)
            .env("CORVID_ARGV_DIR", out.path())
            .env("CORVID_STATUS", status.to_string())
            .stderr(Stdio::piped())
            .output()
            .expect("bash must be installed to run this test");
        (read_argvs(out.path()), output.stderr.is_empty())
    }

    /// The files the lines wrote in the work folder (removed), beside `in`.
    fn written(&self) -> Vec<String> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(self.dir.path().join("work")).unwrap() {
            let entry = entry.unwrap();
            if entry.file_name() != "in" {
                names.push(entry.file_name().to_string_lossy().into_owned());
                std::fs::remove_file(entry.path()).unwrap();
            }
        }
        names
    }
}

fn read_argvs(dir: &Path) -> Vec<Vec<String>> {
    let mut argvs = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        let mut words: Vec<String> = bytes
            .split(|b| *b == 0)
            .map(|w| String::from_utf8_lossy(w).into_owned())
            .collect();
        // `printf '%s\0'` ends every word with NUL: the last piece is empty.
        words.pop();
        argvs.push(words);
    }
    argvs
}

/// Whether bash's `argv` is the command the splitter saw: every word up to the first inexact
/// one is the same, and with no inexact word, all of them.
fn same_command(part: &SimpleCommand, argv: &[String]) -> bool {
    let words = part.words();
    let exact = words.iter().take_while(|w| w.exact()).count();
    argv.len() >= exact
        && words[..exact]
            .iter()
            .zip(argv)
            .all(|(w, a)| w.text() == a.as_str())
        && (exact < words.len() || argv.len() == words.len())
}

fn show(part: &SimpleCommand) -> Vec<(String, bool)> {
    part.words()
        .iter()
        .map(|w| (w.text().to_owned(), w.exact()))
        .collect()
}

/// Checks `line` against bash when a prefix rule could allow it; returns whether it could.
fn check(bash: &Bash, line: &str) -> Result<bool, TestCaseError> {
    let parsed = CommandLine::parse(line);
    if parsed.prefixes().is_none() {
        // The splitter asks: whatever bash does, no rule vouches for it.
        return Ok(false);
    }
    let parts = parsed.parts();
    let mut ran_any = vec![false; parts.len()];
    let mut quiet = true;
    for status in [0, 1] {
        let (ran, no_error) = bash.run(line, status);
        quiet &= no_error;
        // Each command bash ran is a distinct part (a matching of argvs to parts).
        let candidates: Vec<Vec<usize>> = ran
            .iter()
            .map(|argv| {
                (0..parts.len())
                    .filter(|&i| same_command(&parts[i], argv))
                    .collect()
            })
            .collect();
        let mut owner = vec![None; parts.len()];
        for (a, argv) in ran.iter().enumerate() {
            let mut visited = vec![false; parts.len()];
            if !augment(a, &candidates, &mut visited, &mut owner) {
                return Err(TestCaseError::fail(format!(
                    "bash ran {argv:?} for {line:?}, which the splitter did not see; it saw {:?}",
                    parts.iter().map(show).collect::<Vec<_>>()
                )));
            }
        }
        for list in &candidates {
            for &i in list {
                ran_any[i] = true;
            }
        }
    }
    let written = bash.written();
    if !written.is_empty() {
        return Err(TestCaseError::fail(format!(
            "bash wrote {written:?} for {line:?}, which the splitter would allow"
        )));
    }
    // A line bash cannot parse runs only up to its error, and a failed redirection skips its
    // command; a line that runs without an error runs every part.
    if quiet
        && bash.parses(line)
        && let Some(missing) = (0..parts.len()).find(|&i| !ran_any[i])
    {
        return Err(TestCaseError::fail(format!(
            "the splitter saw {:?} in {line:?}, which bash never ran",
            show(&parts[missing])
        )));
    }
    Ok(true)
}

/// Kuhn's augmenting path: gives argv `a` a part among its `candidates`, moving earlier
/// argvs to other parts when needed.
fn augment(
    a: usize,
    candidates: &[Vec<usize>],
    visited: &mut [bool],
    owner: &mut [Option<usize>],
) -> bool {
    for &part in &candidates[a] {
        if visited[part] {
            continue;
        }
        visited[part] = true;
        let free = match owner[part] {
            None => true,
            Some(other) => augment(other, candidates, visited, owner),
        };
        if free {
            owner[part] = Some(a);
            return true;
        }
    }
    false
}

/// One character of a program name in some quoting.
fn quoted_char(c: char) -> BoxedStrategy<String> {
    let code = u32::from(c);
    prop_oneof![
        4 => Just(c.to_string()),
        1 => Just(format!("\\{c}")),
        1 => Just(format!("'{c}'")),
        1 => Just(format!("\"{c}\"")),
        1 => Just(format!("$'{c}'")),
        1 => Just(format!("$'\\x{code:02x}'")),
        1 => Just(format!("$'\\{code:o}'")),
        1 => Just(format!("$'\\u{code:04x}'")),
        1 => Just(format!("{c}\\\n")),
    ]
    .boxed()
}

/// A program bash will not find (builtins are disabled), spelled in mixed quoting.
fn program() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "git", "ls", "cargo", "p1", "x-y", "echo", "eval", "exec", "cd",
    ])
    .prop_flat_map(|name| {
        name.chars()
            .map(quoted_char)
            .collect::<Vec<_>>()
            .prop_map(|pieces| pieces.concat())
    })
}

/// Text inside double quotes (or `$"..."`): operators and quotes of other kinds, escapes.
fn double_quoted_body() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            4 => "[a-z0-9 ;&|<>'#()*~{},=-]",
            1 => Just("\\\"".to_owned()),
            1 => Just("\\\\".to_owned()),
            1 => Just("\\$".to_owned()),
            1 => Just("\\`".to_owned()),
            1 => Just("\\a".to_owned()),
            1 => Just("\\'".to_owned()),
            1 => Just("\\\n".to_owned()),
            1 => Just("$".to_owned()),
        ],
        0..6,
    )
    .prop_map(|p| p.concat())
}

/// Text inside `$'...'`: escapes of every kind, some whose value bash leaves to the locale.
fn ansi_c_body() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            4 => "[a-z0-9 ;&|<>\"#()$`-]",
            3 => Just("\\'".to_owned()),
            1 => Just("\\\\".to_owned()),
            1 => Just("\\\"".to_owned()),
            1 => prop::sample::select(vec![
                "\\n", "\\t", "\\a", "\\e", "\\?", "\\z", "\\8", "\\x", "\\x3b", "\\x7", "\\101",
                "\\47", "\\u0041", "\\u3b", "\\U00000027", "\\u00e9", "\\0", "\\c", "\\ca",
                "\\\n", "\\x7f", "\\1",
            ])
            .prop_map(str::to_owned),
        ],
        0..6,
    )
    .prop_map(|p| p.concat())
}

/// One piece of an argument.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => "[a-z0-9._/=,:%+@^-]{1,5}",
        3 => "[a-z ;&|<>\"#()$`*\\\\\n-]{0,5}".prop_map(|s| format!("'{s}'")),
        3 => double_quoted_body().prop_map(|s| format!("\"{s}\"")),
        4 => ansi_c_body().prop_map(|s| format!("$'{s}'")),
        1 => double_quoted_body().prop_map(|s| format!("$\"{s}\"")),
        2 => "[;&|'\" <>()#$*\\\\a-z]".prop_map(|c| format!("\\{c}")),
        1 => Just("\\\n".to_owned()),
        // Quotes and backslashes that a scanner not following each quote kind's escapes
        // would pair up differently.
        2 => prop::sample::select(vec![
            r"$'\''", r"'\'", r"$'\\'", r#""\\""#, r#"$"\"""#, r#"'"'"#, r#""'""#, r"\'",
            r#"\""#, r"$'\\\''",
        ])
        .prop_map(str::to_owned),
        1 => prop::sample::select(vec![
            "$x", "${x}", "${#x}", "$1", "$?", "*", "~", "{a,b}", "#c", "$(p1)", "`p1`",
            "${x:-y}", "$((1))", "=", "$", "[a]", "\\",
        ])
        .prop_map(str::to_owned),
    ]
}

fn word() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 1..4).prop_map(|p| p.concat())
}

/// Redirections, plain and not: descriptors, `/dev/null`, files, here-strings, odd forms.
/// None closes 0, 1 or 2 (a later `2>&1` would fail and the command not run at all).
fn redirection() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        ">/dev/null",
        "2>/dev/null",
        "2>&1",
        ">&2",
        "1>&2",
        "3>&-",
        "4<&-",
        "<&0",
        "0<&0",
        "5>&1",
        ">& 2",
        "&>/dev/null",
        "&>>/dev/null",
        ">>/dev/null",
        ">|/dev/null",
        "< in",
        "<in",
        "<\"in\"",
        "2>&1x",
        ">&2x",
        "> out",
        "<<<w",
        "<>f",
        "{fd}>/dev/null",
        ">/dev/nul\\\nl",
        ">\"/dev/null\"",
        "2\\\n>/dev/null",
        ">&\\\n2",
        "12>/dev/null",
        ">/dev/null2",
    ])
    .prop_map(str::to_owned)
}

/// A simple command: a program, then words and redirections, some glued together.
fn simple_command() -> impl Strategy<Value = String> {
    let item = prop_oneof![
        3 => word().prop_map(|w| (w, false)),
        1 => redirection().prop_map(|r| (r, true)),
    ];
    let sep = prop_oneof![6 => Just(" "), 1 => Just(""), 1 => Just("\t"), 1 => Just(" \\\n")];
    (
        program(),
        prop::collection::vec((sep, item), 0..5),
        prop::option::weighted(0.1, redirection()),
    )
        .prop_map(|(program, items, lead)| {
            let mut out = lead.map(|r| format!("{r} ")).unwrap_or_default();
            out.push_str(&program);
            // Glued to the program, a word would change its name, and glued to a
            // redirection's target, a file name (`< in^`, missing) or descriptor (`2>&12`,
            // not open): keep one blank after those.
            // Nor before `3>&-`: glued to `=`, it would close standard output instead.
            let mut glue = false;
            for (sep, (item, redirects)) in items {
                let digit_led = redirects && item.starts_with(|c: char| c.is_ascii_digit());
                out.push_str(if (glue && !digit_led) || !sep.is_empty() {
                    sep
                } else {
                    " "
                });
                out.push_str(&item);
                glue = !redirects;
                // A comment ends the command; words after it would be redirections alone
                // on the next line, which succeed whatever the commands do.
                if item.starts_with('#') {
                    break;
                }
            }
            out
        })
}

fn operator() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        ";",
        " ; ",
        " && ",
        "||",
        " | ",
        "|&",
        " & ",
        "\n",
        " &\\\n& ",
        ";\n",
        " &&\n",
        "|\n",
        "\n\n",
        " # note\n",
    ])
}

fn command_line() -> impl Strategy<Value = String> {
    (
        simple_command(),
        prop::collection::vec((operator(), simple_command()), 0..4),
        prop::sample::select(vec!["", ";", " &", "\n", " # end"]),
    )
        .prop_map(|(first, rest, end)| {
            let mut line = first;
            for (op, cmd) in rest {
                line.push_str(op);
                line.push_str(&cmd);
            }
            line.push_str(end);
            line
        })
}

#[test]
fn the_splitter_agrees_with_bash_on_every_line_it_would_allow() {
    let bash = Bash::new();
    // The same lines on every run (no flaky failures); `SHELL_SPLIT_CASES=5000` explores
    // further.
    let cases = std::env::var("SHELL_SPLIT_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(300);
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let allowed = std::sync::atomic::AtomicUsize::new(0);
    let compound = std::sync::atomic::AtomicUsize::new(0);
    runner
        .run(&command_line(), |line| {
            if check(&bash, &line)? {
                allowed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if CommandLine::parse(&line).parts().len() > 1 {
                    compound.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
            Ok(())
        })
        .unwrap();
    // The comparison means something only if many lines are ones a rule could allow.
    let (allowed, compound) = (allowed.into_inner(), compound.into_inner());
    assert!(
        allowed >= 100 && compound >= 50,
        "only {allowed} generated lines could be allowed ({compound} compound)"
    );
    // Hand-picked lines a rule must still allow, each checked against bash too.
    for line in [
        "git status",
        r"git status \;touch x",
        "git sta\\\ntus --short 2>&1 | ls &\\\n& cargo t",
        r#"git $'st\x61tus' "a;b" $'c\'d' 'e"f' >&2 # x; y"#,
        "git status 2x>/dev/null 3>&1- <&0 && p1 >& 2 || p2 ;\n\np3 &",
    ] {
        assert!(check(&bash, line).unwrap(), "{line:?} should be allowed");
    }
}
