//! The shell-words splitter and permission rules: never panic; a line of plain words splits
//! like `split_whitespace` (the reference split).
#![no_main]

use std::path::Path;

use corvid_core::policy::rules::{PermissionRules, Subject};
use corvid_core::policy::shell_words::CommandLine;
use libfuzzer_sys::fuzz_target;

/// Words no shell treats specially at the start of a command.
fn plain_word(word: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until",
        "do", "done", "in", "function", "time", "coproc",
    ];
    !KEYWORDS.contains(&word)
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '-' | ','))
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // First line: the command; the other lines: rules, used both as allow and deny rules.
    let (command, rules) = text.split_once('\n').unwrap_or((text, ""));
    let line = CommandLine::parse(command);
    for part in line.parts() {
        let _ = part.plain();
        for word in part.words() {
            let _ = (word.text(), word.exact());
        }
    }
    let prefixes = line.prefixes();
    if let Some(prefixes) = &prefixes {
        let _ = line.allowed_by(prefixes.iter().map(Vec::as_slice));
        for prefix in prefixes {
            let _ = line.runs(prefix);
        }
    }
    let reference: Vec<&str> = command
        .split([' ', '\t'])
        .filter(|w| !w.is_empty())
        .collect();
    if !reference.is_empty() && reference.iter().all(|w| plain_word(w)) {
        let words: Vec<&str> = line
            .parts()
            .iter()
            .flat_map(|p| p.words().iter().map(|w| w.text()))
            .collect();
        assert_eq!(words, reference, "plain words split differently");
    }
    let rules: Vec<String> = rules.lines().map(str::to_owned).collect();
    if let Ok(rules) = PermissionRules::new(&rules, &rules) {
        for tool in ["run_shell_command", "write_file", "read_file", "web_fetch"] {
            let subject = Subject {
                tool,
                command: Some(&line),
                file: Some(Path::new(command)),
                domain: Some(command),
                paths: &[],
            };
            let _ = rules.denying(&subject);
            let _ = rules.allow(&subject);
        }
    }
});
