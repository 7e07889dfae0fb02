# pangu_7b's own entry point (family B): function.sh runs it instead of the shared engine.
import argparse

from runner_pangu import PanguRunner
from executor.utils import read_yaml


def parse_args():
    parser = argparse.ArgumentParser(description="pangu_7b offline inference")
    parser.add_argument("--yaml_file_path", type=str, help="run configuration")
    return parser.parse_args()


if __name__ == "__main__":
    runner_settings = read_yaml(parse_args().yaml_file_path)
    batch_size = runner_settings.get("data_config").get("batch_size", 1)
    prompts = [[(i * 41 + p * 3) % 32000 for p in range(6 + i)] for i in range(batch_size)]
    model_runner = PanguRunner(runner_settings)
    model_runner.init_model()
    model_runner.model_generate(prompts, warm_up=True)
    model_runner.model_generate(prompts)
    print("model run success", flush=True)
