"""The offline parser: turns a run directory's raw data into ASCEND_PROFILER_OUTPUT/.

Prints torch_npu's stdout lines, writes the parser log under logs/ (ProfilerLogger's format, from
2.5.1), and fails as torch_npu does on a "bad disk" (some network filesystems) or without msprof.
"""
import os
import shutil
import time
from datetime import timedelta

from torch_npu.profiler import _env, _log, _raw, _timeline, _writers
from torch_npu.profiler.experimental_config import ProfilerLevel

OUTPUT_DIR = "ASCEND_PROFILER_OUTPUT"


def _failing_parsers(ctx):
    """The tasks that fail on a bad disk, roots first, then their cascades."""
    high = ctx.level in (ProfilerLevel.Level1, ProfilerLevel.Level2)
    export = ["CANNExportParser", "KernelViewParser"]
    if ctx.profile_memory:
        export.append("MemoryViewParser")
    if high:
        export.append("IntegrateParser")
    timeline = ["CANNTimelineParser", "RelationParser", "TraceViewParser", "TraceStepTimeParser"]
    if "CPU" in ctx.activities:
        timeline.append("OperatorViewParser")
    timeline.append("CANNAnalyzeParser")
    if high:
        timeline.append("CommunicationParser")
    # Roots first: CANNExportParser, CANNTimelineParser, then the cascades.
    return [export[0], timeline[0]] + export[1:] + timeline[1:]


def _context(run_dir, rank, info, raw):
    common = info["config"]["common_config"]
    experimental = info["config"]["experimental_config"]
    activities = [a.split(".")[-1] for a in common.get("activities", [])]
    export = experimental.get("_export_type", ["text"])
    if isinstance(export, str):
        export = [export]
    return _writers.RunContext(
        rank=rank,
        device_id=raw.device_id,
        pid=raw.pid,
        world_size=raw.world_size,
        level=experimental.get("_profiler_level", ProfilerLevel.Level0),
        aic_metrics=experimental.get("_aic_metrics", "ACL_AICORE_NONE"),
        activities=activities,
        profile_memory=bool(common.get("profile_memory")),
        scheduled=raw.scheduled,
        export_type=export,
        with_modules=bool(common.get("with_modules")),
    )


_EXPORT_SOURCE = "/usr/local/lib/python3.11/site-packages/torch_npu/profiler/analysis/prof_view/cann_parse/_cann_export.py"
# The tasks that need neither the CANN export nor the CANN timeline: they run and succeed when those fail.
_HOST_TASKS = (
    ("TorchOpParser", ()), ("TaskQueueParser", ()), ("TracePreParser", ("TorchOpParser", "TaskQueueParser")),
    ("TreeBuildParser", ("TorchOpParser", "TaskQueueParser")),
    ("MemoryPrepareParser", ("TreeBuildParser", "TaskQueueParser", "TorchOpParser")),
)


def _msprof_missing_text():
    """The RuntimeError text of a CANN export without msprof on PATH, in the build's words."""
    if _env.quoted_msprof():
        return "Export CANN Profiling data failed! 'msprof' command not found!ERR01003 PROF not found"
    return "Export CANN Profiling data failed! msprof command not found!ERR01003 PROF not found"


def _fail_export(run_dir, ctx, parser_log, error_text, exception_line):
    """The CANN export fails with `error_text`: stdout, its own parser log (the export runs in a
    subprocess, which logs to its own file), then the cascade on stdout and the status table."""
    if not _env.quoted_msprof() and "msprof" in error_text:
        _log.error(error_text)  # 2.5.1 and older print the msprof text on its own first
    _log.error(f"Failed to export CANN Profiling data. Error msg: {error_text}")
    export_log = _log.ParserLog(run_dir, "CANNExportParser")
    export_log.record("INFO", "CANNExportParser start.", 58)
    if _env.logs_exceptions():
        export_log.exception("Failed to export CANN Profiling data", 101, _EXPORT_SOURCE, exception_line)
    else:
        export_log.record("ERROR", f"Failed to export CANN Profiling data, error: {error_text}", 75)
    export_log.close()
    for task in _failing_parsers(ctx):
        _log.task_failed(task)
    parser_log.status_table([(task, "Succeed", 0.05, deps) for task, deps in _HOST_TASKS]
                            + [("CANNExportParser", "Failed", 1.25, ())])
    if not _env.run_failed_text():
        _log.warn("Profiling data parsing failed.")


