//! The allowlist itself: which programs only read, and which of their options would make them
//! write a file, run another program or never end. Unknown programs are not read-only; a
//! program is listed only when every option it has was looked at.

use super::super::shell_words::Word;

/// Programs that only read whatever their options (GNU coreutils and friends).
const PLAIN: &[&str] = &[
    "ls",
    "cat",
    "head",
    "wc",
    "pwd",
    "echo",
    "which",
    "stat",
    "du",
    "df",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "nl",
    "cut",
    "tr",
    "true",
    "false",
    "whoami",
    "uname",
    "cmp",
    "diff",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "od",
    "rev",
    "tac",
    "comm",
    "paste",
    "fold",
    "expand",
    "unexpand",
    "id",
];

/// `git` subcommands that only read, with `branch` limited to listing.
const GIT_READS: &[&str] = &["status", "log", "diff", "show", "branch"];

/// `git branch` options that only list.
const GIT_BRANCH_LISTS: &[&str] = &[
    "-a",
    "--all",
    "-r",
    "--remotes",
    "-v",
    "-vv",
    "--verbose",
    "-l",
    "--list",
    "--show-current",
    "--no-color",
    "--color",
    "--no-column",
];

/// `find` primaries that delete, run programs, write files or follow links out.
const FIND_ACTS: &[&str] = &[
    "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
    "-L", "-follow",
];

/// Whether the simple command `words` (program first) only reads.
pub(super) fn reads_only(words: &[Word]) -> bool {
    let Some((program, args)) = words.split_first() else {
        return false;
    };
    let args: Vec<&str> = args.iter().map(Word::text).collect();
    // No option anywhere may read a list of files to open from a file: the names in it are
    // never checked against the workspace.
    if args.iter().any(|a| a.starts_with("--files0-from")) {
        return false;
    }
    let name = program.text();
    if PLAIN.contains(&name) {
        return true;
    }
    match name {
        "grep" | "egrep" | "fgrep" => !args
            .iter()
            .any(|a| short_has(a, 'R') || *a == "--dereference-recursive"),
        "rg" => !args.iter().any(|a| {
            long_is(a, "--pre")
                || long_is(a, "--pre-glob")
                || long_is(a, "--hostname-bin")
                || long_is(a, "--search-zip")
                || long_is(a, "--follow")
                || short_has(a, 'z')
                || short_has(a, 'L')
        }),
        "find" => !args.iter().any(|a| FIND_ACTS.contains(a)),
        "tail" => !args
            .iter()
            .any(|a| short_has(a, 'f') || short_has(a, 'F') || long_is(a, "--follow")),
        "sort" => !args.iter().any(|a| {
            short_has(a, 'o')
                || short_has(a, 'T')
                || long_is(a, "--output")
                || long_is(a, "--temporary-directory")
                || long_is(a, "--compress-program")
        }),
        "uniq" => uniq_reads_only(&args),
        "file" => !args
            .iter()
            .any(|a| short_has(a, 'C') || long_is(a, "--compile")),
        "git" => git_reads_only(&args),
        _ => false,
    }
}

/// `uniq [options] [input]`: a second operand is the file it writes.
fn uniq_reads_only(args: &[&str]) -> bool {
    let mut operands = 0;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match *arg {
            // Options whose value is the next word.
            "-f" | "-s" | "-w" => {
                iter.next();
            }
            "--" => operands += iter.len(),
            a if a.starts_with('-') && a.len() > 1 => {}
            _ => operands += 1,
        }
        if operands > 1 {
            return false;
        }
    }
    operands <= 1
}

/// `git SUBCOMMAND ...` with the subcommand first (no `-c`, `-C`, `--git-dir` or other global
/// option before it) and none of the options that write a file or run a program.
fn git_reads_only(args: &[&str]) -> bool {
    let Some((sub, rest)) = args.split_first() else {
        return false;
    };
    if !GIT_READS.contains(sub) {
        return false;
    }
    let writes_or_runs = rest.iter().any(|a| {
        long_is(a, "--output")
            || long_is(a, "--ext-diff")
            || long_is(a, "--textconv")
            || long_is(a, "--exec")
            || long_is(a, "--paginate")
            || long_is(a, "--open-files-in-pager")
    });
    if writes_or_runs {
        return false;
    }
    if *sub == "branch" {
        // Listing only: known listing options, and patterns only after `--list`/`-l`.
        let lists = rest.iter().any(|a| *a == "--list" || *a == "-l");
        return rest.iter().all(|a| {
            GIT_BRANCH_LISTS.contains(a)
                || a.starts_with("--sort=")
                || (lists && !a.starts_with('-'))
        });
    }
    true
}

/// Whether `arg` is the long option `name`, alone, with `=value`, or abbreviated the way
/// getopt and git accept (`--out` for `--output`): any prefix counts, erring towards a match.
fn long_is(arg: &str, name: &str) -> bool {
    let Some(given) = arg.strip_prefix("--") else {
        return false;
    };
    let given = given.split_once('=').map_or(given, |(g, _)| g);
    let full = name.trim_start_matches('-');
    !given.is_empty() && full.starts_with(given)
}

/// Whether `arg` is a cluster of short options (`-rnf`) holding `letter`.
fn short_has(arg: &str, letter: char) -> bool {
    match arg.strip_prefix('-') {
        Some(cluster) if !cluster.starts_with('-') => cluster.contains(letter),
        _ => false,
    }
}
