#!/usr/bin/env python3
"""Measures corvid's ACP budgets (SPEC §11) against a loopback SSE server in this process.

usage: bench/acp_bench.py CORVID_BIN [--turns 100] [--starts 20] [--api chat|responses]

`--api responses` serves OpenAI Responses events (`OPENAI_API=responses`): the "first tool-call
chunk" is then `response.output_item.added` of the `function_call` item, the finish chunk
`response.completed`.

Reports:
  * process start -> `initialize` answer (median / p90 over --starts fresh processes);
  * first tool-call chunk flushed by the server -> preparing frame read by the client (p50 / p99);
  * finish chunk flushed -> `in_progress` frame read (p50 / p99);
  * peak RSS (VmHWM) of the agent over a --turns-turn scripted session.
Both timestamps of each latency come from this one process (time.perf_counter), so they share a clock.
Only 127.0.0.1 is contacted.
"""
import argparse, json, os, queue, statistics, subprocess, sys, tempfile, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARG_FRAGMENTS = ['{"file', '_path"', ': "', 'notes', '.txt', '"}']


def chunk(obj):
    return ("data: " + json.dumps(obj) + "\n\n").encode()


class Script:
    """The responses the mock server gives, in order, and when it flushed the key chunks."""

    def __init__(self, turns, api):
        self.turns = turns
        self.api = api
        self.served = 0
        self.first_chunk_at = {}   # call id -> perf_counter when its id+name chunk was flushed
        self.finish_at = {}        # call id -> perf_counter when the finish chunk was flushed
        self.lock = threading.Lock()


def stream_tool_call(wfile, base, cid, first_chunk_at, finish_at):
    """Streams one `read_file` call: the id+name chunk, six argument fragments 2 ms apart, the
    finish chunk; records when the first and the finish chunk were flushed."""
    wfile.write(chunk({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [
        {"index": 0, "id": cid, "type": "function", "function": {"name": "read_file", "arguments": ""}}]}}]}))
    wfile.flush()
    first_chunk_at[cid] = time.perf_counter()
    for frag in ARG_FRAGMENTS:
        time.sleep(0.002)
        wfile.write(chunk({**base, "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": frag}}]}}]}))
        wfile.flush()
    time.sleep(0.002)
    wfile.write(chunk({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}))
    wfile.flush()
    finish_at[cid] = time.perf_counter()


def responses_event(wfile, kind, seq, **fields):
    wfile.write(("event: " + kind + "\n").encode() + chunk({"type": kind, "sequence_number": seq, **fields}))
    wfile.flush()


