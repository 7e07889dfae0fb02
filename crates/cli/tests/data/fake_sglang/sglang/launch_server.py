"""`python -m sglang.launch_server --model-path M [--port P] [--tp-size N] …` for npuprof's tests:
a stdlib HTTP server with one scheduler process per tensor-parallel rank (not daemons: each
parses its own run at the stop), continuous batching in which every batch is a prefill
(EXTEND) of the new requests or a DECODE step of the running ones, and the profile routes of
SGLang's HTTP API. Written from the facts in docs/sglang.md; no SGLang code.

FAKE_SGLANG_ERA=old: no experimental config (before PR #24835). FAKE_SGLANG_FAULT: `die`
(rank 0 exits on its first forward while profiling), `never-healthy` (/health answers 503
forever), `ignore-sigterm`, `slow-parse` (every stop spends FAKE_SGLANG_SLOW_SECONDS, default 2,
writing before it parses)."""
import argparse
import json
import multiprocessing
import os
import signal
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from sglang.srt.managers.scheduler_components import profiler_manager

FAULT = os.environ.get("FAKE_SGLANG_FAULT", "")
STEP_SECONDS = 0.01


def parse(argv):
    p = argparse.ArgumentParser(prog="sglang.launch_server")
    p.add_argument("--model-path", "--model", dest="model_path", required=True)
    p.add_argument("--served-model-name")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=30000)
    p.add_argument("--tp-size", "--tensor-parallel-size", dest="tp", type=int, default=1)
    p.add_argument("--pp-size", "--pipeline-parallel-size", dest="pp", type=int, default=1)
    p.add_argument("--device", default="npu")
    p.add_argument("--disaggregation-mode", default="null")
    return p.parse_args(argv)


def _slow_write(run_dir):
    path = os.path.join(run_dir, "FRAMEWORK", "fake_sglang_slow_write.bin")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    deadline = time.monotonic() + float(os.environ.get("FAKE_SGLANG_SLOW_SECONDS", "2"))
    while time.monotonic() < deadline:
        with open(path, "ab") as handle:
            handle.write(b"\0" * 4096)
        time.sleep(0.2)


