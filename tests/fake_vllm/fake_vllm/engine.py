"""The engine: its worker processes (daemons when TP>1, as vLLM's multiproc executor makes
them; one non-daemon process for TP=1, standing for the EngineCore that runs the worker) and a
continuous-batching loop: every iteration is one forward on every worker, a prefill for the
requests that arrived, a decode token for the others."""
import multiprocessing
import threading

from fake_vllm import worker


class EngineDead(Exception):
    """A worker died: the engine is gone for good."""


class _Request:
    def __init__(self, prompt_tokens, max_tokens):
        self.prompt_tokens = prompt_tokens
        self.remaining = max_tokens
        self.generated = 0
        self.prefilled = False
        self.done = threading.Event()


class Engine:
    def __init__(self, settings):
        self.settings = settings
        self.dead = False
        self.forwards = 0
        self._rpc = threading.Lock()
        self._pending = []
        self._wake = threading.Condition()
        context = multiprocessing.get_context("fork")
        size = settings.tensor_parallel_size
        self._conns = []
        self._procs = []
        for rank in range(size):
            parent, child = context.Pipe()
            proc = context.Process(
                target=worker.serve,
                args=(rank, size, settings, child),
                name=f"VllmWorker-{rank}" if size > 1 else "EngineCore",
                daemon=size > 1,
            )
            proc.start()
            self._conns.append(parent)
            self._procs.append(proc)
        for conn in self._conns:
            if conn.recv() != "ready":
                raise EngineDead("a worker failed to start")
        self._loop = threading.Thread(target=self._run, daemon=True)
        self._loop.start()

    def collective_rpc(self, command):
        """Sends `command` to every worker and returns their replies, in rank order."""
        with self._rpc:
            if self.dead:
                raise EngineDead("EngineCore encountered an issue")
            try:
                for conn in self._conns:
                    conn.send(command)
                return [conn.recv() for conn in self._conns]
            except (EOFError, OSError, BrokenPipeError) as error:
                self.dead = True
                with self._wake:
                    for request in self._pending:
                        request.done.set()
                    self._wake.notify_all()
                raise EngineDead("EngineCore encountered an issue: a worker died") from error

    def generate(self, prompt_tokens, max_tokens):
        """Runs one request to its end; returns the tokens generated."""
        request = _Request(prompt_tokens, max_tokens)
        with self._wake:
            if self.dead:
                raise EngineDead("EngineCore encountered an issue")
            self._pending.append(request)
            self._wake.notify_all()
        request.done.wait()
        if self.dead and request.remaining > 0:
            raise EngineDead("EngineCore encountered an issue")
        return request.generated

    def _run(self):
        while True:
            with self._wake:
                while not self._pending and not self.dead:
                    self._wake.wait()
                if self.dead:
                    return
                batch = list(self._pending)
            try:
                self.collective_rpc(("step", sum(r.prompt_tokens if not r.prefilled else 1 for r in batch)))
            except EngineDead:
                return
            self.forwards += 1
            with self._wake:
                for request in batch:
                    if not request.prefilled:
                        request.prefilled = True
                    if request.remaining > 0:
                        request.remaining -= 1
                        request.generated += 1
                    if request.remaining <= 0:
                        self._pending.remove(request)
                        request.done.set()

    def shutdown(self):
        try:
            self.collective_rpc(("exit",))
        except EngineDead:
            pass
        for proc in self._procs:
            proc.join(timeout=5)
