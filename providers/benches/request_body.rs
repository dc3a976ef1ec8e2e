//! Building the bytes of one model request, for both providers (issue 16: with 100 sessions
//! turning at once, building request bodies was about a fifth of corvid's CPU per turn).
//!
//! The request is a realistic mid-session one: the built-in tools' schemas (`data/`, dumped
//! from `corvid_tools::builtin_tools()`), a ~6 KB system prompt and 11 messages with tool
//! calls and their results.

#![allow(clippy::unwrap_used)]

use std::hint::black_box;
use std::sync::Arc;

use corvid_protocol::{
    JsonText, Message, ModelRequest, Part, Role, ToolCall, ToolResult, ToolSchema,
};
use corvid_providers::{
    AnthropicProvider, OpenAiChatProvider, OpenAiResponsesProvider, ProviderConfig,
};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

const BUILTIN_TOOLS: &str = include_str!("data/builtin_tools.json");

fn tools() -> Vec<Arc<ToolSchema>> {
    let tools: Vec<Value> = serde_json::from_str(BUILTIN_TOOLS).unwrap();
    tools
        .into_iter()
        .map(|t| {
            Arc::new(ToolSchema {
                name: t["name"].as_str().unwrap().to_owned(),
                description: t["description"].as_str().unwrap().to_owned(),
                parameters: JsonText::new(&t["parameters"]),
            })
        })
        .collect()
}

/// About 6 KB: the default prompt plus a project's instructions file.
fn system_prompt() -> String {
    let paragraph = "You are corvid, a coding agent working in a terminal on the user's \
        software project. Understand before you change: read the relevant files and search \
        the code base instead of guessing names, APIs or conventions. Follow the project's \
        existing style, structure, libraries and tests; keep \"modules\" small.\n";
    paragraph.repeat(6_000 / paragraph.len() + 1)
}

fn text(role: Role, text: &str) -> Message {
    Message {
        role,
        parts: vec![Part::Text { text: text.into() }],
    }
}

fn call(id: &str, name: &str, args: Value, note: &str) -> Message {
    Message {
        role: Role::Assistant,
        parts: vec![
            Part::Text { text: note.into() },
            Part::ToolCall(ToolCall {
                call_id: id.into(),
                name: name.into(),
                args,
            }),
        ],
    }
}

fn result(id: &str, name: &str, output: String) -> Message {
    Message {
        role: Role::User,
        parts: vec![Part::ToolResult(ToolResult {
            call_id: id.into(),
            name: name.into(),
            output,
            is_error: false,
            images: Vec::new(),
        })],
    }
}

fn messages() -> Vec<Message> {
    let file: String = (1..=80)
        .map(|i| {
            format!("{i:>4}\tfn step_{i}(input: &str) -> Result<String, Error> {{ todo!() }}\n")
        })
        .collect();
    let matches: String = (1..=20)
        .map(|i| {
            format!(
                "src/module_{i}.rs:{}: let parsed = parse(&input)?;\n",
                i * 7
            )
        })
        .collect();
    vec![
        text(
            Role::User,
            "The parser rejects inputs with trailing whitespace. Find out why and fix it, \
             then run the tests.",
        ),
        call(
            "call_1",
            "read_file",
            json!({"file_path": "src/parser.rs"}),
            "Let me read the parser first.",
        ),
        result("call_1", "read_file", file),
        call(
            "call_2",
            "grep_search",
            json!({"pattern": "parse\\(&input\\)", "path": "src"}),
            "Now where it is called.",
        ),
        result("call_2", "grep_search", matches),
        call(
            "call_3",
            "edit",
            json!({"file_path": "src/parser.rs", "old_string": "let input = raw;",
                   "new_string": "let input = raw.trim_end();\n    // trailing whitespace is not significant"}),
            "The input is not trimmed; fixing that.",
        ),
        result(
            "call_3",
            "edit",
            "Edited src/parser.rs (1 replacement).".into(),
        ),
        call(
            "call_4",
            "run_shell_command",
            json!({"command": "cargo test -p parser", "description": "Run the parser tests"}),
            "Running the tests.",
        ),
        result(
            "call_4",
            "run_shell_command",
            "running 42 tests\n".to_owned() + &"test parses_ok ... ok\n".repeat(42),
        ),
        text(
            Role::Assistant,
            "Fixed: the parser now trims trailing whitespace before tokenizing; all 42 tests pass.",
        ),
        text(Role::User, "Thanks. Also add a test for it."),
    ]
}

fn request() -> ModelRequest {
    ModelRequest {
        model: "model-x".into(),
        system: system_prompt(),
        messages: messages().into(),
        tools: tools(),
        max_output_tokens: Some(8192),
        temperature: None,
    }
}

fn config() -> ProviderConfig {
    ProviderConfig {
        base_url: "http://127.0.0.1:9".into(),
        ..ProviderConfig::default()
    }
}

fn request_body(c: &mut Criterion) {
    let request = request();
    let openai = OpenAiChatProvider::new(&config()).unwrap();
    let anthropic = AnthropicProvider::new(&config()).unwrap();
    let responses = OpenAiResponsesProvider::new(&config())
        .unwrap()
        .with_cache_key("3f9c2a7e-5b1d-4c8e-9a2f-0d6b7e1c4a93");
    let mut group = c.benchmark_group("request_body");
    group.bench_function("openai_chat", |b| {
        b.iter(|| openai.request_body(black_box(&request)).unwrap())
    });
    group.bench_function("anthropic", |b| {
        b.iter(|| anthropic.request_body(black_box(&request)).unwrap())
    });
    group.bench_function("openai_responses", |b| {
        b.iter(|| responses.request_body(black_box(&request)).unwrap())
    });
    group.finish();
}

criterion_group!(benches, request_body);
criterion_main!(benches);
