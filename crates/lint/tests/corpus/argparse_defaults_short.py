# Window sizes from the command line. With the defaults, 30 loop steps cannot close a
# 2 + 30 window; other command-line values may or may not.
import argparse

import torch_npu


def parse():
    parser = argparse.ArgumentParser(description="decode benchmark with a profiler")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--active", type=int, default=30)
    parser.add_argument("--decode-steps", type=int, default=30)
    return parser.parse_args()


def main():
    args = parse()
    engine = build_engine()
    engine.decode_step()
    config = torch_npu.profiler._ExperimentalConfig(
        profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
        aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization,
    )
    with torch_npu.profiler.profile(
        experimental_config=config,
        schedule=torch_npu.profiler.schedule(wait=0, warmup=args.warmup, active=args.active, repeat=1),
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof"),
    ) as prof:
        for _ in range(args.decode_steps):
            engine.decode_step()
            prof.step()
