//! The read-only allowlist (issue 26 item 5): what runs unasked in `default` mode, and the
//! hostile spellings that must still be asked.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use corvid_core::policy::read_only::reads_only;
use corvid_core::policy::shell_words::CommandLine;

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/main.rs"), "fn main() {}\n").unwrap();
    dir
}

fn judged(lines: &[&str]) -> Vec<(String, bool)> {
    let ws = workspace();
    let cwd = ws.path().canonicalize().unwrap();
    lines
        .iter()
        .map(|l| ((*l).to_owned(), reads_only(&CommandLine::parse(l), &cwd)))
        .collect()
}

fn assert_all(lines: &[&str], expected: bool) {
    let wrong: Vec<(String, bool)> = judged(lines)
        .into_iter()
        .filter(|(_, got)| *got != expected)
        .collect();
    assert_eq!(wrong, Vec::new(), "these lines were judged wrongly");
}

#[test]
fn commands_that_only_read_inside_the_workspace_run_unasked() {
    assert_all(
        &[
            "ls",
            "ls -la src",
            "cat src/main.rs",
            "head -n 20 src/main.rs",
            "tail -n 5 src/main.rs",
            "wc -l src/main.rs",
            "rg -n 'fn main' src",
            "grep -rn main .",
            "find . -name '*.rs' -type f",
            "git status --short",
            "git log --oneline -n 5",
            "git diff HEAD -- src",
            "git show HEAD:src/main.rs",
            "git branch",
            "git branch -a -v",
            "git branch --list 'feat*'",
            "pwd",
            "echo hello",
            "which cargo",
            "file src/main.rs",
            "stat src/main.rs",
            "du -sh .",
            "df -h",
            "sort src/main.rs | uniq -c",
            "cat src/main.rs | grep main | wc -l",
            "ls src && git status",
            "rg main 2>/dev/null",
            "wc -l < src/main.rs",
            "cat ./src/../src/main.rs",
        ],
        true,
    );
}

#[test]
fn hostile_spellings_of_read_only_programs_are_still_asked() {
    assert_all(
        &[
            "find . -exec rm {} \\;",
            "find . -execdir rm {} +",
            "find . -delete",
            "find . -fprint out.txt",
            "find -L . -name x",
            "git -c core.pager=sh log",
            "git -c core.fsmonitor=x status",
            "git -C .. log",
            "git --git-dir=x log",
            "git diff --output=x",
            "git diff --out=x",
            "git log --ext-diff",
            "git show --textconv HEAD",
            "git branch new-branch",
            "git branch -D main",
            "git branch -m old new",
            "git commit -m x",
            "git checkout .",
            "rg --pre cat main",
            "rg --pre=sh main",
            "rg -z main",
            "rg --search-zip main",
            "rg --hostname-bin=sh main",
            "sort -o file src/main.rs",
            "sort --output=file src/main.rs",
            "sort -ro file src/main.rs",
            "sort --compress-program=sh src/main.rs",
            "uniq src/main.rs out.txt",
            "cat x > y",
            "cat x >> y",
            "echo hi > src/main.rs",
            "cat $(echo src/main.rs)",
            "cat `echo src/main.rs`",
            "cat <(ls)",
            "ls; rm x",
            "ls && rm -rf src",
            "echo hi | sh",
            "echo hi | bash",
            "ls | xargs rm",
            "tail -f src/main.rs",
            "tail -F src/main.rs",
            "tail -nf 5 src/main.rs",
            "tail --follow src/main.rs",
            "FOO=1 ls",
            "GIT_PAGER=sh git log",
            "env ls",
            "sudo cat src/main.rs",
            "ls $HOME",
            "cat *",
            "cat ~/.ssh/id_rsa",
            "cat /etc/passwd",
            "cat ../secret",
            "cat src/../../secret",
            "grep -f/etc/passwd x",
            "rg --ignore-file=/etc/passwd x",
            "wc -l < /etc/passwd",
            "sort --files0-from=list",
            "file -C -m magic",
            "cat <<EOF\nhi\nEOF",
            "(ls)",
            "{ ls; }",
            "if true; then ls; fi",
            "/bin/ls",
            "./ls",
            "rm x",
            "",
            "ls 'unterminated",
        ],
        false,
    );
}

#[test]
fn a_link_in_the_workspace_pointing_outside_is_not_read_unasked() {
    let ws = workspace();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "key").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret"), ws.path().join("link")).unwrap();
    let cwd = ws.path().canonicalize().unwrap();

    assert!(!reads_only(&CommandLine::parse("cat link"), &cwd));
    assert!(reads_only(&CommandLine::parse("cat src/main.rs"), &cwd));
}
