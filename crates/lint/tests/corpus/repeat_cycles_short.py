# Two cycles were asked for, but the step budget was added up without the repeat factor:
# 6 + 2·(1 + 1 + 2) = 14 calls are needed, the loop makes 10, so the second cycle never records.
import torch_npu

config = torch_npu.profiler._ExperimentalConfig(
    profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
    aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization,
)


def profile_kernel(inputs, kernel):
    total = 10  # meant as skip_first + (wait + warmup + active) * repeat
    with torch_npu.profiler.profile(
        experimental_config=config,
        schedule=torch_npu.profiler.schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=6),
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof_kernel"),
    ) as prof:
        for _ in range(total):
            for x in inputs:
                kernel(x)
            prof.step()
