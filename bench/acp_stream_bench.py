#!/usr/bin/env python3
"""Measures corvid's ACP output path at scale against a loopback SSE server in this process.

usage: bench/acp_stream_bench.py CORVID_BIN [--deltas 80000] [--slow-deltas 5000]
                                 [--only stream|paced|slow]

Reports:
  * stream: one text-only answer of --deltas deltas, sent by the mock in one write, read by a
    fast client: frames written, the agent's CPU time (user+system of the whole process) per
    delta and per frame, wall time, and RSS idle (after session/new) / peak (VmHWM) / after;
  * paced: the same with one write+flush per delta, so that most deltas are frames of their own;
  * slow: a client that reads one frame per millisecond against a model streaming text and
    three tool calls at full speed: peak RSS, frames read, whether every tool frame arrived
    in order and the text arrived complete.
Many sessions at once are measured by `cargo bench -p corvid-cli --bench acp_sessions`: this
mock's threads could not serve them at once (see bench/acp_stream.md).
Only 127.0.0.1 is contacted.
"""
import argparse, json, os, sys, tempfile, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import acp_bench  # noqa: E402
from acp_bench import ARG_FRAGMENTS, chunk  # noqa: E402

BASE = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "bench"}
TICKS = os.sysconf("SC_CLK_TCK")


def delta_text(i):
    return f"w{i} "


def text_body(n, finish):
    """n content deltas then a finish chunk, as one SSE body."""
    parts = [chunk({**BASE, "choices": [{"index": 0, "delta": {"content": delta_text(i)}}]}) for i in range(n)]
    if finish:
        parts.append(chunk({**BASE, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}))
    return b"".join(parts)


def tool_body(cid):
    args = "".join(ARG_FRAGMENTS)
    return chunk({**BASE, "choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": cid, "type": "function", "function": {"name": "read_file", "arguments": args}}]}}]}) + \
        chunk({**BASE, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})


class Mock:
    """A loopback OpenAI-shaped SSE server; `respond(n, handler)` writes the n-th response."""

    def __init__(self, respond):
        self.respond = respond
        self.served = 0
        self.lock = threading.Lock()
        mock = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *a):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                with mock.lock:
                    n = mock.served
                    mock.served += 1
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                mock.respond(n, self, body)
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


class Agent(acp_bench.Agent):
    """acp_bench's raw JSON-RPC client; `delay` > 0 sleeps that long after each line read."""

    def __init__(self, binary, env, cwd, delay=0.0):
        self.delay = delay  # before the reader thread starts
        super().__init__(binary, env, cwd)

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put((time.perf_counter(), json.loads(line)))
            if self.delay:
                time.sleep(self.delay)
        self.lines.put((time.perf_counter(), None))

    def call(self, method, params, on_message=None, timeout=600):
        return self.until_response(self.request(method, params), on_message, timeout)[1]

    def status(self, key):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
        return 0

    def cpu_seconds(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS



def environment(port, work):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "CORVID_"))}
    env.update({"OPENAI_API_KEY": "sk-bench", "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
                "OPENAI_MODEL": "bench", "CORVID_HOME": os.path.join(work, "home"),
                "CORVID_EMIT_TOOL_USE_SUMMARIES": "0"})
    return env


def workdir():
    work = tempfile.mkdtemp(prefix="corvid-stream-bench-")
    with open(os.path.join(work, "notes.txt"), "w") as f:
        f.write("bench notes\n")
    return work


INIT = {"protocolVersion": 1, "clientCapabilities": {}}


def open_agent(binary, mock, work, delay=0.0):
    agent = Agent(binary, environment(mock.server.server_port, work), work, delay)
    agent.call("initialize", INIT)
    return agent


def prompt(agent, sid, on_message, timeout=600):
    return agent.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]},
                      on_message, timeout)


