#!/usr/bin/env python3
"""Measures corvid's MCP start-up costs against @modelcontextprotocol/server-everything (stdio).

usage: bench/mcp_bench.py CORVID_BIN [--starts 20] [--sessions 10]

Reports:
  * process start -> ACP `initialize` answer with three MCP servers configured in the user
    settings (median / p90 over --starts fresh processes): servers start with sessions, in the
    background, so `initialize` must not wait for them;
  * `session/new` sent -> first model request listing `mcp__everything__echo` (median / p90 over
    --sessions fresh processes): the session is prompted right after `session/new` answers, with
    `mcp.startupTimeoutMs` high, so the request waits exactly until the tools are listed;
  * for scale, the server alone: spawn -> its `tools/list` answer, spoken to directly.
Needs `cd tests/mcp && npm ci`. Only 127.0.0.1 is contacted.
"""
import argparse, json, os, queue, statistics, subprocess, sys, tempfile, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EVERYTHING = os.path.join(ROOT, "tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js")


def make_handler(requests):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, *a):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
            requests.put((time.perf_counter(), body))
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            base = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "bench"}
            for delta, finish in (({"role": "assistant", "content": "ok"}, None), ({}, "stop")):
                self.wfile.write(("data: " + json.dumps({**base, "choices": [
                    {"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n\n").encode())
            self.wfile.write(b"data: [DONE]\n\n")
    return Handler


class Agent:
    def __init__(self, binary, home, cwd, url):
        env = {"PATH": os.environ["PATH"], "CORVID_HOME": home, "OPENAI_API_KEY": "sk-bench",
               "OPENAI_BASE_URL": url, "OPENAI_MODEL": "bench", "CORVID_EMIT_TOOL_USE_SUMMARIES": "0"}
        self.started = time.perf_counter()
        self.proc = subprocess.Popen([os.path.abspath(binary), "--acp"], cwd=cwd, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.next_id = 0

    def request(self, method, params):
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()
        while True:
            line = json.loads(self.proc.stdout.readline())
            if line.get("id") == self.next_id:
                return line

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def server_alone():
    """Milliseconds from spawning server-everything to its `tools/list` answer."""
    started = time.perf_counter()
    proc = subprocess.Popen(["node", EVERYTHING], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)

    def send(msg):
        proc.stdin.write((json.dumps(msg) + "\n").encode())
        proc.stdin.flush()

    def answer(i):
        while json.loads(proc.stdout.readline()).get("id") != i:
            pass

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
    answer(1)
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    answer(2)
    elapsed = (time.perf_counter() - started) * 1000
    proc.kill()
    proc.wait()
    return elapsed


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--starts", type=int, default=20)
    ap.add_argument("--sessions", type=int, default=10)
    args = ap.parse_args()
    if not os.path.isfile(EVERYTHING):
        sys.exit(f"mcp_bench: {EVERYTHING} is missing; run `cd tests/mcp && npm ci`")
    requests = queue.Queue()
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(requests))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as cwd:
        servers = {f"everything{i}": {"command": "node", "args": [EVERYTHING]} for i in (1, 2, 3)}
        with open(os.path.join(home, "settings.json"), "w") as f:
            json.dump({"mcpServers": servers, "mcp": {"startupTimeoutMs": 60000}}, f)
        init = []
        for _ in range(args.starts):
            agent = Agent(args.binary, home, cwd, url)
            agent.request("initialize", {"protocolVersion": 1})
            init.append((time.perf_counter() - agent.started) * 1000)
            agent.close()
        print(f"start -> initialize, 3 MCP servers configured: median {statistics.median(init):.1f} ms, "
              f"p90 {pct(init, 90):.1f} ms ({args.starts} starts)")

        with open(os.path.join(home, "settings.json"), "w") as f:
            json.dump({"mcpServers": {"everything": servers["everything1"]},
                       "mcp": {"startupTimeoutMs": 60000}}, f)
        listed = []
        for _ in range(args.sessions):
            agent = Agent(args.binary, home, cwd, url)
            agent.request("initialize", {"protocolVersion": 1})
            sent = time.perf_counter()
            sid = agent.request("session/new", {"cwd": cwd, "mcpServers": []})["result"]["sessionId"]
            agent.request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]})
            at, body = requests.get(timeout=60)
            names = [t["function"]["name"] for t in body.get("tools", [])]
            if "mcp__everything__echo" not in names:
                sys.exit(f"mcp_bench: the first request did not list the MCP tools: {names}")
            listed.append((at - sent) * 1000)
            agent.close()
        print(f"session/new -> first model request listing server-everything's tools (stdio): "
              f"median {statistics.median(listed):.0f} ms, p90 {pct(listed, 90):.0f} ms ({args.sessions} sessions)")
    alone = [server_alone() for _ in range(args.sessions)]
    print(f"server-everything alone, spawn -> tools/list answered: median {statistics.median(alone):.0f} ms, "
          f"p90 {pct(alone, 90):.0f} ms ({args.sessions} runs)")
    server.shutdown()


if __name__ == "__main__":
    main()
