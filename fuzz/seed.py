#!/usr/bin/env python3
"""Seeds fuzz/corpus/<target>/ from the repository's test fixtures (run from anywhere).

SSE targets get every testdata/sse/**/*.sse body, prefixed with a 0 byte (the target reads
its first byte as "how many chunk-size bytes follow", so 0 means the body as is). Settings,
session and shell seeds are the raw strings of the core tests; the rest are small examples.
"""
import hashlib
import pathlib
import re

FUZZ = pathlib.Path(__file__).resolve().parent
ROOT = FUZZ.parent
CORPUS = FUZZ / "corpus"


def put(target, data):
    if isinstance(data, str):
        data = data.encode()
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)


def raw_strings(path):
    """The r#"..."# literals of a Rust file, `{{`/`}}` of format strings undone."""
    text = path.read_text()
    for m in re.finditer(r'r#"(.*?)"#', text, re.S):
        s = m.group(1)
        if "{{" in s:
            s = s.replace("{{", "{").replace("}}", "}")
        yield s


sse = sorted((ROOT / "testdata" / "sse").rglob("*.sse"))
for f in sse:
    body = f.read_bytes()
    for target in ("sse_openai_chat", "sse_anthropic", "sse_openai_responses", "sse_gemini"):
        put(target, b"\x00" + body)
        put(target, b"\x02\x00\x06" + body)  # chunks of 1 and 7 bytes

for f in sorted((ROOT / "core" / "tests").glob("settings_*.rs")):
    for s in raw_strings(f):
        put("settings_file", s)
put("settings_file", '// comment\n{ /* c */ "model": {"name": "m", "contextWindow": 2048,},\n'
    ' "tools": {"allow": ["run_shell_command(git status)"], "deny": ["write_file(/etc/**)"]}}\n')

header = ('{"record":"header","version":1,"session_id":"fuzz","cwd":"/fuzz/project",'
          '"model":"m","started_at_ms":1}\n')
lines = [
    '{"record":"message","message":{"role":"user","parts":[{"type":"text","text":"hi"}]}}\n',
    '{"record":"call_started","call_id":"c1"}\n',
    '{"record":"message","message":{"role":"assistant","parts":[{"type":"tool_call",'
    '"call_id":"c1","name":"read_file","args":{"path":"a"}}]}}\n',
    '{"record":"model_change","from":"m","to":"n"}\n',
    '{"record":"compacted","summary":"s","kept_messages":1,"tokens_before":9,"tokens_after":3}\n',
    '{"record":"history_cleared"}\n',
    '{"record":"message","message":{"role":"assis',
]
put("session_load", header + "".join(lines))
for line in lines:
    put("session_load", header + line)
for f in sorted((ROOT / "core" / "tests").glob("session_*.rs")):
    for s in raw_strings(f):
        put("session_load", header + s)

for f in [ROOT / "core" / "tests" / "shell_split.rs", ROOT / "core" / "src" / "policy" / "rules.rs"]:
    for s in re.findall(r'"((?:[^"\\\n]|\\.)*)"', f.read_text()):
        if " " in s:
            put("shell_words", s + "\nrun_shell_command(git)\nwrite_file(src/**)")

for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
    text = doc.read_text()
    put("markdown", b"P" + text[:4000].encode())
put("markdown", b"\x14| a | b |\n|---|:-:|\n| 1 | **two** |\n\n```rust\nfn x() {}\n```\n- [ ] item\n  > quote `code`\n")

for line in [
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\r\n',
    '{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}\n\xff\n',
    'not json\n\n{"unknown":1}',
]:
    put("acp_lines", line.encode("utf-8", "surrogateescape"))

for result in [
    '{"content":[{"type":"text","text":"hello"}],"isError":false}',
    '{"content":[{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}]}',
    '{"content":[{"type":"resource","resource":{"uri":"file:///a","text":"t"}},'
    '{"type":"resource_link","uri":"file:///b","name":"b"}],"structuredContent":{"a":1}}',
    '{"content":[{"type":"audio","data":"AAAA","mimeType":"audio/wav"}],"isError":true}',
]:
    put("mcp_result", result)

for target in sorted(p.name for p in CORPUS.iterdir()):
    print(f"{target}: {len(list((CORPUS / target).iterdir()))} seeds")