def parse_run_dir(run_dir):
    """Parses one run directory. Returns True when every parser succeeded."""
    started = time.monotonic()
    _log.info(f"Start parsing profiling data: {run_dir}")
    parser_log = _log.ParserLog(run_dir)
    out_dir = os.path.join(run_dir, OUTPUT_DIR)
    if os.path.exists(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    try:
        rank, info = _raw.read_profiler_info(run_dir)
        raw = _raw.read_raw(run_dir)
    except ValueError as error:
        if _env.run_failed_text():
            _log.warn(f"Profiling data parsing failed, error: {error}")
        else:
            _log.warn("Profiling data parsing failed.")
        parser_log.record("ERROR", f"Failed to parsing profiling data, error: {error}", 92)
        return _finish(run_dir, parser_log, started, ok=False)
    ctx = _context(run_dir, rank, info, raw)
    timeline = _timeline.synthesise(raw, ctx.level)
    npu = "NPU" in ctx.activities
    text = "text" in ctx.export_type
    device = npu and ctx.level != ProfilerLevel.Level_none

    if "db" in ctx.export_type and not _env.is_bad_disk(run_dir) and not _env.msprof_missing():
        _writers.write_db(out_dir, timeline, ctx)
    trace_name = "trace_view_temp.json" if _env.writes_temp_trace() else "trace_view.json"
    trace_path = os.path.join(out_dir, trace_name)
    if text:
        host = _writers.host_trace_events(timeline, ctx) if "CPU" in ctx.activities else []
        _writers.write_trace_host_phase(trace_path, host)

    if npu and _env.msprof_missing():
        _fail_export(run_dir, ctx, parser_log, _msprof_missing_text(), f"RuntimeError: {_msprof_missing_text()}")
        return _finish(run_dir, parser_log, started, ok=False)
    if _env.is_bad_disk(run_dir):
        cann = os.path.join(run_dir, "PROF_000001", "mindstudio_profiler_output")
        _fail_export(run_dir, ctx, parser_log, f"[Errno 5] Input/output error: '{cann}'",
                     f"OSError: [Errno 5] Input/output error: '{cann}'")
        return _finish(run_dir, parser_log, started, ok=False)

    if text:
        if device:
            _writers.append_trace_device_phase(trace_path, _writers.device_trace_events(timeline, ctx), bool(host))
        elif npu:
            # Level_none: no CANN timeline, the device phase appends nothing.
            _writers.append_trace_device_phase(trace_path, [], bool(host))
        else:
            _writers.close_trace(trace_path)
        if trace_name != "trace_view.json":
            os.replace(trace_path, os.path.join(out_dir, "trace_view.json"))
        # torch_npu writes no empty CSV: each writer skips a file without rows.
        if device:
            _writers.write_kernel_details(out_dir, timeline, ctx)
            _writers.write_step_trace_time(out_dir, timeline, ctx)
        if "CPU" in ctx.activities:
            _writers.write_operator_details(out_dir, timeline, device)
        if device and ctx.level in (ProfilerLevel.Level1, ProfilerLevel.Level2):
            _writers.write_op_statistic(out_dir, timeline, ctx)
            _writers.write_api_statistic(out_dir, timeline, ctx)
        if device and ctx.world_size > 1:
            _writers.write_communication(out_dir, timeline, ctx)
        if ctx.profile_memory:
            _writers.write_memory(out_dir, timeline, ctx)
    if npu:
        _log.info(f"CANN profiling data parsed in a total time of {timedelta(seconds=time.monotonic() - started)}")
    parser_log.status_table([(task, "Succeed", 0.05, deps) for task, deps in _HOST_TASKS])
    return _finish(run_dir, parser_log, started, ok=True)


def _finish(run_dir, parser_log, started, ok):
    parser_log.close()
    if _env.writes_analyse_done():
        open(os.path.join(run_dir, OUTPUT_DIR, "analyse.done"), "w", encoding="utf-8").close()
    _log.info(f"All profiling data parsed in a total time of {timedelta(seconds=time.monotonic() - started)}")
    return ok
