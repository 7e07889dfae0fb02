# Model runner: owns the model and runs one forward per batch.
#
# define_profiler() is an older helper kept for the online server; the offline
# engine profiles through executor.utils.profiler_context.ProfilerManager.
import torch_npu


def define_profiler(enable_profiler=False, profile_save_path="prof", active=10, repeat=1, skip_first=10):
    if not enable_profiler:
        return None
    return torch_npu.profiler.profile(
        activities=[torch_npu.profiler.ProfilerActivity.NPU, torch_npu.profiler.ProfilerActivity.CPU],
        schedule=torch_npu.profiler.schedule(wait=0, warmup=0, active=active, repeat=repeat, skip_first=skip_first),
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler(profile_save_path),
    )


class ModelRunner:
    def __init__(self, infer_config):
        self.infer_config = infer_config

    def forward(self, batch):
        raise NotImplementedError

    def forward_ffn(self, batch):
        raise NotImplementedError
