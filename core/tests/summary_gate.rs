//! The summaries gate (SPEC §7.1): environment first, then the setting, and never without a
//! fast model.

use corvid_core::summary::{CORVID_ENV, QWEN_ENV, summaries_enabled};
use pretty_assertions::assert_eq;

/// One row: corvid's variable, the qwen variable, the setting, a fast model configured.
type Row = (
    Option<&'static str>,
    Option<&'static str>,
    Option<bool>,
    bool,
);

fn decide((corvid, qwen, setting, fast): Row) -> bool {
    let env = |name: &str| match name {
        CORVID_ENV => corvid.map(str::to_owned),
        QWEN_ENV => qwen.map(str::to_owned),
        _ => None,
    };
    summaries_enabled(env, setting, fast)
}

fn check(rows: &[(Row, bool)]) {
    let actual: Vec<(Row, bool)> = rows.iter().map(|&(row, _)| (row, decide(row))).collect();
    assert_eq!(actual, rows.to_vec());
}

#[test]
fn the_variable_names_are_the_documented_ones() {
    assert_eq!(
        (CORVID_ENV, QWEN_ENV),
        (
            "CORVID_EMIT_TOOL_USE_SUMMARIES",
            "QWEN_CODE_EMIT_TOOL_USE_SUMMARIES"
        )
    );
}

#[test]
fn without_overrides_the_setting_decides_and_defaults_to_on() {
    check(&[
        ((None, None, None, true), true),
        ((None, None, Some(true), true), true),
        ((None, None, Some(false), true), false),
    ]);
}

#[test]
fn without_a_fast_model_nothing_turns_summaries_on() {
    check(&[
        ((None, None, None, false), false),
        ((None, None, Some(true), false), false),
        ((Some("1"), None, None, false), false),
        ((Some("true"), None, Some(true), false), false),
        ((None, Some("1"), Some(true), false), false),
    ]);
}

#[test]
fn corvids_variable_overrides_the_setting_with_exact_values() {
    check(&[
        ((Some("0"), None, Some(true), true), false),
        ((Some("false"), None, Some(true), true), false),
        ((Some("0"), None, None, true), false),
        ((Some("1"), None, Some(false), true), true),
        ((Some("true"), None, Some(false), true), true),
    ]);
}

#[test]
fn the_qwen_variable_overrides_the_setting_with_exact_values() {
    check(&[
        ((None, Some("0"), Some(true), true), false),
        ((None, Some("false"), None, true), false),
        ((None, Some("1"), Some(false), true), true),
        ((None, Some("true"), Some(false), true), true),
    ]);
}

#[test]
fn other_values_fall_through_to_the_setting() {
    check(&[
        ((Some("TRUE"), None, Some(false), true), false),
        ((Some("False"), None, None, true), true),
        ((Some("yes"), None, Some(false), true), false),
        ((Some("no"), None, None, true), true),
        ((Some(" 1"), None, Some(false), true), false),
        ((Some("0 "), None, Some(true), true), true),
        ((Some(""), None, Some(false), true), false),
        ((Some("2"), None, Some(true), true), true),
        ((None, Some("on"), Some(false), true), false),
        ((None, Some("off"), Some(true), true), true),
        ((Some("maybe"), Some("enabled"), None, true), true),
        ((Some("maybe"), Some("enabled"), Some(false), true), false),
    ]);
}

#[test]
fn corvids_variable_wins_when_both_hold_valid_values() {
    check(&[
        ((Some("1"), Some("0"), None, true), true),
        ((Some("true"), Some("false"), Some(false), true), true),
        ((Some("0"), Some("1"), None, true), false),
        ((Some("false"), Some("true"), Some(true), true), false),
    ]);
}

#[test]
fn an_invalid_corvid_value_falls_through_to_the_qwen_variable() {
    check(&[
        ((Some("maybe"), Some("0"), Some(true), true), false),
        ((Some("yes"), Some("1"), Some(false), true), true),
        ((Some(""), Some("false"), None, true), false),
    ]);
}
