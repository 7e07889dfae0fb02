# A training framework's decorators: one wraps the whole training in the profiler and keeps
# it on a shared arguments object, another steps it after each training step. The step lives
# in another function, reached through that object: lint cannot count it and says so.
from functools import wraps

import torch_npu

STEPS = 5
SKIP = 10


def shared_args():
    return SHARED


class Shared:
    prof = None
    profile_npu = True


SHARED = Shared()


def train_decorator(train):
    @wraps(train)
    def wrapper(*args, **kwargs):
        state = shared_args()
        config = torch_npu.profiler._ExperimentalConfig(
            profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
            aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization,
        )
        with torch_npu.profiler.profile(
            experimental_config=config,
            schedule=torch_npu.profiler.schedule(wait=0, warmup=0, active=STEPS, repeat=1, skip_first=SKIP),
            on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof"),
        ) as prof:
            state.prof = prof
            return train(*args, **kwargs)

    return wrapper


def train_step_decorator(step_fn):
    @wraps(step_fn)
    def wrapper(*args, **kwargs):
        state = shared_args()
        result = step_fn(*args, **kwargs)
        if state.profile_npu:
            state.prof.step()
        return result

    return wrapper


class Trainer:
    # The same object under two names: `with self.prof as prof:` here, `self.prof.step()` in
    # another method. Not countable, and not a loop without `step()`.
    def __init__(self):
        self.prof = torch_npu.profiler.profile(
            experimental_config=torch_npu.profiler._ExperimentalConfig(
                profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
                aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization,
            ),
            schedule=torch_npu.profiler.schedule(wait=0, warmup=0, active=STEPS, repeat=1),
            on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof"),
        )

    def run(self, batches):
        with self.prof as prof:
            for batch in batches:
                self.train_step(batch)

    def train_step(self, batch):
        self.prof.step()


class Capture:
    # Kept in an attribute that no code of this file steps: another module may.
    def __init__(self):
        self.capture = torch_npu.profiler.profile(
            experimental_config=torch_npu.profiler._ExperimentalConfig(
                profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
                aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization,
            ),
            schedule=torch_npu.profiler.schedule(wait=0, warmup=0, active=STEPS, repeat=1),
            on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof"),
        )

    def run(self, batch):
        with self.capture:
            self.forward(batch)

    def forward(self, batch):
        return batch