def stream_responses_call(wfile, cid, first_chunk_at, finish_at):
    """The same call as Responses events: the item is added (with call id and name), six
    argument deltas 2 ms apart, the item done, `response.completed`."""
    item = {"id": "fc_" + cid, "type": "function_call", "status": "in_progress", "arguments": "",
            "call_id": cid, "name": "read_file"}
    responses_event(wfile, "response.created", 0, response={"id": "resp_" + cid, "status": "in_progress"})
    responses_event(wfile, "response.output_item.added", 1, output_index=0, item=item)
    first_chunk_at[cid] = time.perf_counter()
    seq = 2
    for frag in ARG_FRAGMENTS:
        time.sleep(0.002)
        responses_event(wfile, "response.function_call_arguments.delta", seq, item_id=item["id"],
                        output_index=0, delta=frag)
        seq += 1
    time.sleep(0.002)
    done = {**item, "status": "completed", "arguments": "".join(ARG_FRAGMENTS)}
    responses_event(wfile, "response.output_item.done", seq, output_index=0, item=done)
    responses_event(wfile, "response.completed", seq + 1, response={
        "id": "resp_" + cid, "status": "completed", "output": [done],
        "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}})
    finish_at[cid] = time.perf_counter()


def responses_text(wfile):
    item = {"id": "msg_1", "type": "message", "status": "in_progress", "content": [], "role": "assistant"}
    responses_event(wfile, "response.created", 0, response={"id": "resp_end", "status": "in_progress"})
    responses_event(wfile, "response.output_item.added", 1, output_index=0, item=item)
    responses_event(wfile, "response.output_text.delta", 2, item_id="msg_1", output_index=0,
                    content_index=0, delta="done")
    responses_event(wfile, "response.completed", 3, response={"id": "resp_end", "status": "completed",
                                                              "output": []})


def card_times():
    """When each call's preparing card and its `in_progress` frame were read, and the
    on_message callback that records them."""
    prepared, started = {}, {}

    def on_message(at, msg):
        upd = msg.get("params", {}).get("update", {})
        cid = upd.get("toolCallId")
        if upd.get("sessionUpdate") == "tool_call" and upd.get("_meta", {}).get("phase") == "preparing":
            prepared.setdefault(cid, at)
        if upd.get("status") == "in_progress":
            started.setdefault(cid, at)

    return prepared, started, on_message


def make_handler(script):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # body ends when the connection closes

        def log_message(self, *a):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("content-length", 0)))
            with script.lock:
                n = script.served
                script.served += 1
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            if script.api == "responses":
                if n < script.turns:
                    stream_responses_call(self.wfile, f"call_{n}", script.first_chunk_at, script.finish_at)
                else:
                    responses_text(self.wfile)
                return
            base = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "bench"}
            if n < script.turns:
                stream_tool_call(self.wfile, base, f"call_{n}", script.first_chunk_at, script.finish_at)
            else:
                self.wfile.write(chunk({**base, "choices": [{"index": 0, "delta": {"content": "done"}}]}))
                self.wfile.write(chunk({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

    return Handler


class Agent:
    """A raw JSON-RPC client over the agent's stdio, timestamping every line it reads."""

    def __init__(self, binary, env, cwd):
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen([binary, "--acp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env, cwd=cwd)
        self.lines = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put((time.perf_counter(), json.loads(line)))
        self.lines.put((time.perf_counter(), None))

    def send(self, obj):
        self.proc.stdin.write((json.dumps(obj) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def until(self, done, on_message=None, timeout=120):
        """Reads messages until done(msg) is true, passing every other one but requests to
        on_message; allows every request to the client on the way."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            at, msg = self.lines.get(timeout=timeout)
            if msg is None:
                raise SystemExit("agent exited early")
            if done(msg):
                return at, msg
            if "method" in msg and "id" in msg:  # a request to the client: allow everything
                opts = msg["params"].get("options", [])
                allow = next((o["optionId"] for o in opts if o["kind"].startswith("allow")), None)
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": {"outcome": (
                    {"outcome": "selected", "optionId": allow} if allow else {"outcome": "cancelled"})}})
            elif on_message:
                on_message(at, msg)
        raise SystemExit("timed out")

    def until_response(self, rid, on_message=None, timeout=120):
        at, msg = self.until(lambda m: m.get("id") == rid and "method" not in m, on_message, timeout)
        if "error" in msg:
            raise SystemExit(f"agent error: {msg['error']}")
        return at, msg["result"]

    def peak_rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        return 0

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--turns", type=int, default=100)
    ap.add_argument("--starts", type=int, default=20)
    ap.add_argument("--api", choices=["chat", "responses"], default="chat")
    a = ap.parse_args()

    script = Script(a.turns, a.api)
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(script))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    work = tempfile.mkdtemp(prefix="corvid-bench-")
    with open(os.path.join(work, "notes.txt"), "w") as f:
        f.write("bench notes\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "CORVID_"))}
    env.update({"OPENAI_API_KEY": "sk-bench", "OPENAI_BASE_URL": f"http://127.0.0.1:{server.server_port}/v1",
                "OPENAI_MODEL": "bench", "CORVID_HOME": os.path.join(work, "home"),
                "CORVID_EMIT_TOOL_USE_SUMMARIES": "0", "OPENAI_API": a.api})
    init = {"protocolVersion": 1, "clientCapabilities": {}}

    starts = []
    for _ in range(a.starts):
        agent = Agent(a.binary, env, work)
        at, _ = agent.until_response(agent.request("initialize", init))
        starts.append((at - agent.t0) * 1000)
        agent.close()

    agent = Agent(a.binary, env, work)
    agent.until_response(agent.request("initialize", init))
    _, new = agent.until_response(agent.request("session/new", {"cwd": work, "mcpServers": []}))
    prepared, started, on_message = card_times()

    agent.until_response(agent.request("session/prompt", {"sessionId": new["sessionId"], "prompt": [
        {"type": "text", "text": "read notes.txt again and again"}]}), on_message, timeout=600)
    rss = agent.peak_rss_kib()
    agent.close()
    server.shutdown()

    prep = [(prepared[c] - t) * 1000 for c, t in script.first_chunk_at.items() if c in prepared]
    inprog = [(started[c] - t) * 1000 for c, t in script.finish_at.items() if c in started]
    if len(prep) != a.turns or len(inprog) != a.turns:
        raise SystemExit(f"missing frames: {len(prep)} preparing, {len(inprog)} in_progress of {a.turns} turns")
    print(f"start -> initialize answer: median {statistics.median(starts):.1f} ms, p90 {pct(starts, 90):.1f} ms ({a.starts} starts)")
    print(f"first tool chunk -> preparing frame: p50 {pct(prep, 50):.3f} ms, p99 {pct(prep, 99):.3f} ms ({len(prep)} calls)")
    print(f"finish chunk -> in_progress frame: p50 {pct(inprog, 50):.3f} ms, p99 {pct(inprog, 99):.3f} ms")
    print(f"peak RSS over a {a.turns}-turn session: {rss / 1024:.1f} MiB")


if __name__ == "__main__":
    main()
