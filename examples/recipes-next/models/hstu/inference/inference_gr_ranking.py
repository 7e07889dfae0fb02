"""hstu miniature (recipes-next): a standalone ranking script whose profiler is a command-line
flag (eval mode only), writing to ./result. Written for npuprof's tests."""

import argparse


def run(mode, enable_profiler=False):
    if mode != "eval" or not enable_profiler:
        return "no profiler"
    import torch_npu

    with torch_npu.profiler.profile(
        schedule=torch_npu.profiler.schedule(wait=0, warmup=0, active=1, repeat=1, skip_first=0),
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler("./result"),
    ) as prof:
        prof.step()
    return "profiled"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gin_config_file")
    parser.add_argument("--mode", default="eval")
    parser.add_argument("--enable_fused_ops", default="all")
    parser.add_argument("--enable_profiler", action="store_true")
    args = parser.parse_args()
    print(run(args.mode, enable_profiler=args.enable_profiler))


if __name__ == "__main__":
    main()
