"""`vllm serve MODEL …`: parse, start the engine (then, and only then, open the port), serve
until SIGTERM/SIGINT, acting out the fault FAKE_VLLM_FAULT names."""
import signal
import subprocess
import sys
import threading
import time

from fake_vllm import config
from fake_vllm.engine import Engine
from fake_vllm.server import App


def main(argv):
    try:
        settings = config.parse(argv)
    except (config.UsageError, ValueError) as error:
        print(f"vllm: error: {error}", file=sys.stderr, flush=True)
        return 2
    if settings.fault == "ignore-sigterm":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    p = settings.profiling
    if p is not None:
        if settings.era == "env":
            print(f"INFO: Profiling enabled. Traces will be saved to: {p.directory}", flush=True)
        else:
            print(f"INFO: Torch profiler enabled. Traces will be saved to: {p.directory}", flush=True)
    if settings.fault == "never-healthy":
        print("INFO: Loading model weights took forever (fake fault: never healthy)", flush=True)
        while True:
            time.sleep(1)
    if settings.fault == "setsid-child":
        # A helper in a session of its own (as some servers start their workers): ending the
        # server's process group does not reach it.
        subprocess.Popen(["sleep", "1000"], start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    engine = Engine(settings)
    app = App(settings, engine)
    stopping = threading.Event()

    def on_signal(signum, frame):
        del frame
        if not stopping.is_set():
            stopping.set()
            print(f"INFO:     Shutting down (signal {signum})", flush=True)
            if app.httpd is None:
                sys.exit(0)
            threading.Thread(target=app.httpd.shutdown, daemon=True).start()

    if settings.fault != "ignore-sigterm":
        signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    app.serve()
    engine.shutdown()
    print("INFO:     Finished server process", flush=True)
    return 0
