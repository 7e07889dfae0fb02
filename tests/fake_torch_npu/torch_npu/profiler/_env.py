"""Environment knobs of the fake (see the package README).

FAKE_TORCH_NPU_BUILD selects which real torch_npu build the fake behaves as. Each trait below was
read in that build's wheel (`torch_npu/profiler/**`); behaviour follows the build date, not the
2.x number: 2.7.1.post11 (2026) behaves like 2.14.0, plain 2.7.1 (2025) like the older builds.
"""
import os

# The builds the fake emulates, oldest first.
BUILDS = ("2.1.0.post10", "2.5.1", "2.7.1", "2.10.0", "2.7.1.post11", "2.14.0")
DEFAULT_BUILD = "2.14.0"
DEFAULT_CANN_VERSION = "8.5.0"
BAD_DISK_MARKER = ".fake_torch_npu_bad_disk"
# 2026 builds: analyse.done, the newer texts.
_BUILDS_2026 = ("2.10.0", "2.7.1.post11", "2.14.0")


def build():
    """The emulated build: FAKE_TORCH_NPU_BUILD (default 2.14.0)."""
    value = os.getenv("FAKE_TORCH_NPU_BUILD", DEFAULT_BUILD)
    if value not in BUILDS:
        raise ValueError(f"FAKE_TORCH_NPU_BUILD must be one of {', '.join(BUILDS)}, not {value!r}")
    return value


def _at_least(name):
    """The emulated build is `name` or a later one (by date)."""
    return BUILDS.index(build()) >= BUILDS.index(name)


def torch_npu_version():
    """The `torch_npu_version` profiler_info records; None for 2.1.0.post10, which records none."""
    return None if build() == "2.1.0.post10" else build()


def cann_version():
    return os.getenv("FAKE_TORCH_NPU_CANN_VERSION", DEFAULT_CANN_VERSION)


def records_versions():
    """profiler_info has `torch_npu_version` and `cann_version` (2.5.1 and newer)."""
    return _at_least("2.5.1")


def writes_analyse_done():
    """2.10.0, 2.7.1.post11 and 2.14.0 write an empty analyse.done after every parse, even a failed one."""
    return build() in _BUILDS_2026


def writes_temp_trace():
    """2.5.1 and older write trace_view_temp.json and rename it at the end."""
    return not _at_least("2.7.1")


def bracketed_log_time():
    """2.7.1 and newer print `[2025-06-13 10:13:28] [ERROR]`, older `2025-06-13 10:13:28 [ERROR]`."""
    return _at_least("2.7.1")


def writes_logs_dir():
    """ProfilerLogger writes <run>/logs/ from 2.5.1 (2.1.0.post10 has none)."""
    return _at_least("2.5.1")


def logs_status_table():
    """The task status table at the end of the parser log (2.7.1 and newer)."""
    return _at_least("2.7.1")


def logger_names_parsers():
    """2.7.1+ name the logger `AscendProfiler_<Name>` and print milliseconds."""
    return _at_least("2.7.1")


def run_failed_text():
    """2.5.1+ print `Task [<Class>] run failed.`; 2.1.0.post10 `Task <internal> has not run successfully.`"""
    return _at_least("2.5.1")


def quoted_msprof():
    """2.7.1+ spell `'msprof' command not found!`, older `msprof command not found!`."""
    return _at_least("2.7.1")


def uses_crlf():
    """CRLF CSVs (seen in one real 2023 Level0 file; kept on the oldest build to exercise CRLF, not
    read in a wheel: CANN writes these files)."""
    return build() == "2.1.0.post10"


def has_device_id_columns():
    """Device_id columns in the Level0 kernel_details and the statistics (2.7.1 and newer)."""
    return _at_least("2.7.1")


def block_num_spelling():
    """`Block Num` instead of `Block Dim` from 2.10.0 (and the 2.7.1.post11 line)."""
    return build() in _BUILDS_2026


def rank():
    """The global rank (env RANK, default 0)."""
    return _int_env("RANK", 0)


def world_size():
    return _int_env("WORLD_SIZE", 1)


def device_id():
    """The device of this process: ASCEND_DEVICE_ID, else LOCAL_RANK, else 0."""
    if os.getenv("ASCEND_DEVICE_ID"):
        return _int_env("ASCEND_DEVICE_ID", 0)
    return _int_env("LOCAL_RANK", 0)


def is_bad_disk(path):
    """FAKE_TORCH_NPU_BAD_DISK=1, or the real path of `path` lies under a directory holding the marker."""
    if os.getenv("FAKE_TORCH_NPU_BAD_DISK") == "1":
        return True
    current = os.path.realpath(path)
    while True:
        if os.path.exists(os.path.join(current, BAD_DISK_MARKER)):
            return True
        parent = os.path.dirname(current)
        if parent == current:
            return False
        current = parent


def slow_first_step():
    """FAKE_TORCH_NPU_SLOW_FIRST_STEP=1: the first recorded step is >= 20x slower (compilation)."""
    return os.getenv("FAKE_TORCH_NPU_SLOW_FIRST_STEP") == "1"


def _int_env(name, default):
    value = os.getenv(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        return default


def msprof_missing():
    """FAKE_TORCH_NPU_NO_MSPROF=1: CANN's msprof is not on PATH (set_env.sh not sourced)."""
    return os.getenv("FAKE_TORCH_NPU_NO_MSPROF") == "1"


def logs_exceptions():
    """2.7.1.post11 and 2.14.0 log failures with `logger.exception` (a traceback follows)."""
    return build() in ("2.7.1.post11", "2.14.0")
