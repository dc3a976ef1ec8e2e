//! `ModelRequest` → `streamGenerateContent` request body, serialized straight to bytes.
//!
//! History goes as `contents` of `user`/`model` turns; each model turn's signatures go back on
//! the part they came with (see `signature`).

use std::borrow::Cow;

use corvid_protocol::{ModelRequest, Part, Role, ToolSchema};
use serde::Serialize;
use serde_json::Value;

use super::schema::gemini_schema;
use super::signature::{On, PLACEHOLDER, Signed};
use super::thinking::ThinkingConfig;
use crate::history::{Turn, paired};
use crate::reasoning::Reasoning;

/// Per-provider settings that go into every body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct BodyOptions {
    pub reasoning: Reasoning,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Body<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    system_instruction: Option<Content<'a>>,
    contents: Vec<Content<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tools<'a>>,
    generation_config: GenerationConfig,
}

#[derive(Serialize)]
struct Content<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'static str>,
    parts: Vec<OutPart<'a>>,
}

#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct OutPart<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thought: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    inline_data: Option<InlineData<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    function_call: Option<FunctionCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    function_response: Option<FunctionResponse<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thought_signature: Option<Cow<'a, str>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InlineData<'a> {
    mime_type: &'a str,
    data: &'a str,
}

#[derive(Serialize)]
struct FunctionCall<'a> {
    name: &'a str,
    args: &'a Value,
}

#[derive(Serialize)]
struct FunctionResponse<'a> {
    name: &'a str,
    response: Value,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Tools<'a> {
    function_declarations: Vec<Declaration<'a>>,
}

#[derive(Serialize)]
struct Declaration<'a> {
    name: &'a str,
    description: &'a str,
    parameters: Value,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GenerationConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_config: Option<ThinkingConfig>,
}

/// The JSON body of `POST models/{model}:streamGenerateContent?alt=sse`.
pub(crate) fn build_body(
    request: &ModelRequest,
    options: &BodyOptions,
) -> serde_json::Result<Vec<u8>> {
    let turns = paired(&request.messages);
    let contents = turns.iter().filter_map(content).collect();
    let declarations: Vec<Declaration<'_>> = request
        .tools
        .iter()
        .map(|t| declaration(t))
        .collect::<serde_json::Result<_>>()?;
    let body = Body {
        system_instruction: (!request.system.is_empty()).then(|| Content {
            role: None,
            parts: vec![OutPart {
                text: Some(Cow::Borrowed(&request.system)),
                ..OutPart::default()
            }],
        }),
        contents,
        tools: if declarations.is_empty() {
            Vec::new()
        } else {
            vec![Tools {
                function_declarations: declarations,
            }]
        },
        generation_config: GenerationConfig {
            max_output_tokens: request.max_output_tokens,
            temperature: request.temperature,
            thinking_config: ThinkingConfig::new(&request.model, options.reasoning.effort),
        },
    };
    serde_json::to_vec(&body)
}

fn declaration(tool: &ToolSchema) -> serde_json::Result<Declaration<'_>> {
    let schema: Value = serde_json::from_str(tool.parameters.raw().get())?;
    Ok(Declaration {
        name: &tool.name,
        description: &tool.description,
        parameters: gemini_schema(&schema),
    })
}

fn content<'a>(turn: &'a Turn<'_>) -> Option<Content<'a>> {
    let parts = match turn.role {
        Role::Assistant => model_parts(turn),
        Role::User => user_parts(turn),
    };
    let role = match turn.role {
        Role::Assistant => "model",
        Role::User => "user",
    };
    (!parts.is_empty()).then_some(Content {
        role: Some(role),
        parts,
    })
}