def bench_stream(binary, n, paced):
    body = text_body(n, "stop")

    def respond(_, handler, _body):
        if not paced:
            handler.wfile.write(body)
            return
        # One write and flush per delta: the agent mostly sees one delta at a time, so
        # (almost) every delta becomes its own frame.
        for i in range(n):
            handler.wfile.write(chunk({**BASE, "choices": [{"index": 0, "delta": {"content": delta_text(i)}}]}))
            handler.wfile.flush()
        handler.wfile.write(chunk({**BASE, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))

    mock, work = Mock(respond), workdir()
    agent = open_agent(binary, mock, work)
    sid = agent.call("session/new", {"cwd": work, "mcpServers": []})["sessionId"]
    time.sleep(0.3)
    idle = agent.status("VmRSS")
    text, frames = [], [0]

    def on_message(_, msg):
        upd = msg.get("params", {}).get("update", {})
        if upd.get("sessionUpdate") == "agent_message_chunk":
            frames[0] += 1
            text.append(upd["content"]["text"])

    cpu0, t0 = agent.cpu_seconds(), time.perf_counter()
    prompt(agent, sid, on_message)
    wall, cpu = time.perf_counter() - t0, agent.cpu_seconds() - cpu0
    peak = agent.status("VmHWM")
    time.sleep(1.0)
    after = agent.status("VmRSS")
    agent.close()
    mock.close()
    complete = "".join(text) == "".join(delta_text(i) for i in range(n))
    name = "stream (paced)" if paced else "stream"
    print(f"{name}: {n} deltas -> {frames[0]} frames in {wall:.2f} s wall; agent CPU {cpu:.2f} s = "
          f"{cpu / n * 1e6:.1f} us/delta, {cpu / frames[0] * 1e6:.1f} us/frame "
          f"({frames[0] / cpu if cpu else float('inf'):,.0f} frames per CPU-second); text complete: {complete}")
    print(f"{name}: RSS idle {idle / 1024:.1f} MiB, peak {peak / 1024:.1f} MiB, after the answer "
          f"{after / 1024:.1f} MiB (+{(after - idle) / 1024:.1f} MiB over idle)")


def bench_slow(binary, n):
    calls = 3

    def respond(k, handler, _body):
        for i in range(n):  # one write per delta, so an unbounded agent would queue n frames
            handler.wfile.write(chunk({**BASE, "choices": [{"index": 0, "delta": {"content": delta_text(i)}}]}))
            handler.wfile.flush()
        if k < calls:
            handler.wfile.write(tool_body(f"call_{k}"))
        else:
            handler.wfile.write(chunk({**BASE, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))

    mock, work = Mock(respond), workdir()
    agent = open_agent(binary, mock, work, delay=0.001)
    sid = agent.call("session/new", {"cwd": work, "mcpServers": []})["sessionId"]
    time.sleep(0.3)
    idle = agent.status("VmRSS")
    text, tool_frames, frames = [], [], [0]

    def on_message(_, msg):
        upd = msg.get("params", {}).get("update", {})
        kind = upd.get("sessionUpdate")
        if kind == "agent_message_chunk":
            frames[0] += 1
            text.append(upd["content"]["text"])
        elif kind in ("tool_call", "tool_call_update"):
            frames[0] += 1
            tool_frames.append((upd["toolCallId"], upd.get("_meta", {}).get("phase") or upd.get("status")))

    t0 = time.perf_counter()
    prompt(agent, sid, on_message)
    wall = time.perf_counter() - t0
    peak = agent.status("VmHWM")
    agent.close()
    mock.close()
    expected = "".join(delta_text(i) for i in range(n)) * (calls + 1)
    statuses = {}
    for cid, status in tool_frames:
        statuses.setdefault(cid, []).append(status)
    every_tool = all(statuses.get(f"call_{k}", [])[-1:] == ["completed"] for k in range(calls))
    print(f"slow client (1 frame/ms): {n * (calls + 1)} deltas + {calls} tool calls -> {frames[0]} frames "
          f"in {wall:.2f} s; RSS idle {idle / 1024:.1f} MiB, peak {peak / 1024:.1f} MiB; "
          f"text complete: {''.join(text) == expected}; every tool call completed: {every_tool} "
          f"({len(tool_frames)} tool frames: {statuses})")


def main():
    # The mock's and the reader's threads share one GIL; the default 5 ms switch interval would
    # pace the slow client and the mock by the interpreter rather than by the agent.
    sys.setswitchinterval(0.0001)
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--deltas", type=int, default=80000)
    ap.add_argument("--slow-deltas", type=int, default=5000)
    ap.add_argument("--only", choices=["stream", "paced", "slow"])
    a = ap.parse_args()
    if a.only in (None, "stream"):
        bench_stream(a.binary, a.deltas, paced=False)
    if a.only in (None, "paced"):
        bench_stream(a.binary, a.deltas, paced=True)
    if a.only in (None, "slow"):
        bench_slow(a.binary, a.slow_deltas)


if __name__ == "__main__":
    main()
