# Values lint cannot know: each window gets "could not resolve ... (why)", not a finding.
import torch_npu

STEPS = 10
config = torch_npu.profiler._ExperimentalConfig(
    profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
    aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization,
)


def over_data(engine, loader):
    engine.decode_step()
    with torch_npu.profiler.profile(
        experimental_config=config,
        schedule=torch_npu.profiler.schedule(wait=1, warmup=1, active=3, repeat=1),
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof"),
    ) as prof:
        for batch in loader:
            engine.run(batch)
            prof.step()


def reassigned(engine):
    engine.decode_step()
    with torch_npu.profiler.profile(
        experimental_config=config,
        schedule=torch_npu.profiler.schedule(wait=0, warmup=0, active=5, repeat=1),
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof"),
    ) as prof:
        for _ in range(STEPS):
            engine.decode_step()
            prof.step()


def from_a_config_object(engine, cfg):
    engine.decode_step()
    with torch_npu.profiler.profile(
        experimental_config=config,
        schedule=torch_npu.profiler.schedule(wait=0, warmup=0, active=cfg.active, repeat=1),
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof"),
    ) as prof:
        for _ in range(4):
            engine.decode_step()
            prof.step()


def stops_on_a_condition(engine):
    engine.decode_step()
    with torch_npu.profiler.profile(
        experimental_config=config,
        schedule=torch_npu.profiler.schedule(wait=0, warmup=0, active=5, repeat=1),
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof"),
    ) as prof:
        while True:
            if engine.decode_step() is None:
                break
            prof.step()


STEPS = 20
