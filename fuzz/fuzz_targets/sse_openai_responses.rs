//! The OpenAI Responses SSE decoder: never panics, same items however the bytes are split.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    corvid_fuzz::sse_split_invariant(corvid_providers::WireProtocol::OpenAiResponses, data);
    let _ = corvid_providers::decode_whole_response(
        corvid_providers::WireProtocol::OpenAiResponses,
        data,
    );
});