fn model_parts<'a>(turn: &'a Turn<'_>) -> Vec<OutPart<'a>> {
    let mut parts: Vec<OutPart<'a>> = Vec::new();
    let mut call_signatures: Vec<Signed> = Vec::new();
    for part in turn.parts.iter().map(|p| &**p) {
        match part {
            Part::Text { text } if !text.is_empty() => parts.push(OutPart {
                text: Some(Cow::Borrowed(text)),
                ..OutPart::default()
            }),
            Part::Thought {
                text,
                provider_data: Some(data),
                ..
            } => {
                let Some(signed) = Signed::from_data(data) else {
                    continue;
                };
                let sig = Cow::Owned(signed.thought_signature.clone());
                match signed.on {
                    On::Thought => parts.push(OutPart {
                        text: Some(Cow::Borrowed(text)),
                        thought: Some(true),
                        thought_signature: Some(sig),
                        ..OutPart::default()
                    }),
                    On::Text => match parts.last_mut() {
                        Some(last) if last.text.is_some() && last.thought_signature.is_none() => {
                            last.thought_signature = Some(sig)
                        }
                        _ => parts.push(OutPart {
                            text: Some(Cow::Borrowed("")),
                            thought_signature: Some(sig),
                            ..OutPart::default()
                        }),
                    },
                    On::Call => call_signatures.push(signed),
                }
            }
            // Other providers' reasoning cannot be sent to Gemini.
            _ => {}
        }
    }
    let calls: Vec<_> = turn
        .parts
        .iter()
        .filter_map(|p| match &**p {
            Part::ToolCall(call) => Some(call),
            _ => None,
        })
        .collect();
    let mut signatures: Vec<Option<Cow<'a, str>>> = vec![None; calls.len()];
    for signed in call_signatures {
        let by_id = signed
            .call_id
            .as_deref()
            .and_then(|id| calls.iter().position(|c| c.call_id == id));
        let at = by_id.or(signed.call_index.filter(|i| *i < calls.len()));
        if let Some(slot) = at.and_then(|i| signatures.get_mut(i)) {
            *slot = Some(Cow::Owned(signed.thought_signature));
        }
    }
    // A step whose first call has no signature is rejected by Gemini 3.
    if let Some(first @ None) = signatures.first_mut() {
        *first = Some(Cow::Borrowed(PLACEHOLDER));
    }
    for (call, signature) in calls.into_iter().zip(signatures) {
        parts.push(OutPart {
            function_call: Some(FunctionCall {
                name: &call.name,
                args: &call.args,
            }),
            thought_signature: signature,
            ..OutPart::default()
        });
    }
    parts
}

fn user_parts<'a>(turn: &'a Turn<'_>) -> Vec<OutPart<'a>> {
    let mut parts = Vec::new();
    let mut images = Vec::new();
    for part in turn.parts.iter().map(|p| &**p) {
        if let Part::ToolResult(r) = part {
            let key = if r.is_error { "error" } else { "output" };
            let output = crate::openai_chat::request::tool_text(r).into_owned();
            parts.push(OutPart {
                function_response: Some(FunctionResponse {
                    name: &r.name,
                    response: serde_json::json!({ key: output }),
                }),
                ..OutPart::default()
            });
            images.extend(r.images.iter());
        }
    }
    for image in images {
        parts.push(inline(image));
    }
    for part in turn.parts.iter().map(|p| &**p) {
        match part {
            Part::Text { text } if !text.is_empty() => parts.push(OutPart {
                text: Some(Cow::Borrowed(text)),
                ..OutPart::default()
            }),
            Part::Image(data) => parts.push(inline(data)),
            _ => {}
        }
    }
    parts
}

