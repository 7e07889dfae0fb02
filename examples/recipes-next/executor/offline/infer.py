# Offline inference entry point of the shared engine, started once per rank by
# executor/scripts/function.sh (unless the model has its own models/<m>/infer.py):
#
#   LOCAL_RANK=0 WORLD_SIZE=1 python3 executor/offline/infer.py --yaml_file_path=<config.yaml>
#
# With model_config.enable_profiler the profiler writes under $WORK_DIR/$RES_PATH/prof/.
import argparse
import os
import sys

from executor.core.config.inference_config import load_inference_config
from executor.core.config.yaml_loader import ConfigError
from executor.offline.offline_inference import OfflineInference


def parse_args():
    parser = argparse.ArgumentParser(description="Offline inference of one run configuration.")
    parser.add_argument("--yaml_file_path", required=True, help="path of the run configuration")
    return parser.parse_args()


def generate_prompt(count, max_len):
    return [[(i * 131 + p * 17) % 32000 for p in range(min(max_len, 8 + i % 8))] for i in range(count)]


def main():
    args = parse_args()
    try:
        config = load_inference_config(args.yaml_file_path)
    except (ConfigError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    rank = int(os.getenv("LOCAL_RANK", "0")) + int(os.getenv("RANK_OFFSET", "0"))
    model = config.model_config
    print(
        f"[rank {rank}] model {model.model_name!r}, exe_mode {model.exe_mode}, "
        f"enable_profiler {model.enable_profiler!r}, next_n {model.next_n}, "
        f"batch_size {config.scheduler_config.batch_size}, max_new_tokens {config.scheduler_config.max_new_tokens}",
        flush=True,
    )
    llm = OfflineInference(config)
    if llm.engine.is_afd_ffn_rank:
        print(f"[rank {rank}] attention-FFN disaggregation: this rank runs the FFN side", flush=True)
    prompts = generate_prompt(config.scheduler_config.batch_size, config.data_config.input_truncated_len)
    finished, prefill_batches, decode_batches = llm.generate(prompts)
    steps = sorted({r.decode_step_count for r in finished})
    print(
        f"[rank {rank}] {len(finished)} requests: {prefill_batches} prefill forward(s), "
        f"{decode_batches} decode forwards (decode steps per request: {steps})",
        flush=True,
    )
    # `llm` goes out of scope when main() returns: ProfilerManager.__del__ stops the decode profiler.
    return 0


if __name__ == "__main__":
    sys.exit(main())
