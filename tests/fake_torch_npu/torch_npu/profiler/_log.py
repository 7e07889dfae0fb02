"""What torch_npu prints and logs, per build.

Stdout (`print_info_msg`/`print_warn_msg`/`print_error_msg`): `[YYYY-mm-dd HH:MM:SS] [LEVEL] [pid]
profiler.py: message` from 2.7.1, without brackets before; WARNING lines on rank 0 only.
`Task [X] run failed.` goes to stdout only.

The parser log (ProfilerLogger, 2.5.1+; 2.1.0.post10 has none): `<run>/logs/profiler_<ts>_<pid>_<Name>.log`,
lines `[%Y-%m-%d-%H:%M:%S.mmm] [LEVEL] [AscendProfiler_<Name>:<line>] message` (2.5.1: no
milliseconds, logger `AscendProfiler`), tracebacks, and from 2.7.1 a task status table.
"""
import os
import time

from torch_npu.profiler import _env

# Parse tasks: the class name stdout prints from 2.5.1 and the internal name 2.1.0.post10 prints
# and the status table lists.
TASK_NAMES = {
    "TorchOpParser": "torch_op", "TaskQueueParser": "task_queue", "TracePreParser": "trace_prepare",
    "TreeBuildParser": "build_tree", "CANNExportParser": "export", "CANNTimelineParser": "timeline",
    "RelationParser": "relation", "MemoryPrepareParser": "memory_prepare", "CANNAnalyzeParser": "analyze",
    "OperatorViewParser": "operator", "TraceViewParser": "trace", "KernelViewParser": "kernel",
    "TraceStepTimeParser": "step_time", "MemoryViewParser": "memory", "IntegrateParser": "integrate",
    "CommunicationParser": "communication",
}
_MODES = {
    "TorchOpParser": "PTHREAD", "TaskQueueParser": "PTHREAD", "TreeBuildParser": "PTHREAD",
    "CANNTimelineParser": "PTHREAD|NON_BLOCKING", "RelationParser": "PTHREAD", "MemoryPrepareParser": "PTHREAD",
}


def format_line(level, message):
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
    if _env.bracketed_log_time():
        return f"[{stamp}] [{level}] [{os.getpid()}] profiler.py: {message}"
    return f"{stamp} [{level}] [{os.getpid()}] profiler.py: {message}"


def info(message):
    print(format_line("INFO", message), flush=True)


def error(message):
    print(format_line("ERROR", message), flush=True)


def warn(message):
    """Warnings are printed by rank 0 only, as torch_npu does."""
    if _env.rank() == 0:
        print(format_line("WARNING", message), flush=True)


def task_failed(task):
    """The stdout line for a task that did not succeed, in the build's words."""
    if _env.run_failed_text():
        error(f"Task [{task}] run failed.")
    else:
        error(f"Task {TASK_NAMES.get(task, task)} has not run successfully.")


class ParserLog:
    """One process's parser log under `<run>/logs/`, written when the parse ends."""

    def __init__(self, run_dir, name="ProfilingParser"):
        self.name = name
        self.lines = []
        self.path = None
        if _env.writes_logs_dir():
            stamp = time.strftime("%Y%m%d%H%M%S", time.localtime())
            self.path = os.path.join(run_dir, "logs", f"profiler_{stamp}_{os.getpid()}_{name}.log")
        self.record("INFO", f"Profiler logger initialized at: {self.path}", 95)

    def record(self, level, message, line):
        now = time.time()
        stamp = time.strftime("%Y-%m-%d-%H:%M:%S", time.localtime(now))
        if _env.logger_names_parsers():
            stamp += f".{int(now * 1000) % 1000:03d}"
            logger = f"AscendProfiler_{self.name}"
        else:
            logger = "AscendProfiler"
        self.lines.append(f"[{stamp}] [{level}] [{logger}:{line}] {message}")

    def exception(self, message, line, source, exception_line):
        """`logger.exception(...)`: the record, then the traceback ending in the exception line."""
        self.record("ERROR", message, line)
        self.lines += [
            "Traceback (most recent call last):",
            f'  File "{source}", line {line - 11}, in run',
            "    completed_analysis = subprocess.run(",
            exception_line,
        ]

    def status_table(self, tasks):
        """The 2.7.1+ summary of the tasks that ran: (class name, status, seconds, deps)."""
        if not _env.logs_status_table():
            return
        self.record("INFO", "=" * 60, 473)
        self.record("INFO", "Task execution completed", 474)
        self.record("INFO", "=" * 60, 475)
        for task, status, seconds, deps in tasks:
            mode = _MODES.get(task, "SUB_PROCESS")
            deps_text = ", ".join(TASK_NAMES.get(d, d) for d in deps) or "None"
            self.record("INFO", f"{TASK_NAMES.get(task, task):<25} | {mode:<15} | {status:<10} | {seconds:.3f}s | "
                        f"deps: {deps_text}", 478)

    def close(self):
        if self.path is None:
            return
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write("\n".join(self.lines) + "\n")
