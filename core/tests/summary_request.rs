//! What the fast model is asked (SPEC §7.2): the request's shape and the 300-character rule.

use corvid_core::summary::{
    BatchForSummary, FIELD_MAX_CHARS, INTENT_MAX_CHARS, SummaryCall, build_summary_request,
    truncate_json,
};
use corvid_protocol::{Message, Role};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn call(name: &str, args: Value, output: &str, succeeded: bool) -> SummaryCall {
    SummaryCall {
        name: name.to_owned(),
        args,
        output: output.to_owned(),
        succeeded,
    }
}

fn user_text(batch: &BatchForSummary) -> String {
    let request = build_summary_request("fast-model", batch);
    assert_eq!(request.messages.len(), 1);
    assert_eq!(request.messages[0].role, Role::User);
    request.messages[0].text()
}

/// The `Input:`/`Output:` lines of a user message, without their prefix.
fn field_lines(text: &str, prefix: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.strip_prefix(prefix))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_request_goes_to_the_fast_model_without_tools_with_sixty_tokens_at_temperature_0_3() {
    let batch = BatchForSummary {
        intent: None,
        calls: vec![call(
            "glob",
            json!({"pattern": "*.rs"}),
            "src/main.rs",
            true,
        )],
    };
    let request = build_summary_request("fast-model", &batch);
    assert_eq!(
        (
            request.model.as_str(),
            request.tools.len(),
            request.max_output_tokens,
            request.temperature,
        ),
        ("fast-model", 0, Some(60), Some(0.3))
    );
    assert_eq!(
        request.messages,
        vec![Message::user_text(
            "Tool: glob\nInput: {\"pattern\":\"*.rs\"}\nOutput: \"src/main.rs\"\n\nLabel:"
        )]
    );
}

#[test]
fn the_system_prompt_asks_for_a_past_tense_commit_style_label_with_examples() {
    let batch = BatchForSummary {
        intent: None,
        calls: vec![call("glob", json!({}), "", true)],
    };
    let system = build_summary_request("m", &batch).system;
    let mentions: Vec<bool> = [
        "past tense",
        "git commit subject",
        "most distinctive",
        "Searched in auth/",
        "Fixed NPE in UserService",
        "Read config.json",
        "Ran failing tests",
    ]
    .iter()
    .map(|needle| system.contains(needle))
    .collect();
    assert_eq!(mentions, vec![true; 7]);
}

#[test]
fn the_user_message_has_the_intent_then_one_block_per_tool_and_ends_with_label() {
    let batch = BatchForSummary {
        intent: Some("  Let me look at the auth module.\n".to_owned()),
        calls: vec![
            call(
                "read_file",
                json!({"file_path": "src/auth.rs"}),
                "fn login() {}",
                true,
            ),
            call(
                "run_shell_command",
                json!({"command": "cargo test"}),
                "exit code 101",
                false,
            ),
        ],
    };
    assert_eq!(
        user_text(&batch),
        "Intent: Let me look at the auth module.\n\n\
         Tool: read_file\nInput: {\"file_path\":\"src/auth.rs\"}\nOutput: \"fn login() {}\"\n\n\
         Tool: run_shell_command (failed)\nInput: {\"command\":\"cargo test\"}\nOutput: \"exit code 101\"\n\n\
         Label:"
    );
}

#[test]
fn a_blank_intent_gives_no_intent_line() {
    let batch = BatchForSummary {
        intent: Some(" \n ".to_owned()),
        calls: vec![call("glob", json!({"pattern": "*"}), "x", true)],
    };
    assert_eq!(
        user_text(&batch),
        "Tool: glob\nInput: {\"pattern\":\"*\"}\nOutput: \"x\"\n\nLabel:"
    );
}

#[test]
fn the_intent_line_is_cut_to_two_hundred_characters() {
    let intent = "ä".repeat(500);
    let batch = BatchForSummary {
        intent: Some(intent),
        calls: vec![call("glob", json!({}), "", true)],
    };
    let text = user_text(&batch);
    let line = text.lines().next().unwrap_or_default();
    assert_eq!(INTENT_MAX_CHARS, 200);
    assert_eq!(line, format!("Intent: {}", "ä".repeat(200)));
}

#[test]
fn large_inputs_and_outputs_are_cut_to_three_hundred_characters_with_an_ellipsis() {
    let batch = BatchForSummary {
        intent: None,
        calls: vec![
            call(
                "write_file",
                json!({"content": "x".repeat(5_000), "file_path": "src/big.rs"}),
                &"y".repeat(10_000),
                true,
            ),
            call(
                "run_shell_command",
                json!({"command": "ls"}),
                &"日本".repeat(1_000),
                true,
            ),
        ],
    };
    let text = user_text(&batch);
    assert!(text.ends_with("\n\nLabel:"));
    assert_eq!(
        field_lines(&text, "Input: "),
        vec![
            format!(
                "{{\"content\":\"{}...\",\"file_path\":\"src/big.rs\"}}",
                "x".repeat(97)
            ),
            "{\"command\":\"ls\"}".to_owned(),
        ]
    );
    assert_eq!(
        field_lines(&text, "Output: "),
        vec![
            format!("\"{}...", "y".repeat(296)),
            format!("\"{}...", "日本".repeat(148)),
        ]
    );
    let lengths: Vec<usize> = field_lines(&text, "Output: ")
        .iter()
        .map(|line| line.chars().count())
        .collect();
    assert_eq!(lengths, vec![FIELD_MAX_CHARS, FIELD_MAX_CHARS]);
}

