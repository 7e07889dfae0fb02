"""The offline parser: turns a run directory's raw data into ASCEND_PROFILER_OUTPUT/.

Prints torch_npu's log lines, writes the detailed parser log under logs/, and
on a "bad disk" fails the way torch_npu does on some network filesystems.
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
    )


def parse_run_dir(run_dir):
    """Parses one run directory. Returns True when every parser succeeded."""
    started = time.monotonic()
    _log.info(f"Start parsing profiling data: {run_dir}")
    log_dir = os.path.join(run_dir, "logs")
    os.makedirs(log_dir, exist_ok=True)
    log_lines = []

    def detail(level, message):
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
        log_lines.append(f"[{stamp}] [{level}] [{os.getpid()}] {message}")

    out_dir = os.path.join(run_dir, OUTPUT_DIR)
    if os.path.exists(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    try:
        rank, info = _raw.read_profiler_info(run_dir)
        raw = _raw.read_raw(run_dir)
    except ValueError as error:
        _log.error(f"Profiling data parsing failed, error: {error}")
        detail("ERROR", f"Profiling data parsing failed, error: {error}")
        _finish(run_dir, log_dir, log_lines, started, ok=False)
        return False
    ctx = _context(run_dir, rank, info, raw)
    timeline = _timeline.synthesise(raw, ctx.level)
    npu = "NPU" in ctx.activities
    text = "text" in ctx.export_type

    if "db" in ctx.export_type and not _env.is_bad_disk(run_dir):
        _writers.write_db(out_dir, timeline, ctx)
    trace_name = "trace_view_temp.json" if _env.writes_temp_trace() else "trace_view.json"
    trace_path = os.path.join(out_dir, trace_name)
    if text:
        host = _writers.host_trace_events(timeline, ctx) if "CPU" in ctx.activities else []
        _writers.write_trace_host_phase(trace_path, host)
        detail("INFO", "Task [TracePreParser] run success.")

    if _env.is_bad_disk(run_dir):
        detail("ERROR", "Failed to export CANN Profiling data. [Errno 5] Input/output error")
        for task in _failing_parsers(ctx):
            _log.error(f"Task [{task}] run failed.")
            detail("ERROR", f"Task [{task}] run failed.")
        _finish(run_dir, log_dir, log_lines, started, ok=False)
        return False

    if text:
        if npu and ctx.level != ProfilerLevel.Level_none:
            _writers.append_trace_device_phase(trace_path, _writers.device_trace_events(timeline, ctx), bool(host))
        elif npu:
            # Level_none: no CANN timeline, the device phase appends nothing.
            _writers.append_trace_device_phase(trace_path, [], bool(host))
        else:
            _writers.close_trace(trace_path)
        if trace_name != "trace_view.json":
            os.replace(trace_path, os.path.join(out_dir, "trace_view.json"))
        if npu and timeline.kernels:
            _writers.write_kernel_details(out_dir, timeline, ctx)
        if npu and timeline.steps and ctx.level != ProfilerLevel.Level_none:
            _writers.write_step_trace_time(out_dir, timeline, ctx)
        if "CPU" in ctx.activities:
            _writers.write_operator_details(out_dir, timeline)
        if npu and ctx.level in (ProfilerLevel.Level1, ProfilerLevel.Level2):
            _writers.write_op_statistic(out_dir, timeline, ctx)
            _writers.write_api_statistic(out_dir, timeline, ctx)
            if ctx.world_size > 1:
                _writers.write_communication(out_dir, timeline, ctx)
        if ctx.profile_memory:
            _writers.write_memory(out_dir, timeline, ctx)
    if npu:
        _log.info(f"CANN profiling data parsed in a total time of {timedelta(seconds=time.monotonic() - started)}")
    detail("INFO", "All tasks run success.")
    _finish(run_dir, log_dir, log_lines, started, ok=True)
    return True


def _finish(run_dir, log_dir, log_lines, started, ok):
    name = f"profiler_{time.strftime('%Y%m%d%H%M%S')}_{os.getpid()}.log"
    with open(os.path.join(log_dir, name), "a", encoding="utf-8") as handle:
        handle.write("\n".join(log_lines) + "\n")
    if _env.writes_analyse_done():
        open(os.path.join(run_dir, OUTPUT_DIR, "analyse.done"), "w", encoding="utf-8").close()
    _log.info(f"All profiling data parsed in a total time of {timedelta(seconds=time.monotonic() - started)}")
    return ok
