"""torch_npu.profiler.schedule and ProfilerAction, with torch_npu's arithmetic and clamping."""
from enum import Enum

from torch_npu.profiler import _env, _log


class ProfilerAction(Enum):
    """What the profiler does during one step."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


class Schedule:
    """schedule(wait, active, warmup=0, repeat=0, skip_first=0[, skip_first_wait=0]).

    Invalid values are reset with a warning: active to 1, the others to 0.
    Calling the schedule with a step number returns that step's ProfilerAction.
    """

    def __init__(self, wait, active, warmup=0, repeat=0, skip_first=0, skip_first_wait=0):
        self.wait = _valid(wait, "wait", 0, 0)
        self.active = _valid(active, "active", 1, 1)
        self.warmup = _valid(warmup, "warmup", 0, 0)
        self.repeat = _valid(repeat, "repeat", 0, 0)
        self.skip_first = _valid(skip_first, "skip_first", 0, 0)
        self.skip_first_wait = _valid(skip_first_wait, "skip_first_wait", 0, 0)

    def __call__(self, step):
        if step < self.skip_first:
            return ProfilerAction.NONE
        step -= self.skip_first
        if self.skip_first_wait != 0:
            step += self.wait
        cycle = self.wait + self.warmup + self.active
        if self.repeat > 0 and step // cycle >= self.repeat:
            return ProfilerAction.NONE
        mod = step % cycle
        if mod < self.wait:
            return ProfilerAction.NONE
        if mod < self.wait + self.warmup:
            return ProfilerAction.WARMUP
        if mod < cycle - 1:
            return ProfilerAction.RECORD
        return ProfilerAction.RECORD_AND_SAVE

    def to_dict(self):
        """The `schedule` object of profiler_info.json (key order as torch_npu writes it)."""
        data = {
            "wait": self.wait,
            "active": self.active,
            "warmup": self.warmup,
            "repeat": self.repeat,
            "skip_first": self.skip_first,
        }
        if _env.has_skip_first_wait():
            data["skip_first_wait"] = self.skip_first_wait
        return data


def schedule(wait, active, warmup=0, repeat=0, skip_first=0, skip_first_wait=0):
    """Creates a Schedule (the name torch_npu exports)."""
    return Schedule(wait, active, warmup, repeat, skip_first, skip_first_wait)


def _valid(value, name, minimum, reset):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        _log.warn(f"Invalid parameter {name}, reset it to {reset}.")
        return reset
    return value
