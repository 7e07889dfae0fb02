# Offline inference entry point, started once per rank by executor/scripts/infer.sh:
#
#   RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 python3 -m executor.offline_inference --yaml <config.yaml>
#
# Reads the run configuration, builds the model runner and the execution
# engine, and generates max_new_tokens tokens for every request. The profiler
# (if model_config.enable_profiler is True) writes under $WORK_DIR/$RES_PATH/prof/.
import argparse
import os
import sys
import time

from executor.core.config.inference_config import load_inference_config
from executor.core.config.yaml_loader import ConfigError
from executor.core.engine.execution_engine import ExecutionEngine, Request
from executor.model_runner import ModelRunner


def build_requests(infer_config):
    requests = []
    for index in range(infer_config.num_requests):
        length = min(infer_config.input_max_len, 8 + index % 8)
        prompt = [(index * 131 + position * 17) % 32000 for position in range(length)]
        requests.append(Request(index, prompt))
    return requests


def run(yaml_path, pd_role=None):
    infer_config = load_inference_config(yaml_path)
    rank = int(os.getenv("RANK", "0"))
    world_size = int(os.getenv("WORLD_SIZE", str(infer_config.world_size)))
    model_config = infer_config.model_config
    print(
        f"[rank {rank}/{world_size}] model {model_config.model_name!r}, exe_mode {model_config.exe_mode}, "
        f"enable_profiler {model_config.enable_profiler}, next_n {model_config.next_n}, "
        f"batch_size {infer_config.batch_size}, max_new_tokens {infer_config.max_new_tokens}",
        flush=True,
    )
    if pd_role == "prefill":
        # A prefill node of a PD-disaggregated deployment only runs prefill.
        infer_config.max_new_tokens = 1
    engine = ExecutionEngine(infer_config, ModelRunner(infer_config))
    started = time.monotonic()
    stats = engine.generate(build_requests(infer_config))
    for index, batch in enumerate(stats):
        print(
            f"[rank {rank}] batch {index}: {batch['requests']} requests, "
            f"{batch['prefill_forwards']} prefill forward, {batch['decode_forwards']} decode forwards",
            flush=True,
        )
    # Dropping the engine stops the profiler (ProfilerManager.__del__) while
    # the interpreter is still fully alive.
    del engine
    print(f"[rank {rank}] done in {time.monotonic() - started:.3f}s", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Offline inference of one run configuration.")
    parser.add_argument("--yaml", required=True, help="path of the run configuration")
    parser.add_argument("--pd-role", choices=["prefill", "decode"], default=None)
    args = parser.parse_args(argv)
    try:
        run(args.yaml, args.pd_role)
    except (ConfigError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
