# Window sizes as function parameters: the call in this file decides them.
import torch_npu

config = torch_npu.profiler._ExperimentalConfig(
    profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
    aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization,
)


def capture_decode(engine, steps=8, active=8, warmup=1):
    engine.decode_step()
    with torch_npu.profiler.profile(
        experimental_config=config,
        schedule=torch_npu.profiler.schedule(wait=0, warmup=warmup, active=active, repeat=1),
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof_decode"),
    ) as prof:
        for _ in range(steps):
            engine.decode_step()
            prof.step()


def capture_prefill(engine, steps, active=2):
    engine.prefill()
    with torch_npu.profiler.profile(
        experimental_config=config,
        schedule=torch_npu.profiler.schedule(wait=0, warmup=0, active=active, repeat=1),
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof_prefill"),
    ) as prof:
        for _ in range(steps):
            engine.prefill()
            prof.step()


if __name__ == "__main__":
    engine = build_engine()
    capture_decode(engine)
    capture_prefill(engine, steps=3)
