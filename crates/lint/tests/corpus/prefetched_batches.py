# Batches are prepared before the window, then the window steps once per prepared batch.
import torch_npu

config = torch_npu.profiler._ExperimentalConfig(
    profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
    aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization,
)


def profile_ranking(model, batches):
    count = 12
    ready = []
    for _ in range(count):
        ready.append(next(batches))
    model(ready[0])
    with torch_npu.profiler.profile(
        experimental_config=config,
        schedule=torch_npu.profiler.schedule(wait=0, warmup=0, active=6, repeat=1, skip_first=6),
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof"),
    ) as prof:
        for batch in ready:
            model(batch)
            prof.step()
