//! Whether tool-use summaries are generated at all (SPEC §7.1).

/// corvid's own switch; it wins over [`QWEN_ENV`] when both hold a valid value.
pub const CORVID_ENV: &str = "CORVID_EMIT_TOOL_USE_SUMMARIES";
/// The switch named in the original design notes, honoured with the same meaning.
pub const QWEN_ENV: &str = "QWEN_CODE_EMIT_TOOL_USE_SUMMARIES";

/// Decides whether summaries run, first match wins:
/// 1. `CORVID_EMIT_TOOL_USE_SUMMARIES`, then `QWEN_CODE_EMIT_TOOL_USE_SUMMARIES`: exactly
///    `0`/`false` turns them off, exactly `1`/`true` on. Any other value (including an
///    invalid value of corvid's own variable) is ignored and the next source decides, so a
///    typo in one variable never hides a valid setting in the other.
/// 2. `setting` (`experimental.emitToolUseSummaries`), absent meaning on.
///
/// Whatever turned them on, without a fast model they are skipped silently: the main
/// model is never used instead.
pub fn summaries_enabled(
    env: impl Fn(&str) -> Option<String>,
    setting: Option<bool>,
    fast_model_configured: bool,
) -> bool {
    let wanted = [CORVID_ENV, QWEN_ENV]
        .into_iter()
        .find_map(|name| env(name).as_deref().and_then(parse_switch))
        .or(setting)
        .unwrap_or(true);
    wanted && fast_model_configured
}

/// Reads an exact switch value; anything else is "not set".
fn parse_switch(value: &str) -> Option<bool> {
    match value {
        "1" | "true" => Some(true),
        "0" | "false" => Some(false),
        _ => None,
    }
}
