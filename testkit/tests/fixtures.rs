//! Loading the shared SSE fixtures.

use corvid_testkit::fixtures;
use pretty_assertions::assert_eq;

#[test]
fn every_fixture_loads_with_its_sidecar() {
    let all = fixtures::all();
    assert!(all.len() >= 20, "only {} fixtures found", all.len());
    for fixture in &all {
        assert!(!fixture.body.is_empty(), "{} is empty", fixture.name);
        assert!(fixture.expected.is_object(), "{} sidecar", fixture.name);
        assert_eq!(
            fixture.path,
            fixtures::dir().join(format!("{}.sse", fixture.name))
        );
    }
    let names: Vec<String> = all.iter().map(|f| f.name.clone()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    assert!(names.contains(&"openai/parallel_tool_calls".to_owned()));
}

#[test]
fn splitting_into_events_keeps_every_byte_and_cuts_after_blank_lines() {
    let body = b"event: a\ndata: 1\n\n: comment\n\ndata: 2\r\n\r\ndata: tail";
    let events = fixtures::split_into_events(body);
    let chunks: Vec<&[u8]> = events.iter().map(|c| c.bytes()).collect();
    assert_eq!(
        chunks,
        vec![
            &b"event: a\ndata: 1\n\n"[..],
            b": comment\n\n",
            b"data: 2\r\n\r\n",
            b"data: tail",
        ]
    );
}
