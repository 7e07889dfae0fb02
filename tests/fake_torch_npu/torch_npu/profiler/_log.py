"""torch_npu's console log lines: `[YYYY-mm-dd HH:MM:SS] [LEVEL] [pid] profiler.py: message`."""
import os
import time

from torch_npu.profiler import _env


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
