# Warm-up seen through callers: a helper with no telling name runs the model first; a table
# of measuring functions is dispatched after it. Another entry point dispatches cold, and a
# function no code in this file calls is not judged.
import torch_npu

CONFIG = torch_npu.profiler._ExperimentalConfig(
    profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
    aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization,
)


def settle(net, batch):
    net.generate(batch)


def measure(model, batch):
    with torch_npu.profiler.profile(
        experimental_config=CONFIG,
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof"),
    ):
        model(batch)


def measure_cold(model, batch):
    with torch_npu.profiler.profile(
        experimental_config=CONFIG,
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof_cold"),
    ):
        model.generate(batch)


def library_entry(model, batch):
    with torch_npu.profiler.profile(
        experimental_config=CONFIG,
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof_lib"),
    ):
        model(batch)


RUNS = [measure]
COLD = {"cold": measure_cold}


def main(model, batch):
    settle(model, batch)
    RUNS[0](model, batch)


def cold_main(model, batch):
    COLD["cold"](model, batch)


if __name__ == "__main__":
    main(object(), [1])
    cold_main(object(), [1])


def measure_swept(model, batch):
    with torch_npu.profiler.profile(
        experimental_config=CONFIG,
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof_sweep"),
    ):
        model(batch)


def sweep(model, batch):
    # A loop over a tuple of functions runs each, with nothing before it.
    for run in (measure_swept,):
        run(model, batch)


sweep(object(), [1])
