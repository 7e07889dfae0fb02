# glm_5_2's own entry point (a family-B model: it does not use the shared engine).
# executor/scripts/function.sh runs this file instead of executor/offline/infer.py
# because it exists:
#
#   LOCAL_RANK=0 WORLD_SIZE=1 python3 models/glm_5_2/infer.py --yaml_file_path=<config.yaml>
#
# Profiles land in $RES_PATH/{prefill,decode}/prof, relative to the working
# directory (models/glm_5_2 when launched through models/glm_5_2/infer.sh).
import argparse
import os

from runner_glm import GlmRunner
from models.model_infer import Infer
from executor.utils import read_yaml, update_settings


def parse_args():
    parser = argparse.ArgumentParser(description="glm_5_2 offline inference")
    parser.add_argument("--yaml_file_path", type=str, help="run configuration")
    parser.add_argument("--local_rank", type=int, default=0)
    return parser.parse_args()


def generate_prompt(runner_settings):
    batch_size = runner_settings.get("data_config").get("batch_size", 1)
    return [[(i * 53 + p * 7) % 32000 for p in range(5 + i % 4)] for i in range(batch_size)]


def run_glm(runner_settings):
    prompts = generate_prompt(runner_settings)
    model_runner_main = GlmRunner(runner_settings)
    model_runner_main.init_model()
    infer = Infer(runner_settings, model_runner_main)
    # warm-up (compilation): profiler off, two decode forwards
    infer.model_generate(prompts, warm_up=True)
    # the measured run
    infer.model_generate(prompts)


def update_vars(world_size, runner_settings):
    batch_size = runner_settings.get("data_config").get("batch_size", 1)
    return update_settings(runner_settings, "data_config", "batch_size_per_rank", max(1, batch_size // world_size))


if __name__ == "__main__":
    args = parse_args()
    runner_settings = read_yaml(args.yaml_file_path)
    world_size = int(os.getenv("WORLD_SIZE", "1"))
    runner_settings = update_vars(world_size, runner_settings)
    run_glm(runner_settings)
    print("model run success", flush=True)
