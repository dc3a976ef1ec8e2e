//! The TUI markdown renderer: never panics at any width; the finished prefix is a prefix.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&width, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let _ = corvid_tui::markdown::render_wrapped(text, u16::from(width));
    let done = corvid_tui::markdown::finished_prefix_len(text);
    assert!(done <= text.len() && text.is_char_boundary(done));
    let _ = corvid_tui::markdown::render_wrapped(&text[..done], u16::from(width));
});
