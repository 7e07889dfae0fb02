# A schedule built once and passed by name; two cycles of wait 1 + warmup 1 + active 3.
import torch_npu

two_cycles = torch_npu.profiler.schedule(wait=1, warmup=1, active=3, repeat=2)
config = torch_npu.profiler._ExperimentalConfig(
    profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
    aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization,
)


def enough(engine):
    with torch_npu.profiler.profile(
        experimental_config=config,
        schedule=two_cycles,
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof"),
    ) as prof:
        for _ in range(2 * 5):
            engine.decode_step()
            prof.step()
        prof.step()


def one_cycle_short(engine):
    with torch_npu.profiler.profile(
        experimental_config=config,
        schedule=two_cycles,
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof"),
    ) as prof:
        for _ in range(8):
            engine.decode_step()
            prof.step()
