# Our own minimal reproduction of the profiling guide's template shape: the mode runs
# through a dict of functions, the window sizes come from the command line and constants.
import argparse
import os
import os.path as osp

import torch_npu
from torch_npu.profiler import profile as npu_profile, schedule

WARMUP, ACTIVE = 1, 3
ROOT = "prof"
PHASE = os.environ.get("PHASE", "decode")


def run_prefill(model, x, steps):
    with npu_profile(schedule=schedule(wait=0, warmup=WARMUP, active=steps)) as prof:
        model(x)
        prof.step()


def run_decode(model, x, steps=ACTIVE * 2):
    with npu_profile(schedule=schedule(wait=0, warmup=WARMUP, active=steps)) as prof:
        for _ in range(steps + WARMUP):
            model(x)
            prof.step()


PHASES = {"prefill": run_prefill, "decode": run_decode}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default="4")
    parser.add_argument("--repeat", type=int, required=True)
    args = parser.parse_args()
    out = osp.join(ROOT, PHASE)
    run_prefill(None, None, args.steps)
    PHASES[PHASE](None, None, args.repeat)
    return out
