# Part of recipes-next, npuprof's miniature of the newer Ascend offline-inference recipes repository.
# Written for npuprof's tests; it mirrors the structure (not the text) of the real file.

"""Profiling helpers built on torch_npu.profiler, one profiler per phase.

The execution engine (and a model's own multimodal loop) tells the manager which
phase the next forward belongs to; each phase records into prof/<phase>/.
"""

import os
from enum import Enum

import torch_npu


class ProfilerPhase(Enum):
    MM_ENCODE = "mm_encode"
    PREFILL = "prefill"
    DECODE = "decode"


class FakeContextManager:
    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        pass

    @staticmethod
    def step():
        return

    @staticmethod
    def stop():
        return


def create_profiler(enable_profiler=False, profile_save_path="prof", active=3, repeat=1, skip_first=3):
    if enable_profiler:
        os.makedirs(profile_save_path, exist_ok=True)
        experimental_config = torch_npu.profiler._ExperimentalConfig(
            profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
            aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization
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
                wait=0,
                warmup=0,
                active=active,
                repeat=repeat,
                skip_first=skip_first
            ),
            on_trace_ready=torch_npu.profiler.tensorboard_trace_handler(profile_save_path)
        )
    else:
        profiler = FakeContextManager()

    return profiler


class ProfilerManager:
    """
    Keeps one profiler per phase: a new one whenever the phase changes, until decode.
    Encode and prefill record one forward each; decode gets the create_profiler defaults.
    """
    def __init__(self, enable_profiler, profile_save_path):
        self.enable_profiler = enable_profiler
        self.profile_save_path = profile_save_path
        self.profiler_status = None
        self.current_profiler = FakeContextManager()

    def check_if_update(self, cur_status: ProfilerPhase) -> bool:
        """Whether a forward of phase cur_status needs a new profiler."""
        # Batches of the phase already being profiled keep its profiler.
        if not self.enable_profiler or self.profiler_status == cur_status:
            return False
        # Profiling never starts at decode: an earlier phase must come first.
        if self.profiler_status is None and cur_status == ProfilerPhase.DECODE:
            return False
        # Decode is the last phase: nothing switches away from it.
        if self.profiler_status == ProfilerPhase.DECODE:
            return False
        return True

    def set_status(self, cur_status: ProfilerPhase):
        if not isinstance(cur_status, ProfilerPhase):
            raise TypeError("cur_status must be a ProfilerPhase")
        if not self.check_if_update(cur_status):
            return
        if self.profiler_status is not None:
            self.current_profiler.stop()
        profiler_kwargs = {}
        if cur_status in (ProfilerPhase.MM_ENCODE, ProfilerPhase.PREFILL):
            profiler_kwargs = {"active": 1, "repeat": 1, "skip_first": 0}
        self.current_profiler = create_profiler(
            enable_profiler=True,
            profile_save_path=os.path.join(self.profile_save_path, "prof", cur_status.value),
            **profiler_kwargs,
        )
        self.current_profiler.start()
        self.profiler_status = cur_status

    def step(self):
        self.current_profiler.step()

    def __del__(self):
        if self.enable_profiler:
            self.current_profiler.stop()
