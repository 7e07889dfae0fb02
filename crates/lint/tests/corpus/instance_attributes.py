# The window lives in a class: sizes are attributes set once in __init__.
import torch_npu


class DecodeProfiler:
    def __init__(self, save_path):
        self.warmup = 2
        self.active = 5
        self.prof = torch_npu.profiler.profile(
            experimental_config=torch_npu.profiler._ExperimentalConfig(
                profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
                aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization,
            ),
            schedule=torch_npu.profiler.schedule(wait=0, warmup=self.warmup, active=self.active, repeat=1),
            on_trace_ready=torch_npu.profiler.tensorboard_trace_handler(save_path),
        )

    def run(self, engine):
        engine.decode_step()
        with self.prof as prof:
            for _ in range(self.active):
                engine.decode_step()
                prof.step()
