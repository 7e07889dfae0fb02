# Attributes copied from constructor parameters: the one construction in the file decides them.
import torch_npu


class Capture:
    def __init__(self, active=3, warmup=1):
        self.active = active
        self.warmup = warmup

    def run(self, engine):
        engine.decode_step()
        with torch_npu.profiler.profile(
            experimental_config=torch_npu.profiler._ExperimentalConfig(
                profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
                aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization,
            ),
            schedule=torch_npu.profiler.schedule(wait=0, warmup=self.warmup, active=self.active, repeat=1),
            on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof"),
        ) as prof:
            for _ in range(self.active):
                engine.decode_step()
                prof.step()


Capture(active=6).run(build_engine())
