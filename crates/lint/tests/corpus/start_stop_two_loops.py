# start()/stop() around a warm-up loop and a measured loop, sizes passed from the command line:
# warmup + iters calls for a warmup + iters window, closing on the very last call.
import argparse

import torch_npu


def measure(iters, warmup):
    prof = torch_npu.profiler.profile(
        experimental_config=torch_npu.profiler._ExperimentalConfig(
            profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
            aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization,
        ),
        schedule=torch_npu.profiler.schedule(wait=0, warmup=warmup, active=iters, repeat=1),
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./prof"),
    )
    prof.start()
    for _ in range(warmup):
        run_kernel()
        prof.step()
    for _ in range(iters):
        run_kernel()
        prof.step()
    prof.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    run_kernel()
    measure(args.iters, args.warmup)
