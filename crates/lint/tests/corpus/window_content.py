# What runs inside the window: compilation on the first recorded step, and a loop that
# never steps.
import torch
import torch_npu

WARMUP, ACTIVE = 0, 4
config = torch_npu.profiler._ExperimentalConfig(
    profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
    aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization,
)


def compiled_inside(model, x):
    with torch_npu.profiler.profile(
        experimental_config=config,
        schedule=torch_npu.profiler.schedule(wait=0, warmup=WARMUP, active=ACTIVE, repeat=1),
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof"),
    ) as prof:
        fast = torch.compile(model)
        for _ in range(ACTIVE + 1):
            fast(x)
            prof.step()


def never_steps(model, x):
    model(x)
    with torch_npu.profiler.profile(
        experimental_config=config,
        schedule=torch_npu.profiler.schedule(wait=0, warmup=WARMUP, active=ACTIVE, repeat=1),
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof"),
    ) as prof:
        for _ in range(ACTIVE + 1):
            model(x)


def whole_loop_as_one_step(model, cases):
    model(cases[0])
    with torch_npu.profiler.profile(
        experimental_config=config,
        schedule=torch_npu.profiler.schedule(wait=0, warmup=1, active=1, repeat=1),
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof"),
    ) as prof:
        prof.step()
        for case in cases:
            model(case)
        prof.step()
        prof.step()
