"""The self-test's fake: the API of the miniature wheel."""
import enum


class ProfilerLevel:
    Level0 = "Level0"
    Level1 = "Level1"


class AiCMetrics:
    AiCoreNone = "ACL_AICORE_NONE"
    PipeUtilization = "ACL_AICORE_PIPE_UTILIZATION"


class ExportType:
    Text = "text"


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


class _ExperimentalConfig:
    def __init__(self, profiler_level=ProfilerLevel.Level0, aic_metrics=AiCMetrics.PipeUtilization):
        pass


class profile:
    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None):
        pass


class schedule:
    def __init__(self, wait, active, warmup=0, repeat=0, skip_first=0, skip_first_wait=0):
        pass


def tensorboard_trace_handler(dir_name=None, worker_name=None):
    return None


class _Profiler:
    @staticmethod
    def analyse(profiler_path, max_process_number=1):
        return None


profiler = _Profiler
