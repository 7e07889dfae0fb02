class ProfilerLevel:
    Level0 = "Level0"
    Level1 = "Level1"


class AiCMetrics:
    AiCoreNone = "ACL_AICORE_NONE"
    PipeUtilization = "ACL_AICORE_PIPE_UTILIZATION"


class ExportType:
    Text = "text"


class _ExperimentalConfig:
    def __init__(self, profiler_level=ProfilerLevel.Level0, aic_metrics=AiCMetrics.PipeUtilization):
        self._profiler_level = profiler_level
        self._aic_metrics = aic_metrics
        if profiler_level != ProfilerLevel.Level0 and aic_metrics == AiCMetrics.AiCoreNone:
            self._aic_metrics = AiCMetrics.PipeUtilization
