"""One NPU worker process: it creates torch_npu's profiler as vLLM-Ascend's worker does (no
schedule, Text export, Level1, the era's AI Core metrics), starts and stops it on the engine's
RPC and steps it once per forward."""
import os
import signal
import threading
import time


def worker_name(rank):
    """vLLM's rank suffix, the `worker_name` of the profiler-config era (PR 6968)."""
    return f"dp0_pp0_tp{rank}_dcp0_ep{rank}_rank{rank}"


class _Worker:
    def __init__(self, rank, world_size, settings):
        self.rank = rank
        self.settings = settings
        self.profiling = settings.profiling
        self.profiler = None
        self.active = False
        self.busy = None  # the thread finishing a stop
        os.environ.update(
            {"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(world_size)}
        )
        if self.profiling is not None and not self.profiling.lazy:
            self.profiler = self._create()

    def _create(self):
        import torch_npu  # the fake, on PYTHONPATH

        p = self.profiling
        profiler = torch_npu.profiler
        config = profiler._ExperimentalConfig(
            export_type=profiler.ExportType.Text,
            profiler_level=profiler.ProfilerLevel.Level1,
            msprof_tx=False,
            aic_metrics=getattr(profiler.AiCMetrics, p.aic_metrics),
            l2_cache=False,
            op_attr=False,
            data_simplification=p.data_simplification,
            record_op_args=False,
            gc_detect_threshold=None,
        )
        handler_args = {"worker_name": worker_name(self.rank)} if p.rank_worker_names else {}
        # The slow-stop fault parses by hand after its slow writes (below).
        if self.settings.fault == "slow-stop":
            handler_args["analyse_flag"] = False
        return profiler.profile(
            activities=[profiler.ProfilerActivity.CPU, profiler.ProfilerActivity.NPU],
            with_stack=p.with_stack,
            profile_memory=p.with_memory,
            with_modules=p.with_modules,
            experimental_config=config,
            on_trace_ready=profiler.tensorboard_trace_handler(p.directory, **handler_args),
        )

    def handle(self, command):
        """Runs one RPC; returns the reply."""
        kind = command[0]
        if kind == "step":
            if self.settings.fault == "die" and self.active and self.rank == 0:
                print(f"[rank{self.rank}] fake fault: worker dies mid-run", flush=True)
                os._exit(1)
            time.sleep(self.settings.step_seconds)
            if self.active:
                self.profiler.step()
            return "ok"
        if kind == "start":
            self._join()
            if self.profiling is None:
                return "error: Profiling is not enabled. Please set --profiler-config."
            if self.profiler is None:
                self.profiler = self._create()
            self.profiler.start()
            self.active = True
            return "ok"
        if kind == "stop":
            if not self.active:
                return "error: Profiler is not started."
            self.active = False
            if self.settings.fault == "slow-stop":
                self.busy = threading.Thread(target=self._slow_stop)
                self.busy.start()
            elif self.profiling.async_parse:
                # async_mode=True: the parse runs after the RPC has returned.
                self.busy = threading.Thread(target=self._late_stop)
                self.busy.start()
            else:
                self.profiler.stop()
            print(f"[rank{self.rank}] Profiler stopped successfully", flush=True)
            return "ok"
        if kind == "exit":
            self._join()
            return "bye"
        return f"error: unknown command {kind}"

    def _late_stop(self):
        time.sleep(0.3)
        self.profiler.stop()

    def _slow_stop(self):
        """Writes the run directory slowly (a chunk every 0.2 s for FAKE_VLLM_SLOW_SECONDS), then
        saves and parses it, as a stop over a slow disk does."""
        run_dir = self.profiler.run_dir
        path = os.path.join(run_dir, "FRAMEWORK", "fake_vllm_slow_write.bin")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        deadline = time.monotonic() + self.settings.slow_seconds
        while time.monotonic() < deadline:
            with open(path, "ab") as handle:
                handle.write(b"\0" * 4096)
            time.sleep(0.2)
        self.profiler.stop()
        import multiprocessing

        if not multiprocessing.current_process().daemon:
            from torch_npu.profiler.profiler import analyse

            analyse(run_dir)

    def _join(self):
        if self.busy is not None:
            self.busy.join()
            self.busy = None


def serve(rank, world_size, settings, conn):
    """The worker process's main loop: one command at a time from `conn`."""
    if settings.fault == "ignore-sigterm":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    worker = _Worker(rank, world_size, settings)
    conn.send("ready")
    while True:
        try:
            command = conn.recv()
        except EOFError:
            break
        reply = worker.handle(command)
        conn.send(reply)
        if reply == "bye":
            break
