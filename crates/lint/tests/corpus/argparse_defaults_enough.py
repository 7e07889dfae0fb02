# The loop bound is derived from the same options as the schedule, plus one: correct for
# every command-line value.
import argparse

import torch_npu

parser = argparse.ArgumentParser()
parser.add_argument("--profile-warmup", dest="warmup", type=int, default=1)
parser.add_argument("--profile-active", dest="active", type=int, default="5")
opts = parser.parse_args()

config = torch_npu.profiler._ExperimentalConfig(
    profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
    aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization,
)

engine = build_engine()
engine.decode_step()
with torch_npu.profiler.profile(
    experimental_config=config,
    schedule=torch_npu.profiler.schedule(wait=0, warmup=opts.warmup, active=opts.active, repeat=1),
    on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof"),
) as prof:
    for _ in range(opts.warmup + opts.active + 1):
        engine.decode_step()
        prof.step()