fn inline(data: &corvid_protocol::ImageData) -> OutPart<'_> {
    OutPart {
        inline_data: Some(InlineData {
            mime_type: &data.media_type,
            data: &data.data_base64,
        }),
        ..OutPart::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reasoning::ReasoningEffort;
    use crate::test_history::{png, shot_calls, shot_result};
    use corvid_protocol::{Message, ToolCall};
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use std::sync::Arc;

    fn sent(request: &ModelRequest, options: &BodyOptions) -> Value {
        serde_json::from_slice(&build_body(request, options).unwrap()).unwrap()
    }

    fn request(model: &str, messages: Vec<Message>) -> ModelRequest {
        ModelRequest {
            model: model.into(),
            system: "be brief".into(),
            messages: messages.into(),
            tools: vec![Arc::new(ToolSchema {
                name: "read_file".into(),
                description: "Reads a file".into(),
                parameters: json!({"type": "object", "additionalProperties": false,
                    "$schema": "http://json-schema.org/draft-07/schema#",
                    "properties": {"path": {"type": "string"}}, "required": ["path"]})
                .into(),
            })],
            max_output_tokens: Some(1000),
            temperature: None,
        }
    }

    fn signed(on: On, sig: &str, call: Option<(&str, usize)>) -> Part {
        let mut s = Signed::new(on, sig);
        s.call_id = call.map(|c| c.0.to_owned());
        s.call_index = call.map(|c| c.1);
        Part::Thought {
            text: String::new(),
            signature: None,
            provider_data: Some(s.to_data()),
        }
    }

    #[test]
    fn a_tool_loop_sends_each_signature_back_on_the_part_it_came_with() {
        let assistant = Message {
            role: Role::Assistant,
            parts: vec![
                Part::Thought {
                    text: "Look first".into(),
                    signature: None,
                    provider_data: Some(Signed::new(On::Thought, "VGhvdWdodA==").to_data()),
                },
                Part::Text {
                    text: "Reading.".into(),
                },
                signed(On::Text, "VGV4dA==", None),
                signed(On::Call, "Q2FsbA==", Some(("gemini_1", 0))),
                Part::ToolCall(ToolCall {
                    call_id: "gemini_1".into(),
                    name: "read_file".into(),
                    args: json!({"path": "a.txt"}),
                }),
            ],
        };
        let result = Message {
            role: Role::User,
            parts: vec![Part::ToolResult(corvid_protocol::ToolResult {
                call_id: "gemini_1".into(),
                name: "read_file".into(),
                output: "hello".into(),
                is_error: false,
                images: Vec::new(),
            })],
        };
        let options = BodyOptions {
            reasoning: Reasoning {
                effort: Some(ReasoningEffort::High),
                summary: None,
            },
        };
        let body = sent(
            &request(
                "gemini-2.5-pro",
                vec![Message::user_text("read a.txt"), assistant, result],
            ),
            &options,
        );
        assert_eq!(
            body,
            json!({
                "systemInstruction": {"parts": [{"text": "be brief"}]},
                "contents": [
                    {"role": "user", "parts": [{"text": "read a.txt"}]},
                    {"role": "model", "parts": [
                        {"text": "Look first", "thought": true, "thoughtSignature": "VGhvdWdodA=="},
                        {"text": "Reading.", "thoughtSignature": "VGV4dA=="},
                        {"functionCall": {"name": "read_file", "args": {"path": "a.txt"}},
                         "thoughtSignature": "Q2FsbA=="},
                    ]},
                    {"role": "user", "parts": [
                        {"functionResponse": {"name": "read_file", "response": {"output": "hello"}}},
                    ]},
                ],
                "tools": [{"functionDeclarations": [{"name": "read_file", "description": "Reads a file",
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                                   "required": ["path"]}}]}],
                "generationConfig": {"maxOutputTokens": 1000,
                    "thinkingConfig": {"includeThoughts": true, "thinkingBudget": 24576}},
            })
        );
    }

    #[test]
    fn calls_corvid_did_not_get_from_gemini_carry_the_placeholder_on_the_first_call_only() {
        let results = Message {
            role: Role::User,
            parts: vec![
                shot_result("a", "one", vec![png()]),
                shot_result("b", "two", Vec::new()),
            ],
        };
        let body = sent(
            &request(
                "gemini-3-pro-preview",
                vec![
                    Message::user_text("shoot"),
                    shot_calls(&["a", "b"]),
                    results,
                ],
            ),
            &BodyOptions::default(),
        );
        assert_eq!(
            body["contents"][1]["parts"],
            json!([
                {"functionCall": {"name": "shot", "args": {}},
                 "thoughtSignature": "skip_thought_signature_validator"},
                {"functionCall": {"name": "shot", "args": {}}},
            ])
        );
        assert_eq!(
            body["contents"][2]["parts"],
            json!([
                {"functionResponse": {"name": "shot", "response":
                    {"output": "one\n[1 image(s) returned: sent in the next user message]"}}},
                {"functionResponse": {"name": "shot", "response": {"output": "two"}}},
                {"inlineData": {"mimeType": "image/png", "data": "iVBORw=="}},
            ])
        );
        assert_eq!(
            body["generationConfig"]["thinkingConfig"],
            json!({"includeThoughts": true})
        );
    }

    #[test]
    fn a_renamed_call_id_still_finds_its_signature_by_position_and_old_models_get_no_thinking() {
        let assistant = Message {
            role: Role::Assistant,
            parts: vec![
                signed(On::Call, "Zmlyc3Q=", Some(("gemini_x", 0))),
                Part::ToolCall(ToolCall {
                    call_id: "gemini_x__dup_2".into(),
                    name: "read_file".into(),
                    args: json!({}),
                }),
                // Another provider's thinking is not sent.
                Part::Thought {
                    text: "anthropic".into(),
                    signature: Some("sig".into()),
                    provider_data: None,
                },
            ],
        };
        let body = sent(
            &request(
                "gemini-2.0-flash",
                vec![Message::user_text("hi"), assistant],
            ),
            &BodyOptions::default(),
        );
        assert_eq!(
            body["contents"][1]["parts"],
            json!([{"functionCall": {"name": "read_file", "args": {}}, "thoughtSignature": "Zmlyc3Q="}])
        );
        assert!(
            body["generationConfig"].get("thinkingConfig").is_none(),
            "{body}"
        );
    }
}
