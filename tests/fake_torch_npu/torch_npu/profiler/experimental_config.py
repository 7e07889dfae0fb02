"""_ExperimentalConfig, ProfilerLevel, AiCMetrics and ExportType."""
from torch_npu.profiler import _log, _params


class ProfilerLevel:
    """Collection levels (the strings profiler_info records as `_profiler_level`)."""

    Level_none = "Level_none"
    Level0 = "Level0"
    Level1 = "Level1"
    Level2 = "Level2"


class AiCMetrics(metaclass=_params.PerBuildMembers):
    """AI Core metric groups (the strings profiler_info records as `_aic_metrics`; MemoryAccess
    from 2.5.1)."""

    PipeUtilization = "ACL_AICORE_PIPE_UTILIZATION"
    ArithmeticUtilization = "ACL_AICORE_ARITHMETIC_UTILIZATION"
    Memory = "ACL_AICORE_MEMORY_BANDWIDTH"
    MemoryL0 = "ACL_AICORE_L0B_AND_WIDTH"
    ResourceConflictRatio = "ACL_AICORE_RESOURCE_CONFLICT_RATIO"
    MemoryUB = "ACL_AICORE_MEMORY_UB"
    L2Cache = "ACL_AICORE_L2_CACHE"
    MemoryAccess = "ACL_AICORE_MEMORY_ACCESS"
    AiCoreNone = "ACL_AICORE_NONE"


class ExportType:
    Text = "text"
    Db = "db"


_LEVELS = (ProfilerLevel.Level_none, ProfilerLevel.Level0, ProfilerLevel.Level1, ProfilerLevel.Level2)


class _ExperimentalConfig(metaclass=_params.PerBuildClass):
    """Collection options (mstx, host_sys, mstx_domain_*, sys_* only on the builds that have them). aic_metrics defaults to PipeUtilization at Level1/2 and to
    AiCoreNone at Level0/Level_none (a metric asked at Level0 is reset with a warning)."""

    def __init__(
        self,
        profiler_level=ProfilerLevel.Level0,
        aic_metrics=None,
        l2_cache=False,
        msprof_tx=False,
        mstx=False,
        data_simplification=True,
        record_op_args=False,
        op_attr=False,
        gc_detect_threshold=None,
        export_type=ExportType.Text,
        host_sys=None,
        mstx_domain_include=None,
        mstx_domain_exclude=None,
        sys_io=False,
        sys_interconnection=False,
    ):
        if profiler_level not in _LEVELS:
            _log.warn(f"Invalid parameter profiler_level, reset it to {ProfilerLevel.Level0}.")
            profiler_level = ProfilerLevel.Level0
        high = profiler_level in (ProfilerLevel.Level1, ProfilerLevel.Level2)
        if aic_metrics is None:
            aic_metrics = AiCMetrics.PipeUtilization if high else AiCMetrics.AiCoreNone
        elif aic_metrics not in AiCMetrics.values():
            _log.warn("Invalid parameter aic_metrics, reset it to default.")
            aic_metrics = AiCMetrics.PipeUtilization if high else AiCMetrics.AiCoreNone
        elif not high and aic_metrics != AiCMetrics.AiCoreNone:
            _log.warn("Please use level1 or level2 if you want to collect aic metrics, reset aic metrics to None!")
            aic_metrics = AiCMetrics.AiCoreNone
        if isinstance(export_type, str):
            export_type = [export_type]
        export_type = [t for t in export_type if t in (ExportType.Text, ExportType.Db)] or [ExportType.Text]
        self._profiler_level = profiler_level
        self._aic_metrics = aic_metrics
        self._l2_cache = bool(l2_cache)
        self._msprof_tx = bool(msprof_tx)
        self._mstx = bool(mstx)
        self._data_simplification = bool(data_simplification)
        self.record_op_args = bool(record_op_args)
        self._export_type = export_type
        self._host_sys = list(host_sys or [])
        self._op_attr = bool(op_attr)
        self._gc_detect_threshold = gc_detect_threshold
        self._mstx_domain_include = list(mstx_domain_include or [])
        self._mstx_domain_exclude = list(mstx_domain_exclude or [])
        self._sys_io = bool(sys_io)
        self._sys_interconnection = bool(sys_interconnection)

    def to_dict(self):
        """The `experimental_config` object of profiler_info.json."""
        return {
            "_profiler_level": self._profiler_level,
            "_aic_metrics": self._aic_metrics,
            "_l2_cache": self._l2_cache,
            "_msprof_tx": self._msprof_tx,
            "_mstx": self._mstx,
            "_data_simplification": self._data_simplification,
            "record_op_args": self.record_op_args,
            "_export_type": list(self._export_type),
            "_host_sys": list(self._host_sys),
            "_op_attr": self._op_attr,
            "_gc_detect_threshold": self._gc_detect_threshold,
            "_mstx_domain_include": list(self._mstx_domain_include),
            "_mstx_domain_exclude": list(self._mstx_domain_exclude),
            "_sys_io": self._sys_io,
            "_sys_interconnection": self._sys_interconnection,
        }
