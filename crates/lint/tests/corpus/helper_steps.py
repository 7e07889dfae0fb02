# step() is called by a helper that receives the profiler.
import torch_npu

STEPS = 4


def next_token(engine, state, profiler):
    state = engine.decode_step(state)
    profiler.step()
    return state


def main(engine, state):
    state = engine.decode_step(state)
    with torch_npu.profiler.profile(
        experimental_config=torch_npu.profiler._ExperimentalConfig(
            profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
            aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization,
        ),
        schedule=torch_npu.profiler.schedule(wait=0, warmup=0, active=STEPS, repeat=1),
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof"),
    ) as prof:
        for _ in range(STEPS):
            state = next_token(engine, state, prof)
