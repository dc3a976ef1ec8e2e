//! The exact request bodies both providers send, pinned byte for byte: the key order and the
//! spelling of every value decide whether a provider's prompt cache hits, so a change of the
//! body builders must not change a single byte. The golden files were written by the builders
//! of commit a7548ae (which built a `serde_json::Value` tree); `CORVID_WRITE_GOLDEN=1` rewrites
//! them, for a change that means to alter the bytes. Random histories are checked against
//! those builders themselves (`reference`).

use std::path::PathBuf;
use std::sync::Arc;

use corvid_protocol::{
    ImageData, JsonText, Message, ModelRequest, Part, Role, ToolCall, ToolResult, ToolSchema,
};
use serde_json::{Value, json};

mod reference;

use proptest::prelude::*;

use crate::anthropic::request as anthropic;
use crate::openai_chat::request::{self as openai, Delivery, MaxTokensField};

fn schema(name: &str, description: &str, parameters: Value) -> Arc<ToolSchema> {
    Arc::new(ToolSchema {
        name: name.into(),
        description: description.into(),
        parameters: JsonText::new(&parameters),
    })
}

fn text(text: &str) -> Part {
    Part::Text { text: text.into() }
}

fn call(id: &str, name: &str, args: Value) -> Part {
    Part::ToolCall(ToolCall {
        call_id: id.into(),
        name: name.into(),
        args,
    })
}

fn result(id: &str, name: &str, output: &str, is_error: bool, images: Vec<ImageData>) -> Part {
    Part::ToolResult(ToolResult {
        call_id: id.into(),
        name: name.into(),
        output: output.into(),
        is_error,
        images,
    })
}

fn image(media_type: &str, data: &str) -> ImageData {
    ImageData {
        media_type: media_type.into(),
        data_base64: data.into(),
    }
}

fn message(role: Role, parts: Vec<Part>) -> Message {
    Message { role, parts }
}

/// Every shape a history takes: prompt images, reasoning (signed and not), calls whose
/// arguments parsed and did not, results with images and errors, a missing result, an orphan
/// result, empty text, text that needs escaping, and keys out of alphabetical order.
fn rich() -> ModelRequest {
    let tools = vec![
        schema(
            "read_file",
            "Reads a file.\nSay \"which\" lines — ünïcödé.",
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "Absolute \\ or relative"},
                "offset": {"type": "integer", "minimum": 0},
                "limit": {"type": ["integer", "null"], "default": 2000}
            }, "required": ["path"], "additionalProperties": false}),
        ),
        schema(
            "shot",
            "Takes a screenshot",
            json!({"type": "object", "properties": {}}),
        ),
    ];
    let messages = vec![
        message(
            Role::User,
            vec![
                text("what is in\tthis </script> picture? \u{1}"),
                Part::Image(image("image/jpeg", "/9j/4A==")),
            ],
        ),
        message(
            Role::Assistant,
            vec![
                Part::Thought {
                    text: "Let me look.".into(),
                    signature: Some("sig-1==".into()),
                    provider_data: None,
                },
                text("I will read it."),
                call(
                    "call_a",
                    "read_file",
                    json!({"path": "/tmp/x", "offset": 3, "limit": 1.5}),
                ),
                call("call_b", "shot", Value::String("{not json".into())),
            ],
        ),
        message(
            Role::User,
            vec![
                result(
                    "call_b",
                    "shot",
                    "",
                    false,
                    vec![
                        image("image/png", "iVBORw=="),
                        image("image/gif", "R0lGOD=="),
                    ],
                ),
                text("and also this"),
                result("call_a", "read_file", "no such file", true, Vec::new()),
            ],
        ),
        message(Role::Assistant, vec![text("Done. 🎉")]),
        message(Role::User, vec![text("first"), text(""), text("second")]),
        message(
            Role::Assistant,
            vec![Part::Thought {
                text: "unsigned musing".into(),
                signature: None,
                provider_data: None,
            }],
        ),
        message(Role::Assistant, vec![call("call_c", "shot", json!({}))]),
        message(
            Role::User,
            vec![result("orphan", "shot", "??", false, Vec::new())],
        ),
        message(Role::User, vec![text("go on")]),
        message(
            Role::Assistant,
            vec![
                text(""),
                call(
                    "call_d",
                    "read_file",
                    json!({"z": null, "a": [true, false, -0.0, 1e300]}),
                ),
            ],
        ),
        message(
            Role::User,
            vec![result(
                "call_d",
                "read_file",
                "line 1\r\nline 2",
                false,
                vec![image("image/webp", "UklGRg==")],
            )],
        ),
        message(
            Role::Assistant,
            vec![
                text("Here."),
                Part::Thought {
                    text: "last thought".into(),
                    signature: Some("sig-2".into()),
                    provider_data: None,
                },
            ],
        ),
    ];
    ModelRequest {
        model: "model-x".into(),
        system: "You are corvid.\n\n# Rules\n- be \"brief\"\n- use tools\u{7f}".into(),
        messages: messages.into(),
        tools,
        max_output_tokens: Some(1234),
        temperature: Some(0.2),
    }
}