#[test]
fn a_value_within_budget_is_plain_compact_json() {
    assert_eq!(
        truncate_json(&json!({"file_path": "src/main.rs", "limit": 20}), 300),
        "{\"file_path\":\"src/main.rs\",\"limit\":20}"
    );
}

#[test]
fn numbers_and_other_scalars_serialise_as_json() {
    let cut: Vec<String> = [
        json!(42),
        json!(-1.5),
        json!(true),
        json!(null),
        json!(12_345_678_901_u64),
    ]
    .iter()
    .map(|value| truncate_json(value, 8))
    .collect();
    assert_eq!(cut, vec!["42", "-1.5", "true", "null", "12345..."]);
}

#[test]
fn a_long_string_keeps_its_start_and_ends_in_an_ellipsis_within_the_budget() {
    let cut = truncate_json(&json!("a".repeat(1_000)), 300);
    assert_eq!(cut, format!("\"{}...", "a".repeat(296)));
    assert_eq!(cut.chars().count(), 300);
}

#[test]
fn a_serialisation_of_exactly_three_hundred_characters_is_kept_whole() {
    // `"` + 298 characters + `"` is 300 characters.
    let string = json!("a".repeat(298));
    assert_eq!(
        truncate_json(&string, 300),
        format!("\"{}\"", "a".repeat(298))
    );
    // `{"k":""}` is 8 characters: a nested string of 292 makes exactly 300, and it is not pre-cut.
    let object = json!({"k": "b".repeat(292)});
    assert_eq!(truncate_json(&object, 300), object.to_string());
}

#[test]
fn a_serialisation_of_three_hundred_and_one_characters_is_cut_to_three_hundred() {
    let string = truncate_json(&json!("a".repeat(299)), 300);
    assert_eq!(
        (string.clone(), string.chars().count()),
        (format!("\"{}...", "a".repeat(296)), 300)
    );
    let object = truncate_json(&json!({"k": "b".repeat(293)}), 300);
    assert_eq!(object, format!("{{\"k\":\"{}...\"}}", "b".repeat(97)));
}

#[test]
fn nested_strings_are_pre_cut_so_one_long_string_does_not_hide_its_siblings() {
    let value = json!({
        "a_content": "x".repeat(2_000),
        "b_path": "src/lib.rs",
        "c_list": ["y".repeat(400), "short"],
        "d_nested": {"n": 7, "note": "z".repeat(400)},
    });
    assert_eq!(
        truncate_json(&value, 300),
        "{\"a_content\":\"".to_owned()
            + &"x".repeat(97)
            + "...\",\"b_path\":\"src/lib.rs\",\"c_list\":[\""
            + &"y".repeat(97)
            + "...\",\"short\"],\"d_nested\":{\"n\":7,\"note\":\""
            + &"z".repeat(11)
            + "..."
    );
}

#[test]
fn arrays_too_long_after_pre_cutting_end_in_an_ellipsis_at_exactly_the_budget() {
    let numbers: Vec<u32> = (0..500).collect();
    let value = json!(numbers);
    let whole = value.to_string();
    let expected: String = whole.chars().take(297).collect::<String>() + "...";
    let cut = truncate_json(&value, 300);
    assert_eq!((cut.clone(), cut.chars().count()), (expected, 300));
}

#[test]
fn multibyte_text_is_cut_on_character_boundaries() {
    let cut = truncate_json(&json!("é😀".repeat(400)), 300);
    assert_eq!(cut, format!("\"{}...", "é😀".repeat(148)));
    assert_eq!(cut.chars().count(), 300);
}

#[test]
fn a_value_that_cannot_be_serialised_is_described_instead() {
    struct Unserialisable;
    impl serde::Serialize for Unserialisable {
        fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
            Err(serde::ser::Error::custom("not representable"))
        }
    }
    let mut non_string_keys = std::collections::BTreeMap::new();
    non_string_keys.insert((1, 2), "tuple keys are not JSON");
    assert_eq!(
        (
            truncate_json(&Unserialisable, 300),
            truncate_json(&non_string_keys, 300),
            truncate_json(&Unserialisable, 10),
        ),
        (
            "[unserializable value]".to_owned(),
            "[unserializable value]".to_owned(),
            "[unseri...".to_owned(),
        )
    );
}
