"""Fake torch_npu.profiler: profile, schedule, _ExperimentalConfig, ProfilerLevel,
AiCMetrics, ExportType, ProfilerActivity, ProfilerAction, tensorboard_trace_handler,
supported_activities, and torch_npu.profiler.profiler.analyse.

Environment variables (all optional):
  FAKE_TORCH_NPU_RELEASE         emulated release line: 7.0, 7.1, 7.2, 7.3, 26.0 (default), 26.1.
                                 26.x writes analyse.done; <= 7.1 writes trace_view_temp.json and renames it;
                                 7.0 logs without brackets and uses CRLF; Level0 header: 8 columns (7.0),
                                 9 with Block Dim (7.1-7.3), 9 with Block Num (26.x); 26.1 adds skip_first_wait.
  FAKE_TORCH_NPU_VERSION         torch_npu_version written to profiler_info (default 2.7.1).
  FAKE_TORCH_NPU_CANN_VERSION    cann_version written to profiler_info (default 8.5.0).
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
