"""Fake torch_npu.profiler: profile, schedule, _ExperimentalConfig, ProfilerLevel,
AiCMetrics, ExportType, ProfilerActivity, ProfilerAction, tensorboard_trace_handler,
supported_activities, and torch_npu.profiler.profiler.analyse.

Environment variables (all optional):
  FAKE_TORCH_NPU_BUILD           emulated build: 2.1.0.post10, 2.5.1, 2.7.1, 2.10.0, 2.7.1.post11,
                                 2.14.0 (default); see the README for what each build does.
  FAKE_TORCH_NPU_CANN_VERSION    cann_version written to profiler_info (default 8.5.0).
  FAKE_TORCH_NPU_NO_MSPROF=1     the CANN export fails: msprof not on PATH (set_env.sh not sourced).
  FAKE_TORCH_NPU_BAD_DISK=1      every parse fails as on a bad network filesystem (also when the real
                                 output path lies under a directory holding a `.fake_torch_npu_bad_disk` file).
  FAKE_TORCH_NPU_SLOW_FIRST_STEP=1  the first recorded step of each run directory is 25x slower.
  RANK, WORLD_SIZE, LOCAL_RANK, ASCEND_DEVICE_ID   identity of the process (as set by launchers).
"""
from torch_npu.profiler import profiler
from torch_npu.profiler.experimental_config import AiCMetrics, ExportType, ProfilerLevel, _ExperimentalConfig
from torch_npu.profiler.profiler import ProfilerActivity, profile, supported_activities, tensorboard_trace_handler
from torch_npu.profiler.scheduler import ProfilerAction, Schedule, schedule

__all__ = [
    "AiCMetrics",
    "ExportType",
    "ProfilerAction",
    "ProfilerActivity",
    "ProfilerLevel",
    "Schedule",
    "_ExperimentalConfig",
    "profile",
    "profiler",
    "schedule",
    "supported_activities",
    "tensorboard_trace_handler",
]
