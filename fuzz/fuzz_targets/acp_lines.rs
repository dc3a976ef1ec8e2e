//! The ACP line transport's reading side: never panics, and hands on exactly the lines of
//! the input (`\r` removed, a line that is not UTF-8 replaced by a parse-error marker).
#![no_main]

use libfuzzer_sys::fuzz_target;

const NOT_UTF8: &str = "(a line that is not valid UTF-8)";

fuzz_target!(|data: &[u8]| {
    let lines = corvid_acp::fuzz_incoming(data.to_vec()).expect("reading from memory");
    let mut pieces: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    if data.is_empty() || data.ends_with(b"\n") {
        pieces.pop();
    }
    let expected: Vec<String> = pieces
        .into_iter()
        .map(|p| {
            let p = p.strip_suffix(b"\r").unwrap_or(p);
            String::from_utf8(p.to_vec()).unwrap_or_else(|_| NOT_UTF8.to_owned())
        })
        .collect();
    assert_eq!(lines, expected);
});
