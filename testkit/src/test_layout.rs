//! The guard of the aggregated test binaries. The large crates set `autotests = false` and
//! compile their test files as modules of one `tests/it/main.rs` (one link instead of dozens),
//! so a test file added to `tests/` without a line there would compile into nothing and its
//! tests would silently never run. This check makes that a failing test instead.

use std::path::Path;

/// Panics naming every test file of the crate at `manifest_dir` (`tests/NAME.rs`, or
/// `tests/NAME/main.rs`) that neither `aggregator` (the text of `tests/it/main.rs`) includes
/// with `#[path = "../NAME.rs"]` nor the crate's Cargo.toml lists as a `[[test]]` path.
pub fn assert_every_test_file_is_compiled(manifest_dir: &str, aggregator: &str) {
    let manifest_dir = Path::new(manifest_dir);
    let manifest = std::fs::read_to_string(manifest_dir.join("Cargo.toml"))
        .unwrap_or_else(|e| panic!("reading {}/Cargo.toml: {e}", manifest_dir.display()));
    let tests = manifest_dir.join("tests");
    let entries =
        std::fs::read_dir(&tests).unwrap_or_else(|e| panic!("listing {}: {e}", tests.display()));
    let mut orphans = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = if name.ends_with(".rs") {
            name
        } else if name != "it" && entry.path().join("main.rs").is_file() {
            format!("{name}/main.rs")
        } else {
            continue;
        };
        let in_aggregator = aggregator.contains(&format!("#[path = \"../{rel}\"]"));
        let own_target = manifest.contains(&format!("path = \"tests/{rel}\""));
        if !in_aggregator && !own_target {
            orphans.push(rel);
        }
    }
    orphans.sort();
    assert!(
        orphans.is_empty(),
        "no test target compiles {orphans:?} in {}, so their tests never run: add \
         `#[path = \"../FILE\"] mod NAME;` to tests/it/main.rs, or a [[test]] entry to \
         Cargo.toml for a file that needs a process of its own (CONTRIBUTING.md, \
         \"Adding a test file\")",
        tests.display()
    );
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::assert_every_test_file_is_compiled;

    /// A crate folder with `tests/a.rs`, `tests/b.rs`, `tests/c/main.rs`, a helper folder and
    /// the aggregator, whose Cargo.toml gives `b.rs` its own target.
    fn crate_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let tests = dir.path().join("tests");
        for sub in ["it", "c", "common"] {
            std::fs::create_dir_all(tests.join(sub)).unwrap();
        }
        for file in ["a.rs", "b.rs", "c/main.rs", "common/mod.rs", "it/main.rs"] {
            std::fs::write(tests.join(file), "").unwrap();
        }
        let manifest = "[[test]]\nname = \"b\"\npath = \"tests/b.rs\"\n";
        std::fs::write(dir.path().join("Cargo.toml"), manifest).unwrap();
        dir
    }

    #[test]
    fn files_in_the_aggregator_or_with_their_own_target_pass() {
        let dir = crate_dir();
        let aggregator = "#[path = \"../a.rs\"]\nmod a;\n#[path = \"../c/main.rs\"]\nmod c;\n";
        assert_every_test_file_is_compiled(dir.path().to_str().unwrap(), aggregator);
    }

    #[test]
    #[should_panic(expected = "[\"c/main.rs\"]")]
    fn a_test_folder_left_out_of_the_aggregator_fails_by_name() {
        let dir = crate_dir();
        assert_every_test_file_is_compiled(dir.path().to_str().unwrap(), "#[path = \"../a.rs\"]");
    }

    #[test]
    #[should_panic(expected = "[\"a.rs\"]")]
    fn a_file_named_only_in_a_comment_is_not_taken_as_compiled() {
        let dir = crate_dir();
        let aggregator = "// a.rs\n#[path = \"../c/main.rs\"]\nmod c;\n";
        assert_every_test_file_is_compiled(dir.path().to_str().unwrap(), aggregator);
    }
}