/// The smallest request: no system prompt, no tools, no limits.
fn minimal() -> ModelRequest {
    ModelRequest {
        model: "m".into(),
        system: String::new(),
        messages: vec![Message::user_text("hi")].into(),
        tools: Vec::new(),
        max_output_tokens: None,
        temperature: None,
    }
}

/// A prompt image alone, a temperature that is a whole number, and a history ending on a user
/// message whose only block is an image.
fn images_only() -> ModelRequest {
    ModelRequest {
        model: "m".into(),
        system: "s".into(),
        messages: vec![
            message(
                Role::User,
                vec![Part::Image(image("image/png", "iVBORw=="))],
            ),
            message(Role::Assistant, vec![text("a picture")]),
            message(
                Role::User,
                vec![Part::Image(image("image/png", "iVBORw=="))],
            ),
        ]
        .into(),
        tools: vec![schema("t", "", json!({}))],
        max_output_tokens: Some(1),
        temperature: Some(1.0),
    }
}

/// A failed result as the last block (its cache mark follows `is_error`) and a message of
/// signed reasoning only (no block can carry the mark; OpenAI drops the message).
fn error_last() -> ModelRequest {
    ModelRequest {
        model: "m".into(),
        system: String::new(),
        messages: vec![
            message(Role::User, vec![text("run it")]),
            message(
                Role::Assistant,
                vec![Part::Thought {
                    text: "thinking only".into(),
                    signature: Some("s".into()),
                    provider_data: None,
                }],
            ),
            message(Role::User, vec![text("well?")]),
            message(
                Role::Assistant,
                vec![call("c1", "run", json!({"cmd": "ls"}))],
            ),
            message(
                Role::User,
                vec![result("c1", "run", "exit 1", true, Vec::new())],
            ),
        ]
        .into(),
        tools: Vec::new(),
        max_output_tokens: None,
        temperature: Some(0.0),
    }
}

fn requests() -> [(&'static str, ModelRequest); 4] {
    [
        ("rich", rich()),
        ("minimal", minimal()),
        ("images_only", images_only()),
        ("error_last", error_last()),
    ]
}

/// Every body of every request, named after its file.
fn bodies() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for (name, request) in requests() {
        for (delivery, d) in [(Delivery::Stream, "stream"), (Delivery::Whole, "whole")] {
            for (field, f) in [
                (MaxTokensField::MaxTokens, "max_tokens"),
                (MaxTokensField::MaxCompletionTokens, "max_completion_tokens"),
            ] {
                let body = openai::build_body(&request, delivery, field, None).unwrap();
                out.push((format!("openai_{name}_{d}_{f}.json"), body));
            }
        }
        for (stream, d) in [(true, "stream"), (false, "whole")] {
            let body = anthropic::build_body(&request, stream, None).unwrap();
            out.push((format!("anthropic_{name}_{d}.json"), body));
        }
    }
    out
}

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/request_bodies")
}

