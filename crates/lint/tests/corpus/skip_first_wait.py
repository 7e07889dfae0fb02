# torch_npu 26.1+: skip_first_wait drops the first cycle's wait steps. Needed:
# skip_first 1 + (wait 2 + warmup 1 + active 3) - wait 2 = 5 calls; 6 leave one to spare.
# (Without skip_first_wait the same loop would be 1 short.)
import torch_npu

config = torch_npu.profiler._ExperimentalConfig(
    profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
    aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization,
)


def run(engine):
    with torch_npu.profiler.profile(
        experimental_config=config,
        schedule=torch_npu.profiler.schedule(wait=2, warmup=1, active=3, repeat=1, skip_first=1, skip_first_wait=1),
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof"),
    ) as prof:
        for _ in range(6):
            engine.decode_step()
            prof.step()
