# A context manager that profiles whatever runs in the caller's `with` block. The scheduled
# profiler is never bound to a name and the generator only yields: nothing can call `step()`.
import os
from contextlib import contextmanager

import torch_npu

CONFIG = torch_npu.profiler._ExperimentalConfig(
    profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
    aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization,
)


@contextmanager
def profiled(enabled):
    if not enabled:
        yield
        return
    with torch_npu.profiler.profile(
        experimental_config=CONFIG,
        schedule=torch_npu.profiler.schedule(wait=0, warmup=0, active=1, repeat=1, skip_first=0),
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler(os.environ.get("PROF_DIR", "./prof")),
    ):
        yield


@contextmanager
def profiled_and_handed_out():
    # The caller gets the profiler and may step it: lint cannot count that.
    with torch_npu.profiler.profile(
        experimental_config=CONFIG,
        schedule=torch_npu.profiler.schedule(wait=0, warmup=0, active=1, repeat=1, skip_first=0),
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof"),
    ) as prof:
        yield prof


def stepped_through_another_object(engine, batch):
    with torch_npu.profiler.profile(
        experimental_config=CONFIG,
        schedule=torch_npu.profiler.schedule(wait=0, warmup=0, active=1, repeat=1, skip_first=0),
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof"),
    ) as prof:
        engine.run(batch)
        engine.step()
