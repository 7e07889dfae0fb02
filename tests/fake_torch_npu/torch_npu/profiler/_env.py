"""Environment knobs of the fake (see the package README)."""
import os

# Emulated torch_npu release lines and what differs between them.
RELEASES = ("7.0", "7.1", "7.2", "7.3", "26.0", "26.1")
DEFAULT_RELEASE = "26.0"
DEFAULT_VERSION = "2.7.1"
DEFAULT_CANN_VERSION = "8.5.0"
BAD_DISK_MARKER = ".fake_torch_npu_bad_disk"


def release():
    """The emulated release line: FAKE_TORCH_NPU_RELEASE (default 26.0)."""
    value = os.getenv("FAKE_TORCH_NPU_RELEASE", DEFAULT_RELEASE)
    if value not in RELEASES:
        raise ValueError(f"FAKE_TORCH_NPU_RELEASE must be one of {', '.join(RELEASES)}, not {value!r}")
    return value


def release_tuple():
    major, minor = release().split(".")
    return int(major), int(minor)


def torch_npu_version():
    """The `torch_npu_version` written to profiler_info: FAKE_TORCH_NPU_VERSION (default 2.7.1)."""
    return os.getenv("FAKE_TORCH_NPU_VERSION", DEFAULT_VERSION)


def cann_version():
    return os.getenv("FAKE_TORCH_NPU_CANN_VERSION", DEFAULT_CANN_VERSION)


def writes_analyse_done():
    """26.x writes an empty analyse.done after parsing, even when a parser failed."""
    return release_tuple() >= (26, 0)


def writes_temp_trace():
    """7.1 and older write trace_view_temp.json and rename it at the end."""
    return release_tuple() <= (7, 1)


def bracketed_log_time():
    """7.0 and older print `2025-06-13 10:13:28 [ERROR]`, newer `[2025-06-13 10:13:28] [ERROR]`."""
    return release_tuple() > (7, 0)


def has_device_id_columns():
    """Device_id columns in the statistics and step_trace_time (7.1+)."""
    return release_tuple() >= (7, 1)


def has_skip_first_wait():
    """schedule(skip_first_wait=...) exists from 26.1."""
    return release_tuple() >= (26, 1)


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
