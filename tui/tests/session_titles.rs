//! `/resume` shows each session's title (the fast model's), else its first prompt; titles
//! come from a model, so they are drawn without control characters.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod common;

use common::session;
use corvid_tui::picker::SessionPicker;
use pretty_assertions::assert_eq;

#[test]
fn the_resume_picker_shows_titles_searches_them_and_falls_back_to_the_first_prompt() {
    let mut titled = session("aaaa1111-titled", 30, "the parser test fails now and then");
    titled.title = Some("Fix the flaky\x1b]0;pwned\x07 parser test".into());
    let untitled = session("bbbb2222-plain", 10, "Explain the build");
    let mut picker = SessionPicker::new(vec![titled, untitled]);
    let rows: Vec<String> = picker
        .lines(70)
        .iter()
        .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
        .collect();
    assert!(
        rows[1].contains("Fix the flaky]0;pwned parser test"),
        "{rows:#?}"
    );
    assert!(rows[2].contains("Explain the build"), "{rows:#?}");
    assert!(
        rows.iter().all(|r| !r.chars().any(char::is_control)),
        "{rows:#?}"
    );
    picker.query = "flaky".into();
    let ids: Vec<&str> = picker.matches().iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, vec!["aaaa1111-titled"]);
}
