//! `corvid debug replay-sse`: a captured body through the real decoder (SPEC §1.3).

use std::io::Write;
use std::process::ExitCode;

use corvid_protocol::{ErrorInfo, HostedStep, JsonText, StreamEvent, StreamItem};
use corvid_providers::error::HeaderMap;
use corvid_providers::{Emitted, WireProtocol, classify_http_error, decode_body};
use serde::Serialize;
use serde_json::Value;

use crate::args::{ReplaySseArgs, WireProtocol as WireArg};

/// Runs the command; exit 0 whatever the body holds, 2 on unreadable input.
pub fn run(args: &ReplaySseArgs) -> ExitCode {
    let body = match std::fs::read(&args.file) {
        Ok(body) => body,
        Err(e) => {
            eprintln!("corvid: cannot read {}: {e}", args.file.display());
            return ExitCode::from(2);
        }
    };
    let protocol = match args.protocol {
        WireArg::OpenaiChat => WireProtocol::OpenAiChat,
        WireArg::AnthropicMessages => WireProtocol::AnthropicMessages,
        WireArg::OpenaiResponses => WireProtocol::OpenAiResponses,
        WireArg::Gemini => WireProtocol::Gemini,
    };
    let emitted = if args.status == 200 {
        decode_body(protocol, &body)
    } else {
        let error = classify_http_error(args.status, &HeaderMap::new(), &body);
        vec![Emitted {
            at: None,
            item: Err(error),
        }]
    };
    let mut stdout = std::io::stdout().lock();
    for e in &emitted {
        let line = Line {
            at: e.at,
            body: Body::from(&e.item),
        };
        let written = serde_json::to_writer(&mut stdout, &line)
            .map_err(std::io::Error::from)
            .and_then(|()| stdout.write_all(b"\n"));
        if written.is_err() {
            // stdout closed (e.g. piped into `head`): nothing more to say.
            return ExitCode::SUCCESS;
        }
    }
    let _ = stdout.flush();
    ExitCode::SUCCESS
}

/// One output line: the data event index, then the event.
#[derive(Serialize)]
struct Line<'a> {
    at: Option<usize>,
    #[serde(flatten)]
    body: Body<'a>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Body<'a> {
    Text {
        text: &'a str,
    },
    Thought {
        text: &'a str,
    },
    ThoughtSignature {
        signature: &'a str,
    },
    ThoughtData {
        data: &'a JsonText,
    },
    ToolPreparing {
        call_id: &'a str,
        tool_name: &'a str,
    },
    ToolCall {
        call_id: &'a str,
        name: &'a str,
        args: &'a Value,
    },
    /// A tool use the API ran itself, with the block as the API sent it.
    Hosted {
        call_id: &'a str,
        tool_name: &'a str,
        #[serde(flatten)]
        step: &'a HostedStep,
        data: &'a JsonText,
    },
    Usage {
        input_tokens: u64,
        output_tokens: u64,
        total_tokens: u64,
        cached_input_tokens: u64,
        reasoning_tokens: u64,
    },
    Finished {
        reason: &'a str,
    },
    Error {
        kind: &'static str,
        retryable: bool,
        message: &'a str,
    },
}

impl<'a> From<&'a StreamItem> for Body<'a> {
    fn from(item: &'a StreamItem) -> Self {
        match item {
            Ok(StreamEvent::Text { text }) => Body::Text { text },
            Ok(StreamEvent::Thought { text }) => Body::Thought { text },
            Ok(StreamEvent::ThoughtSignature { signature }) => Body::ThoughtSignature { signature },
            Ok(StreamEvent::ThoughtData { data }) => Body::ThoughtData { data },
            Ok(StreamEvent::ToolPreparing { call_id, tool_name }) => {
                Body::ToolPreparing { call_id, tool_name }
            }
            Ok(StreamEvent::ToolCall(c)) => Body::ToolCall {
                call_id: &c.call_id,
                name: &c.name,
                args: &c.args,
            },
            Ok(StreamEvent::Hosted(h)) => Body::Hosted {
                call_id: &h.call_id,
                tool_name: &h.tool_name,
                step: &h.step,
                data: &h.data,
            },
            Ok(StreamEvent::Usage(u)) => Body::Usage {
                input_tokens: u.input_tokens,
                output_tokens: u.output_tokens,
                total_tokens: u.total_tokens,
                cached_input_tokens: u.cached_input_tokens,
                reasoning_tokens: u.reasoning_tokens,
            },
            Ok(StreamEvent::Finished { reason }) => Body::Finished {
                reason: reason.as_str(),
            },
            Err(ErrorInfo { kind, message, .. }) => Body::Error {
                kind: kind.as_str(),
                retryable: kind.is_retryable(),
                message,
            },
        }
    }
}
