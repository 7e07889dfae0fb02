# kimi_k3's own entry point (family B; executor/scripts/function.sh prefers it
# over the shared engine because it exists).
import argparse

from executor.model_runner import ModelRunner
from executor.utils import read_yaml
from models.model_infer import Infer


class KimiRunner(ModelRunner):
    def __init__(self, runner_settings):
        super().__init__(runner_settings)
        model_config = runner_settings.get("model_config")
        mini = model_config.get("prefill_mini_batch_size", 0)
        self.prefill_cycles = self.batch_size // mini if mini > 0 else 1


def main():
    parser = argparse.ArgumentParser(description="kimi_k3 offline inference")
    parser.add_argument("--yaml_file_path", type=str, help="run configuration")
    args = parser.parse_args()
    settings = read_yaml(args.yaml_file_path)
    runner = KimiRunner(settings)
    runner.init_model()
    infer = Infer(settings, runner)
    batch_size = settings.get("data_config").get("batch_size", 1)
    prompts = [[(i * 29 + p * 13) % 32000 for p in range(4 + i % 3)] for i in range(batch_size)]
    # skip_warm_up (default True): compilation then happens inside the first real forwards.
    if not settings.get("model_config", {}).get("skip_warm_up", True):
        infer.model_generate(prompts, warm_up=True)
    infer.model_generate(prompts)
    print("model run success", flush=True)


if __name__ == "__main__":
    main()
