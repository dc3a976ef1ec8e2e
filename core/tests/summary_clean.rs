//! Cleaning a fast model's answer into a label: every rule of SPEC §7.3, in order.

use corvid_core::summary::clean_label;
use pretty_assertions::assert_eq;

/// Runs every case and compares the whole table at once, so one failure shows them all.
fn check(cases: &[(&str, Option<&str>)]) {
    let expected: Vec<(String, Option<String>)> = cases
        .iter()
        .map(|(raw, want)| (raw.to_string(), want.map(str::to_owned)))
        .collect();
    let actual: Vec<(String, Option<String>)> = cases
        .iter()
        .map(|(raw, _)| (raw.to_string(), clean_label(raw)))
        .collect();
    assert_eq!(actual, expected);
}

#[test]
fn a_well_formed_label_is_kept_as_is() {
    check(&[
        ("Read config.json", Some("Read config.json")),
        ("Fixed NPE in UserService", Some("Fixed NPE in UserService")),
        (
            "Searched for \"login\" in src/",
            Some("Searched for \"login\" in src/"),
        ),
        ("读取了配置文件", Some("读取了配置文件")),
        ("Fixed error handling", Some("Fixed error handling")),
        ("Error handling fixed", Some("Error handling fixed")),
        ("Labelled the flaky tests", Some("Labelled the flaky tests")),
    ]);
}

#[test]
fn empty_and_whitespace_answers_give_no_label() {
    check(&[
        ("", None),
        ("   ", None),
        ("\n\n\t \n", None),
        ("- ", None),
        ("****", None),
        ("\"\"", None),
        ("「」", None),
        ("Label:", None),
        ("Summary： ", None),
    ]);
}

#[test]
fn only_the_first_line_is_kept() {
    check(&[
        (
            "Read config.json\nI read it because you asked.",
            Some("Read config.json"),
        ),
        (
            "Ran failing tests\r\nThen stopped",
            Some("Ran failing tests"),
        ),
        ("\n\n  Searched in auth/  \nmore", Some("Searched in auth/")),
        ("  Read main.rs  ", Some("Read main.rs")),
    ]);
}

#[test]
fn a_leading_bullet_is_dropped() {
    check(&[
        ("- Read config.json", Some("Read config.json")),
        ("* Read config.json", Some("Read config.json")),
        ("• Read config.json", Some("Read config.json")),
        ("•Read config.json", Some("Read config.json")),
        ("-    Ran failing tests", Some("Ran failing tests")),
        ("\t- Ran failing tests", Some("Ran failing tests")),
        // Only one bullet goes; what follows is the label.
        ("- - Ran tests", Some("- Ran tests")),
        // Without a space, `-` is part of the text and `*` is emphasis.
        ("-Ran tests", Some("-Ran tests")),
    ]);
}

#[test]
fn up_to_three_emphasis_markers_are_dropped_from_each_end() {
    check(&[
        ("*Read config.json*", Some("Read config.json")),
        ("**Read config.json**", Some("Read config.json")),
        ("***Read config.json***", Some("Read config.json")),
        ("_Read config.json_", Some("Read config.json")),
        ("__Read config.json__", Some("Read config.json")),
        ("_*Read*_", Some("Read")),
        ("**Read config.json", Some("Read config.json")),
        ("Read config.json**", Some("Read config.json")),
        ("****Read****", Some("*Read*")),
        ("** Read config.json **", Some("Read config.json")),
        ("- **Read config.json**", Some("Read config.json")),
    ]);
}

#[test]
fn every_kind_of_surrounding_quote_is_dropped() {
    check(&[
        ("\"Read config.json\"", Some("Read config.json")),
        ("'Read config.json'", Some("Read config.json")),
        ("`Read config.json`", Some("Read config.json")),
        ("```Read config.json```", Some("Read config.json")),
        ("‘Read config.json’", Some("Read config.json")),
        ("“Read config.json”", Some("Read config.json")),
        ("「读取了配置」", Some("读取了配置")),
        ("『读取了配置』", Some("读取了配置")),
        ("「『读取了配置』」", Some("读取了配置")),
        ("\"'`Read`'\"", Some("Read")),
        ("\" Read config.json \"", Some("Read config.json")),
        // Each end on its own: an unbalanced quote goes too.
        ("\"Read config.json", Some("Read config.json")),
        ("Read config.json”", Some("Read config.json")),
        // Emphasis then quotes, in that order.
        ("**\"Read config.json\"**", Some("Read config.json")),
        ("- `Read config.json`", Some("Read config.json")),
    ]);
}

