from enum import Enum

from torch_npu.utils._error_code import ErrCode  # stubbed by the harness


class ProfilerAction(Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


class Schedule:
    def __init__(self, wait, active, warmup=0, repeat=0, skip_first=0, skip_first_wait=0):
        self.wait = max(wait, 0)
        self.active = max(active, 1)
        self.warmup = max(warmup, 0)
        self.repeat = max(repeat, 0)
        self.skip_first = max(skip_first, 0)
        self.skip_first_wait = max(skip_first_wait, 0)

    def __call__(self, step):
        if step < self.skip_first:
            return ProfilerAction.NONE
        step -= self.skip_first
        if self.skip_first_wait:
            step += self.wait
        cycle = self.wait + self.warmup + self.active
        if self.repeat and step // cycle >= self.repeat:
            return ProfilerAction.NONE
        at = step % cycle
        if at < self.wait:
            return ProfilerAction.NONE
        if at < self.wait + self.warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if at < cycle - 1 else ProfilerAction.RECORD_AND_SAVE
