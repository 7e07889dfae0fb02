"""The OpenAI-compatible HTTP front end (vLLM's api_server): /health, /start_profile,
/stop_profile (only when profiling is configured), /v1/completions, /v1/chat/completions."""
import json
import os
import socket
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from fake_vllm.engine import EngineDead

# Completions answered so far under the slow-answers fault.
_SLOW_COUNT = [0]
_SLOW_LOCK = threading.Lock()


def _tokens(text):
    """The fake tokenizer: one token per whitespace-separated word."""
    return len(str(text).split())


class Frontend:
    """The API process's own CPU trace (`{hostname}_{pid}.async_llm`), written into the profiler
    directory at each stop unless `ignore_frontend`."""

    def __init__(self, directory):
        self.directory = directory
        self.started_us = None

    def start(self):
        self.started_us = time.time_ns() // 1000

    def stop(self):
        if self.started_us is None:
            return
        name = f"{socket.gethostname()}_{os.getpid()}.async_llm.{time.time_ns() // 1_000_000}.pt.trace.json"
        os.makedirs(self.directory, exist_ok=True)
        end_us = time.time_ns() // 1000
        trace = {
            "traceEvents": [
                {"ph": "X", "cat": "user_annotation", "name": "AsyncLLM.generate", "pid": os.getpid(),
                 "tid": 1, "ts": self.started_us, "dur": max(end_us - self.started_us, 1)}
            ]
        }
        with open(os.path.join(self.directory, name), "w", encoding="utf-8") as handle:
            json.dump(trace, handle)
        self.started_us = None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-vllm"

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        print(f"INFO:     {self.address_string()} - {format % args}", flush=True)

    @property
    def app(self):
        return self.server.app

    def _send(self, status, body=None):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status, message, kind="BadRequestError"):
        self._send(status, {"error": {"message": message, "type": kind, "code": status}})

    def _body(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            return None
        return body if isinstance(body, dict) else None

    def do_GET(self):  # noqa: N802 - http.server's name
        if self.path == "/health":
            self._send(503 if self.app.engine.dead else 200)
        elif self.path == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": self.app.settings.model, "object": "model"}]})
        else:
            self._error(404, "Not Found", "NotFoundError")

    def do_POST(self):  # noqa: N802 - http.server's name
        routes = {"/v1/completions": self._completions, "/v1/chat/completions": self._chat}
        if self.app.settings.profiling is not None:
            routes.update({"/start_profile": self._start_profile, "/stop_profile": self._stop_profile})
        route = routes.get(self.path)
        if route is None:
            self._body()
            self._error(404, "Not Found", "NotFoundError")
            return
        try:
            route()
        except EngineDead as error:
            self.app.engine_died(error)
            self._error(500, str(error), "EngineDeadError")

    def _profile(self, command):
        self._body()
        replies = self.app.engine.collective_rpc((command,))
        failed = [r for r in replies if r != "ok"]
        if failed:
            self._error(500, failed[0].removeprefix("error: "), "RuntimeError")
            return False
        return True

    def _start_profile(self):
        if self._profile("start"):
            if self.app.frontend is not None:
                self.app.frontend.start()
            self._send(200)

    def _stop_profile(self):
        if self._profile("stop"):
            if self.app.frontend is not None:
                self.app.frontend.stop()
            self._send(200)

    def _request(self):
        """The body, its model checked; None when an error was sent."""
        body = self._body()
        if body is None:
            self._error(400, "invalid JSON body")
            return None
        model = body.get("model", self.app.settings.model)
        if model != self.app.settings.model:
            self._error(404, f"The model `{model}` does not exist.", "NotFoundError")
            return None
        max_tokens = body.get("max_tokens", 16)
        if not isinstance(max_tokens, int) or max_tokens < 1:
            self._error(400, "max_tokens must be at least 1")
            return None
        return body

    def _usage(self, prompt_tokens, generated):
        return {"prompt_tokens": prompt_tokens, "completion_tokens": generated,
                "total_tokens": prompt_tokens + generated}

    def _completions(self):
        body = self._request()
        if body is None:
            return
        if self.app.settings.fault == "slow-answers":
            # The first completion (a warm-up) at once, every later one slowly.
            with _SLOW_LOCK:
                _SLOW_COUNT[0] += 1
                first = _SLOW_COUNT[0] == 1
            if not first:
                time.sleep(float(os.environ.get("FAKE_VLLM_SLOW_SECONDS", "2")))
        prompt = body.get("prompt", "")
        prompt_tokens = _tokens(prompt if isinstance(prompt, str) else " ".join(map(str, prompt)))
        generated = self.app.engine.generate(prompt_tokens, body.get("max_tokens", 16))
        self._send(200, {
            "id": f"cmpl-{uuid.uuid4().hex}", "object": "text_completion", "created": int(time.time()),
            "model": self.app.settings.model,
            "choices": [{"index": 0, "text": " tok" * generated, "logprobs": None, "finish_reason": "length",
                         "stop_reason": None}],
            "usage": self._usage(prompt_tokens, generated),
        })

    def _chat(self):
        body = self._request()
        if body is None:
            return
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            self._error(400, "messages must be a non-empty list")
            return
        prompt_tokens = sum(_tokens(m.get("content", "")) for m in messages if isinstance(m, dict))
        generated = self.app.engine.generate(prompt_tokens, body.get("max_tokens", 16))
        self._send(200, {
            "id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
            "model": self.app.settings.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": " tok" * generated},
                         "logprobs": None, "finish_reason": "length", "stop_reason": None}],
            "usage": self._usage(prompt_tokens, generated),
        })


class App:
    """The server process's state, shared by the request threads."""

    def __init__(self, settings, engine):
        self.settings = settings
        self.engine = engine
        p = settings.profiling
        self.frontend = Frontend(p.directory) if p is not None and p.frontend else None
        self.httpd = None

    def engine_died(self, error):
        """vLLM's API server shuts down once the engine is dead (health says 503 meanwhile)."""
        print(f"ERROR: AsyncLLM output_handler failed. EngineDeadError: {error}", flush=True)
        threading.Thread(target=self._exit_later, daemon=True).start()

    def _exit_later(self):
        time.sleep(0.5)
        print("ERROR: Engine core died. Shutting down the API server.", flush=True)
        os._exit(1)

    def serve(self):
        self.httpd = ThreadingHTTPServer((self.settings.host, self.settings.port), Handler)
        self.httpd.daemon_threads = True
        self.httpd.app = self
        print(f"INFO:     Uvicorn running on http://{self.settings.host}:{self.settings.port}", flush=True)
        self.httpd.serve_forever(poll_interval=0.05)
