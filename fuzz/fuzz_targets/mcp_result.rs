//! MCP `tools/call` result conversion: never panics on anything a server sends.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| corvid_mcp::fuzz_tool_result(data));
