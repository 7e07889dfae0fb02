# Profiler helpers for offline inference.
#
# The engine owns one ProfilerManager. Prefill and decode are recorded into
# separate directories under <save path>/prof/{prefill,decode}.
import os

import torch_npu


class FakeContextManager:
    """A stand-in used when profiling is disabled."""

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        pass

    @staticmethod
    def step():
        pass

    @staticmethod
    def stop():
        pass


def create_profiler(enable_profiler=False, profile_save_path="prof", active=3, repeat=1, skip_first=3):
    if enable_profiler:
        os.makedirs(profile_save_path, exist_ok=True)
        experimental_config = torch_npu.profiler._ExperimentalConfig(
            profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
            aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization,
        )
        profiler = torch_npu.profiler.profile(
            activities=[
                torch_npu.profiler.ProfilerActivity.NPU,
                torch_npu.profiler.ProfilerActivity.CPU,
            ],
            with_stack=False,
            record_shapes=False,
            profile_memory=False,
            experimental_config=experimental_config,
            schedule=torch_npu.profiler.schedule(
                wait=0, warmup=0, active=active, repeat=repeat, skip_first=skip_first
            ),
            on_trace_ready=torch_npu.profiler.tensorboard_trace_handler(profile_save_path),
        )
    else:
        profiler = FakeContextManager()
    return profiler


class ProfilerManager:
    def __init__(self, enable_profiler, profile_save_path):
        self.enable_profiler = enable_profiler
        self.profile_save_path = profile_save_path
        self.status = None
        self.profiler = FakeContextManager()

    def set_status(self, is_prefill):
        if not self.enable_profiler:
            return
        if self.status is None and is_prefill:
            self.status = "prefill"
            # Prefill: record exactly one forward.
            self.profiler = create_profiler(
                enable_profiler=self.enable_profiler,
                profile_save_path=os.path.join(self.profile_save_path, "prof", "prefill"),
                active=1,
                repeat=1,
                skip_first=0,
            )
            self.profiler.start()
        elif self.status == "prefill" and not is_prefill:
            self.profiler.stop()
            self.status = "decode"
            # Decode: the window comes from create_profiler's defaults.
            self.profiler = create_profiler(
                enable_profiler=self.enable_profiler,
                profile_save_path=os.path.join(self.profile_save_path, "prof", "decode"),
            )
            self.profiler.start()

    def step(self):
        self.profiler.step()

    def __del__(self):
        if self.enable_profiler:
            self.profiler.stop()
