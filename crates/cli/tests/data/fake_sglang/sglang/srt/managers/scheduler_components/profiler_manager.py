"""The scheduler's profiler, written for npuprof's tests from the facts in docs/sglang.md (no
SGLang code): a start request (`ProfileReq` fields) configures it; without `num_steps` and
`profile_by_stage` it starts at once and runs until the stop request; with `num_steps` it stops
by itself after that many forward steps; with `profile_by_stage` the prefill (EXTEND) and DECODE
stages are runs of their own, `num_steps` steps each. The torch profiler is torch_npu's (the
fake's, on PYTHONPATH), default worker name, parsed in the scheduler at the stop."""
import os
import types


def _env_bool(name, default):
    return os.environ.get(name, default).lower() in ("1", "true")


def request_defaults(req):
    """What the HTTP front end does to a start request: the environment's stack and shape
    defaults (on unless "0"/"false"), a False in the body always wins."""
    req = dict(req or {})
    fields = ("output_dir", "num_steps", "profile_by_stage", "profile_id")
    out = types.SimpleNamespace(**{f: req.get(f) for f in fields})
    out.with_stack = not (req.get("with_stack") is False or not _env_bool("SGLANG_PROFILE_WITH_STACK", "true"))
    out.record_shapes = req.get("record_shapes") is not False and _env_bool("SGLANG_PROFILE_RECORD_SHAPES", "true")
    return out


class ProfilerManager:
    def __init__(self, experimental):
        # Since PR #24835 the profiler gets an _ExperimentalConfig; FAKE_SGLANG_ERA=old passes none.
        self.experimental = experimental
        self.profiler = None
        self.in_progress = False
        self.forward_ct = 0
        self.target_ct = None
        self.by_stage = False
        self.stage_ct = {"extend": 0, "decode": 0}
        self.stage_target = None
        self.req = None

    def init(self, recv_req):
        """Configures a capture; starts it now unless it waits for a stage. Returns an error or None."""
        if self.in_progress:
            return "Profiling is already in progress. Call /stop_profile first."
        self.req = recv_req
        self.output_dir = recv_req.output_dir or os.environ.get("SGLANG_TORCH_PROFILER_DIR", "/tmp")
        self.by_stage = bool(recv_req.profile_by_stage)
        steps = recv_req.num_steps
        if self.by_stage:
            if not steps:
                return "profile_by_stage needs num_steps"
            self.stage_ct = {"extend": 0, "decode": 0}
            self.stage_target = steps
            return None
        self.target_ct = self.forward_ct + steps + 1 if steps else None
        return self.start()

    def start(self):
        import torch_npu  # the fake, on PYTHONPATH

        p = torch_npu.profiler
        config = None
        if self.experimental:
            config = p._ExperimentalConfig(
                export_type=p.ExportType.Text,
                profiler_level=p.ProfilerLevel.Level1,
                msprof_tx=False,
                aic_metrics=p.AiCMetrics.PipeUtilization,
                l2_cache=False,
                op_attr=False,
                data_simplification=False,
                record_op_args=False,
            )
        kwargs = {"experimental_config": config} if config is not None else {}
        self.profiler = p.profile(
            activities=[p.ProfilerActivity.CPU, p.ProfilerActivity.NPU],
            with_stack=self.req.with_stack,
            record_shapes=self.req.record_shapes,
            on_trace_ready=p.tensorboard_trace_handler(self.output_dir),
            **kwargs,
        )
        self.profiler.start()
        self.in_progress = True
        print(f"Profiling starts. Traces will be saved to: {self.output_dir}", flush=True)
        return None

    def stop(self):
        """Stops and parses (in the scheduler, before the reply). Returns an error or None."""
        if not self.in_progress:
            return "Profiling is not in progress. Call /start_profile first."
        os.makedirs(self.output_dir, exist_ok=True)
        self.profiler.stop()
        self.profiler = None
        self.in_progress = False
        self.target_ct = None
        print(f"Profiling done. Traces are saved to: {self.output_dir}", flush=True)
        return None

    def before_forward(self, mode):
        """The predicate run before each batch (`mode` "extend" or "decode")."""
        if self.by_stage and self.stage_target:
            ct = self.stage_ct
            if mode == "extend":
                if ct["extend"] == 0:
                    self.start()
                ct["extend"] += 1
                if ct["extend"] > self.stage_target and self.in_progress:
                    self.stop()
            else:
                if ct["decode"] == 0:
                    if self.in_progress:
                        self.stop()
                    self.start()
                ct["decode"] += 1
                if ct["decode"] > self.stage_target and self.in_progress:
                    self.stop()
                    self.stage_target = None
        elif self.target_ct is not None and self.target_ct <= self.forward_ct and self.in_progress:
            self.stop()

    def after_forward(self):
        self.forward_ct += 1
        if self.in_progress:
            # The fake torch_npu writes kernels only for closed steps (SGLang itself does not step).
            self.profiler.step()
