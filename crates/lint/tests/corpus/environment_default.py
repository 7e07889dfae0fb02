# The number of steps comes from an environment variable with a default.
import os

import torch_npu

STEPS = int(os.getenv("PROFILE_STEPS", "8"))


def run(engine):
    engine.decode_step()
    with torch_npu.profiler.profile(
        experimental_config=torch_npu.profiler._ExperimentalConfig(
            profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
            aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization,
        ),
        schedule=torch_npu.profiler.schedule(wait=0, warmup=1, active=8, repeat=1),
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof"),
    ) as prof:
        for _ in range(STEPS):
            engine.decode_step()
            prof.step()
