# A helper builds the profiler; each `with` passes its own window size to it.
import torch_npu

N = 10


def create_profiler(save_path, warmup=0, active=1):
    experimental_config = torch_npu.profiler._ExperimentalConfig(
        profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
        aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization,
    )
    return torch_npu.profiler.profile(
        activities=[torch_npu.profiler.ProfilerActivity.NPU, torch_npu.profiler.ProfilerActivity.CPU],
        experimental_config=experimental_config,
        schedule=torch_npu.profiler.schedule(wait=0, warmup=warmup, active=active, repeat=1, skip_first=0),
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler(save_path),
    )


def run(engine):
    engine.prefill()
    engine.decode_step()
    with create_profiler("./prof_decode", warmup=0, active=N) as prof:
        for _ in range(N):
            engine.decode_step()
            prof.step()
        prof.step()
    with create_profiler("./prof_prefill") as prof:
        engine.prefill()
        prof.step()