#[test]
fn every_body_is_byte_for_byte_the_pinned_one() {
    let dir = golden_dir();
    let write = std::env::var_os("CORVID_WRITE_GOLDEN").is_some();
    let bodies = bodies();
    for (name, bytes) in &bodies {
        let path = dir.join(name);
        if write {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, bytes).unwrap();
            continue;
        }
        let pinned = std::fs::read(&path).unwrap_or_else(|e| {
            panic!("{}: {e} (CORVID_WRITE_GOLDEN=1 writes it)", path.display())
        });
        pretty_assertions::assert_eq!(
            String::from_utf8_lossy(bytes),
            String::from_utf8_lossy(&pinned),
            "{name}"
        );
        assert!(*bytes == pinned, "{name}: same text, different bytes");
    }
    // No pinned body is left unchecked.
    let mut expected: Vec<&str> = bodies.iter().map(|(name, _)| name.as_str()).collect();
    let mut found: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    expected.sort();
    found.sort();
    pretty_assertions::assert_eq!(found, expected);
}

fn any_text() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "",
        "a",
        "b \"c\"\n",
        "é 🎉 </x>",
        "\u{1}\u{7f}",
        "line\r\n",
    ])
    .prop_map(str::to_owned)
}

fn any_image() -> impl Strategy<Value = ImageData> {
    prop::sample::select(vec![("image/png", "iVBORw=="), ("image/jpeg", "/9j/4A==")])
        .prop_map(|(media_type, data)| image(media_type, data))
}

fn any_args() -> impl Strategy<Value = Value> {
    prop::sample::select(vec![
        json!({}),
        json!({"z": 1, "a": [true, null, 1.5, "s\"q"]}),
        Value::String("{bad".into()),
        Value::Null,
    ])
}

fn any_id() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["a", "b", "c"]).prop_map(str::to_owned)
}

fn any_part() -> impl Strategy<Value = Part> {
    prop_oneof![
        any_text().prop_map(|t| Part::Text { text: t }),
        (any_text(), prop::option::of(any_text())).prop_map(|(text, signature)| Part::Thought {
            text,
            signature,
            provider_data: None,
        }),
        (any_id(), any_args()).prop_map(|(id, args)| call(&id, "tool", args)),
        (
            any_id(),
            any_text(),
            any::<bool>(),
            prop::collection::vec(any_image(), 0..3)
        )
            .prop_map(|(id, output, is_error, images)| result(
                &id, "tool", &output, is_error, images
            )),
        any_image().prop_map(Part::Image),
    ]
}

fn any_request() -> impl Strategy<Value = ModelRequest> {
    let message =
        (any::<bool>(), prop::collection::vec(any_part(), 0..5)).prop_map(|(user, parts)| {
            let role = if user { Role::User } else { Role::Assistant };
            message(role, parts)
        });
    let tool = (any_text(), any_args()).prop_map(|(description, parameters)| {
        schema(
            "tool",
            &description,
            json!({"type": "object", "x": parameters}),
        )
    });
    (
        prop::collection::vec(message, 0..9),
        any_text(),
        prop::collection::vec(tool, 0..3),
        prop::option::of(prop::sample::select(vec![1u32, 8192])),
        prop::option::of(prop::sample::select(vec![0.0, 0.5, 1.0, 2.0])),
    )
        .prop_map(
            |(messages, system, tools, max_output_tokens, temperature)| ModelRequest {
                model: "m".into(),
                system,
                messages: messages.into(),
                tools,
                max_output_tokens,
                temperature,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn any_history_is_sent_byte_for_byte_as_the_value_tree_builders_sent_it(
        request in any_request()
    ) {
        for delivery in [Delivery::Stream, Delivery::Whole] {
            for field in [MaxTokensField::MaxTokens, MaxTokensField::MaxCompletionTokens] {
                let old = serde_json::to_vec(&reference::openai_body(&request, delivery, field))
                    .unwrap();
                let new = openai::build_body(&request, delivery, field, None).unwrap();
                prop_assert_eq!(String::from_utf8(new).unwrap(), String::from_utf8(old).unwrap());
            }
        }
        for stream in [true, false] {
            let old = serde_json::to_vec(&reference::anthropic_body(&request, stream)).unwrap();
            let new = anthropic::build_body(&request, stream, None).unwrap();
            prop_assert_eq!(String::from_utf8(new).unwrap(), String::from_utf8(old).unwrap());
        }
    }
}
