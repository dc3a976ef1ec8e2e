//! Telling the user, when the terminal is not focused, that a task ended or an approval waits:
//! the bell plus a desktop notification (OSC 9, which iTerm2, WezTerm, kitty and Windows
//! Terminal show; OSC 777 for VTE/foot), wrapped for tmux when corvid runs inside it.

/// The bytes that ring the bell and ask for a notification saying `message`.
pub fn notification_bytes(message: &str, in_tmux: bool) -> Vec<u8> {
    // Control characters would end the sequence early (or start another one).
    let clean: String = message
        .chars()
        .filter(|c| !c.is_control())
        .take(200)
        .collect();
    let mut sequences = vec![
        format!("\x1b]9;{clean}\x07"),
        format!("\x1b]777;notify;corvid;{clean}\x07"),
    ];
    if in_tmux {
        // tmux passes a sequence through when wrapped in `DCS tmux; … ST`, with every ESC
        // doubled (it needs `allow-passthrough on` since tmux 3.3).
        sequences = sequences
            .into_iter()
            .map(|s| format!("\x1bPtmux;{}\x1b\\", s.replace('\x1b', "\x1b\x1b")))
            .collect();
    }
    let mut out = String::from("\x07");
    out.extend(sequences);
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_notification_rings_the_bell_and_sends_osc_9_and_777_wrapped_for_tmux() {
        let plain = String::from_utf8(notification_bytes("Task done\x1b]0;x", false)).unwrap();
        assert_eq!(
            plain,
            "\x07\x1b]9;Task done]0;x\x07\x1b]777;notify;corvid;Task done]0;x\x07"
        );
        let tmux = String::from_utf8(notification_bytes("Task done", true)).unwrap();
        assert_eq!(
            tmux,
            "\x07\x1bPtmux;\x1b\x1b]9;Task done\x07\x1b\\\x1bPtmux;\x1b\x1b]777;notify;corvid;Task done\x07\x1b\\"
        );
    }
}