def scheduler(rank, size, conn):
    """One tensor-parallel rank's scheduler process: commands from the front end, one at a time."""
    if FAULT == "ignore-sigterm":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.environ.update({"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(size)})
    manager = profiler_manager.ProfilerManager(os.environ.get("FAKE_SGLANG_ERA") != "old")
    if FAULT == "slow-parse":
        stop = manager.stop

        def slow_stop():
            if manager.in_progress:
                _slow_write(manager.profiler.run_dir)
            return stop()

        manager.stop = slow_stop
    conn.send("ready")
    while True:
        try:
            command = conn.recv()
        except EOFError:
            return
        kind = command[0]
        if kind == "forward":
            if FAULT == "die" and manager.in_progress and rank == 0:
                print(f"[TP{rank}] fake fault: scheduler dies mid-run", flush=True)
                os._exit(1)
            manager.before_forward(command[1])
            time.sleep(STEP_SECONDS)
            manager.after_forward()
            conn.send("ok")
        elif kind == "start":
            error = manager.init(command[1])
            conn.send(error or "ok")
        elif kind == "stop":
            error = manager.stop()
            conn.send(error or "ok")
        elif kind == "exit":
            conn.send("bye")
            return


class Dead(Exception):
    """A scheduler died."""


class _Request:
    def __init__(self, prompt_tokens, max_tokens):
        self.prompt_tokens = prompt_tokens
        self.remaining = max_tokens
        self.generated = 0
        self.prefilled = False
        self.done = threading.Event()


class Engine:
    def __init__(self, size):
        self.dead = False
        self._rpc = threading.Lock()
        self._pending = []
        self._wake = threading.Condition()
        context = multiprocessing.get_context("fork")
        self._conns, self._procs = [], []
        for rank in range(size):
            parent, child = context.Pipe()
            proc = context.Process(target=scheduler, args=(rank, size, child), name=f"scheduler_TP{rank}")
            proc.start()
            self._conns.append(parent)
            self._procs.append(proc)
        for conn in self._conns:
            conn.recv()
        threading.Thread(target=self._run, daemon=True).start()

    def rpc(self, command):
        with self._rpc:
            if self.dead:
                raise Dead("the scheduler is gone")
            try:
                for conn in self._conns:
                    conn.send(command)
                return [conn.recv() for conn in self._conns]
            except (EOFError, OSError) as error:
                self.dead = True
                with self._wake:
                    for request in self._pending:
                        request.done.set()
                raise Dead("a scheduler died") from error

    def generate(self, prompt_tokens, max_tokens):
        request = _Request(prompt_tokens, max_tokens)
        with self._wake:
            if self.dead:
                raise Dead("the scheduler is gone")
            self._pending.append(request)
            self._wake.notify_all()
        request.done.wait()
        if self.dead and request.remaining > 0:
            raise Dead("a scheduler died")
        return request.generated

    def _run(self):
        while True:
            with self._wake:
                while not self._pending and not self.dead:
                    self._wake.wait()
                if self.dead:
                    return
                new = [r for r in self._pending if not r.prefilled]
                batch = new or list(self._pending)
            try:
                self.rpc(("forward", "extend" if new else "decode"))
            except Dead:
                return
            with self._wake:
                for request in batch:
                    request.prefilled = True
                    request.remaining -= 1
                    request.generated += 1
                    if request.remaining <= 0:
                        self._pending.remove(request)
                        request.done.set()

    def shutdown(self):
        try:
            self.rpc(("exit",))
        except Dead:
            pass
        for proc in self._procs:
            proc.join(timeout=5)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        print(f"INFO:     {self.address_string()} - {format % args}", flush=True)

    def _send(self, status, body=b"", kind="text/plain"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", kind if isinstance(body, bytes) else "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else None
        except json.JSONDecodeError:
            return None

    def do_GET(self):  # noqa: N802
        app = self.server.app
        if self.path in ("/health", "/health_generate"):
            healthy = not app.engine.dead and FAULT != "never-healthy" and time.monotonic() >= app.up_at
            self._send(200 if healthy else 503)
        elif self.path in ("/start_profile", "/stop_profile"):
            self.do_POST()
        elif self.path == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": app.model, "object": "model"}]})
        else:
            self._send(404, {"detail": "Not Found"})

    def do_POST(self):  # noqa: N802
        app = self.server.app
        body = self._body()
        routes = {
            "/start_profile": self._start_profile,
            "/stop_profile": self._stop_profile,
            "/v1/completions": self._completions,
            "/v1/chat/completions": self._completions,
            "/generate": self._completions,
        }
        route = routes.get(self.path)
        if route is None:
            self._send(404, {"detail": "Not Found"})
            return
        try:
            route(app, body if isinstance(body, dict) else {})
        except Dead as error:
            print(f"ERROR: {error}; exiting", flush=True)
            threading.Thread(target=lambda: (time.sleep(0.5), os._exit(1)), daemon=True).start()
            self._send(500, b"Internal Server Error")

    def _profile(self, app, command):
        failed = [r for r in app.engine.rpc(command) if r != "ok"]
        if failed:
            # SGLang raises RuntimeError(message): the framework answers 500.
            print(f"ERROR: RuntimeError: {failed[0]}", flush=True)
            self._send(500, b"Internal Server Error")
            return False
        return True

    def _start_profile(self, app, body):
        print(f"start_profile request: {json.dumps(body, sort_keys=True)}", flush=True)
        req = profiler_manager.request_defaults(body)
        req.profile_id = req.profile_id or str(time.time())
        if self._profile(app, ("start", req)):
            self._send(200, b"Start profiling.\n")

    def _stop_profile(self, app, body):
        del body
        if self._profile(app, ("stop",)):
            self._send(200, b"Stop profiling. This will take some time.\n")

    def _completions(self, app, body):
        prompt = body.get("prompt", body.get("messages", body.get("text", "")))
        if isinstance(prompt, list) and prompt and isinstance(prompt[0], dict):
            prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in prompt)
        elif isinstance(prompt, list):
            prompt_tokens = len(prompt)
        else:
            prompt_tokens = len(str(prompt).split())
        max_tokens = body.get("max_tokens") or body.get("sampling_params", {}).get("max_new_tokens", 16)
        generated = app.engine.generate(prompt_tokens, max_tokens)
        self._send(200, {
            "id": uuid.uuid4().hex, "object": "text_completion", "created": int(time.time()),
            "model": app.model,
            "choices": [{"index": 0, "text": " tok" * generated, "finish_reason": "length"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": generated,
                      "total_tokens": prompt_tokens + generated},
        })


class App:
    def __init__(self, args, engine):
        self.model = args.served_model_name or args.model_path
        self.engine = engine
        # SGLang answers 503 while the server is starting, then 200.
        self.up_at = time.monotonic() + 0.3


def main(argv):
    args = parse(argv)
    if FAULT == "ignore-sigterm":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    engine = Engine(args.tp * args.pp)
    httpd = ThreadingHTTPServer((args.host, args.port), Handler)
    httpd.daemon_threads = True
    httpd.app = App(args, engine)
    stopping = threading.Event()

    def on_signal(signum, frame):
        del frame
        if not stopping.is_set():
            stopping.set()
            threading.Thread(target=httpd.shutdown, daemon=True).start()

    if FAULT != "ignore-sigterm":
        signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    print(f"INFO:     Uvicorn running on http://{args.host}:{args.port}", flush=True)
    httpd.serve_forever(poll_interval=0.05)
    engine.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