#[test]
fn quote_runs_are_dropped_only_up_to_ten_per_end() {
    let ten = "\"".repeat(10);
    let eleven = "\"".repeat(11);
    let ten_quoted = format!("{ten}Read{ten}");
    let eleven_quoted = format!("{eleven}Read{eleven}");
    let mixed_eleven = format!("{}Read", "'`".repeat(5) + "“");
    check(&[
        (ten_quoted.as_str(), Some("Read")),
        (eleven_quoted.as_str(), Some("\"Read\"")),
        (mixed_eleven.as_str(), Some("“Read")),
    ]);
}

#[test]
fn label_prefixes_are_dropped_in_any_case_with_either_colon() {
    check(&[
        ("Label: Read config.json", Some("Read config.json")),
        ("Summary: Read config.json", Some("Read config.json")),
        ("Result: Read config.json", Some("Read config.json")),
        ("Output: Read config.json", Some("Read config.json")),
        ("label: Read config.json", Some("Read config.json")),
        ("SUMMARY: Read config.json", Some("Read config.json")),
        ("rEsUlT: Read config.json", Some("Read config.json")),
        ("Label：Read config.json", Some("Read config.json")),
        ("Summary：读取了配置", Some("读取了配置")),
        ("Result： Read config.json", Some("Read config.json")),
        ("Output：Read config.json", Some("Read config.json")),
        ("Label:Read config.json", Some("Read config.json")),
        ("Summary:Read config.json", Some("Read config.json")),
        ("Result:Read config.json", Some("Read config.json")),
        ("Output:Read config.json", Some("Read config.json")),
        ("Label :  Read config.json", Some("Read config.json")),
        ("**Label: Read config.json**", Some("Read config.json")),
        ("- Summary: Ran failing tests", Some("Ran failing tests")),
        // A word that merely starts like a prefix stays.
        ("Outputs: cleaned", Some("Outputs: cleaned")),
        ("Results checked", Some("Results checked")),
    ]);
}

#[test]
fn errors_and_refusals_give_no_label() {
    check(&[
        ("API error: 500 Internal Server Error", None),
        ("Error: the request timed out", None),
        ("I cannot summarize this batch.", None),
        ("I can't summarize this batch.", None),
        ("I can\u{2019}t summarize this batch.", None),
        ("Unable to determine what happened", None),
        ("Failed to generate a label", None),
        ("Sorry, I need more context", None),
        ("Request failed with status 429", None),
        ("我无法总结这些工具调用", None),
        ("我不能提供标签", None),
        ("抱歉，我需要更多信息", None),
        ("无法生成摘要", None),
        // Refusals are recognised after the earlier steps have run.
        ("- \"Error: boom\"", None),
        ("Label: I cannot do that", None),
        ("**Sorry, no**", None),
        ("「抱歉」", None),
        ("error: lowercase still an error", None),
    ]);
}

#[test]
fn labels_are_capped_at_one_hundred_scalar_values() {
    let ascii_100 = "a".repeat(100);
    let ascii_150 = "a".repeat(150);
    let cjk_100 = "读".repeat(100);
    let cjk_101 = "读".repeat(101);
    let emoji_100 = "😀".repeat(100);
    let emoji_120 = "😀".repeat(120);
    let a99 = "a".repeat(99);
    let a98 = "a".repeat(98);
    let a97 = "a".repeat(97);
    // The family emoji is five scalar values (three people joined by two ZWJs) in one cluster.
    let family = "👨\u{200d}👩\u{200d}👧";
    let family_at_boundary = format!("{a97}{family}");
    let family_fits = format!("{}{family}", "a".repeat(95));
    // A flag is two regional indicators in one cluster.
    let flag_at_boundary = format!("{a99}🇩🇪");
    let flag_fits = format!("{a98}🇩🇪");
    let flag_fits_then_more = format!("{a98}🇩🇪 and more");
    let combining_at_boundary = format!("{a99}e\u{301}");
    let space_at_boundary = format!("{a99} bcd");
    check(
        &[
            (&ascii_100, Some(&ascii_100)),
            (&ascii_150, Some(&ascii_100)),
            (&cjk_100, Some(&cjk_100)),
            (&cjk_101, Some(&cjk_100)),
            (&emoji_120, Some(&emoji_100)),
            (&family_at_boundary, Some(&a97)),
            (&family_fits, Some(&family_fits)),
            (&flag_at_boundary, Some(&a99)),
            (&flag_fits, Some(&flag_fits)),
            (&flag_fits_then_more, Some(&flag_fits)),
            (&combining_at_boundary, Some(&a99)),
            (&space_at_boundary, Some(&a99)),
        ]
        .map(|(raw, want)| (raw.as_str(), want.map(String::as_str))),
    );
}

#[test]
fn the_cap_applies_after_the_prefix_is_gone() {
    let body = "b".repeat(100);
    let raw = format!("Label: {body}");
    assert_eq!(clean_label(&raw), Some(body));
}
