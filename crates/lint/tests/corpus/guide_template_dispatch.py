# The collection guide's template, in our words: four modes, each with its own window; main()
# builds the model, warms up (one prefill, one decode through a differently named helper) and
# only then dispatches to the chosen mode through a dict of functions.
import os

import torch
import torch_npu

OUT_DIR = "./prof"
MODE = "decode"
STEPS = 30
SCHED_WARMUP = 0
CLOSING_STEP = True


def make_profiler(out_dir, warmup, active):
    os.makedirs(out_dir, exist_ok=True)
    config = torch_npu.profiler._ExperimentalConfig(
        profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
        aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization,
    )
    return torch_npu.profiler.profile(
        activities=[torch_npu.profiler.ProfilerActivity.NPU, torch_npu.profiler.ProfilerActivity.CPU],
        experimental_config=config,
        schedule=torch_npu.profiler.schedule(wait=0, warmup=warmup, active=active, repeat=1, skip_first=0),
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler(out_dir),
    )


def load():
    dev = torch.device("npu:0")
    net = torch.nn.Linear(64, 64).to(dev)
    return net, torch.randn(4, 64, device=dev), dev


def run_prefill(net, inp, dev):
    with torch.no_grad():
        return net(inp)


def compile_decode_graph(net, inp, dev):
    # the first decode: graph compilation happens here
    with torch.no_grad():
        return net(inp)


def run_decode_step(net, inp, dev):
    with torch.no_grad():
        return net(inp)


def only_decode(net, inp, dev):
    with make_profiler(OUT_DIR, SCHED_WARMUP, STEPS) as prof:
        for _ in range(STEPS):
            run_decode_step(net, inp, dev)
            prof.step()
        if CLOSING_STEP:
            prof.step()


def only_prefill(net, inp, dev):
    window = make_profiler(OUT_DIR, SCHED_WARMUP, 1)
    with window as prof:
        run_prefill(net, inp, dev)
        prof.step()
        if CLOSING_STEP:
            prof.step()


def prefill_then_decode(net, inp, dev):
    with make_profiler(OUT_DIR, SCHED_WARMUP, 1 + STEPS) as prof:
        run_prefill(net, inp, dev)
        prof.step()
        for _ in range(STEPS):
            run_decode_step(net, inp, dev)
            prof.step()
        if CLOSING_STEP:
            prof.step()


def both_apart(net, inp, dev):
    with make_profiler(os.path.join(OUT_DIR, "prefill"), SCHED_WARMUP, 1) as prof:
        run_prefill(net, inp, dev)
        prof.step()
        if CLOSING_STEP:
            prof.step()
    with make_profiler(os.path.join(OUT_DIR, "decode"), SCHED_WARMUP, STEPS) as prof:
        for _ in range(STEPS):
            run_decode_step(net, inp, dev)
            prof.step()
        if CLOSING_STEP:
            prof.step()


MODES = {
    "decode": only_decode,
    "prefill": only_prefill,
    "both": prefill_then_decode,
    "apart": both_apart,
}


def main():
    if MODE not in MODES:
        raise ValueError(MODE)
    net, inp, dev = load()
    # warm-up outside any window: one prefill, one decode
    run_prefill(net, inp, dev)
    compile_decode_graph(net, inp, dev)
    MODES[MODE](net, inp, dev)


if __name__ == "__main__":
    main()
