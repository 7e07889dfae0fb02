# Experimental configs that lose the kernel metrics, written through names.
import torch_npu

LEVEL = torch_npu.profiler.ProfilerLevel.Level0
basic = torch_npu.profiler._ExperimentalConfig(profiler_level=LEVEL)


def level0(engine):
    engine.decode_step()
    with torch_npu.profiler.profile(
        experimental_config=basic,
        schedule=torch_npu.profiler.schedule(wait=0, warmup=0, active=2, repeat=1),
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof"),
    ) as prof:
        for _ in range(3):
            engine.decode_step()
            prof.step()


def no_config_no_handler(engine):
    engine.decode_step()
    with torch_npu.profiler.profile(
        schedule=torch_npu.profiler.schedule(wait=0, warmup=0, active=2, repeat=1),
    ) as prof:
        for _ in range(3):
            engine.decode_step()
            prof.step()
