# Counted while loops: the counter starts just before the loop and grows by one per step.
import torch_npu

TOTAL = 6
ACTIVE = 5
config = torch_npu.profiler._ExperimentalConfig(
    profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
    aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization,
)


def enough(engine):
    engine.decode_step()
    with torch_npu.profiler.profile(
        experimental_config=config,
        schedule=torch_npu.profiler.schedule(wait=0, warmup=0, active=ACTIVE, repeat=1),
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof"),
    ) as prof:
        step = 0
        while step < TOTAL:
            engine.decode_step()
            prof.step()
            step += 1


def short(engine):
    engine.decode_step()
    with torch_npu.profiler.profile(
        experimental_config=config,
        schedule=torch_npu.profiler.schedule(wait=0, warmup=1, active=ACTIVE, repeat=1),
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof"),
    ) as prof:
        i = 1
        while i <= ACTIVE:
            engine.decode_step()
            prof.step()
            i += 1
