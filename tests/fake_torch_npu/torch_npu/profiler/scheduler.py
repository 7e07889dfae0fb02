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

    Invalid values are reset with a warning as torch_npu does: `active` below 1 to 1, a negative
    or non-integer wait/warmup/repeat/skip_first to 0 (a bool is an int and passes);
    `skip_first_wait` is only checked to be an int, so a negative one counts as set. `warmup=0`
    prints `Profiler won't be using warmup, this can skew profiler results`.
    Calling the schedule with a step number returns that step's ProfilerAction. Its `__dict__`
    is what profiler_info records as `schedule`.
    """

    def __init__(self, wait, active, warmup=0, repeat=0, skip_first=0, skip_first_wait=0):
        self.wait = _valid(wait, "wait", 0, 0)
        self.active = _valid(active, "active", 1, 1)
        self.warmup = _valid(warmup, "warmup", 0, 0)
        self.repeat = _valid(repeat, "repeat", 0, 0)
        self.skip_first = _valid(skip_first, "skip_first", 0, 0)
        if _env.has_skip_first_wait():
            if not isinstance(skip_first_wait, int):
                _log.warn("Invalid parameter skip_first_wait, reset it to 0.")
                skip_first_wait = 0
            self.skip_first_wait = skip_first_wait
        if self.warmup == 0:
            _log.warn("Profiler won't be using warmup, this can skew profiler results")

    def __call__(self, step):
        if step < 0:
            raise ValueError("Invalid parameter step, which must be not less than 0.")
        if step < self.skip_first:
            return ProfilerAction.NONE
        step -= self.skip_first
        if getattr(self, "skip_first_wait", 0) != 0:
            step += self.wait
        cycle = self.wait + self.warmup + self.active
        if self.repeat > 0 and step / cycle >= self.repeat:
            return ProfilerAction.NONE
        mod = step % cycle
        if mod < self.wait:
            return ProfilerAction.NONE
        if mod < self.wait + self.warmup:
            return ProfilerAction.WARMUP
        if mod < cycle - 1:
            return ProfilerAction.RECORD
        return ProfilerAction.RECORD_AND_SAVE


def schedule(wait, active, warmup=0, repeat=0, skip_first=0, skip_first_wait=0):
    """Creates a Schedule (the name torch_npu exports)."""
    return Schedule(wait, active, warmup, repeat, skip_first, skip_first_wait)


def _default_schedule_fn(_step):
    """The schedule of a profile without one: every step is recorded."""
    return ProfilerAction.RECORD


def _valid(value, name, minimum, reset):
    if not isinstance(value, int) or value < minimum:
        _log.warn(f"Invalid parameter {name}, reset it to {reset}.")
        return reset
    return value
