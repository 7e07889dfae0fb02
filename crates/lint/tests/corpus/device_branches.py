# Benchmarks that run on a GPU or an NPU: `torch.profiler` where the code targets the GPU
# (the other branch of an NPU test, a negated NPU flag, CUDA activities) is right there.
import torch

try:
    import torch_npu

    torch_npu_flag = True
except ImportError:
    torch_npu_flag = False

CONFIG = None


def on_either(kernel, x):
    if torch_npu_flag:
        with torch_npu.profiler.profile(
            experimental_config=torch_npu.profiler._ExperimentalConfig(
                profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
                aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization,
            ),
            on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof"),
        ):
            kernel(x)
    else:
        with torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU],
            on_trace_ready=torch.profiler.tensorboard_trace_handler("./prof"),
        ):
            kernel(x)


def gpu_only(kernel, x):
    if not torch_npu_flag:
        with torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU],
            on_trace_ready=torch.profiler.tensorboard_trace_handler("./prof"),
        ):
            kernel(x)


def by_device(kernel, x, device):
    if device == "npu":
        pass
    elif device == "cpu":
        with torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU],
            on_trace_ready=torch.profiler.tensorboard_trace_handler("./prof"),
        ):
            kernel(x)


def cuda_activities(kernel, x):
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
        on_trace_ready=torch.profiler.tensorboard_trace_handler("./prof"),
    ):
        kernel(x)


def npu_side(kernel, x):
    # Here the code runs on the NPU, and torch.profiler sees none of its kernels.
    if torch_npu_flag:
        with torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU],
            on_trace_ready=torch.profiler.tensorboard_trace_handler("./prof"),
        ):
            kernel(x)


def after_a_check_of_inputs(kernel, inputs):
    # `inputs` is not about the NPU: this is NPU code like any other.
    if inputs is None:
        return
    else:
        with torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU],
            on_trace_ready=torch.profiler.tensorboard_trace_handler("./prof"),
        ):
            kernel(inputs)
