# The offline execution engine: runs batches of requests through the model,
# one prefill forward and then decode forwards until the token budget is spent.
import os

from executor.utils.profiler_context import ProfilerManager


class Batch:
    def __init__(self, requests, is_prefill):
        self.requests = requests
        self.is_prefill = is_prefill


class ExecutionEngine:
    def __init__(self, infer_config, model_runner):
        self.infer_config = infer_config
        self.model_runner = model_runner
        work_dir = os.getenv("WORK_DIR", ".")
        res_path = os.getenv("RES_PATH", "res")
        self.profiler = ProfilerManager(
            infer_config.model_config.enable_profiler,
            os.path.join(work_dir, res_path),
        )

    def forward(self, batch):
        self.profiler.set_status(batch.is_prefill)
        output = self.model_runner.forward(batch)
        self.profiler.step()
        return output

    def forward_afd_ffn(self, batch):
        # Attention-FFN disaggregation: the FFN side runs its own forward.
        self.profiler.set_status(batch.is_prefill)
        output = self.model_runner.forward_ffn(batch)
        self.profiler.step()
        return output
