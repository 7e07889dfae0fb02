# The collection guide's decode window, with the "old docs" mistake: the loop bound is ACTIVE, so
# it misses the 2 warm-up steps. corpus.rs derives the guide's ways A and B from this file.
import torch_npu

WARMUP, ACTIVE = 2, 30
MAX_STEPS = ACTIVE

config = torch_npu.profiler._ExperimentalConfig(
    profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
    aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization,
)


def profile_decode(engine):
    engine.decode_step()
    with torch_npu.profiler.profile(
        experimental_config=config,
        schedule=torch_npu.profiler.schedule(wait=0, warmup=WARMUP, active=ACTIVE, repeat=1, skip_first=0),
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof_decode"),
    ) as prof:
        for step in range(MAX_STEPS):
            engine.decode_step()
            prof.step()
