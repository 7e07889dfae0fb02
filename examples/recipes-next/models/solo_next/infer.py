# Part of recipes-next: a model with its own entry point and its own generation loop, which
# builds no profiler at all (neither the shared engine's manager nor ModelRunner.define_profiler):
# its run config's enable_profiler switch is read by nothing.
import argparse
import sys

from executor.core.config.yaml_loader import load_config


def generate(prompt, max_new_tokens):
    tokens = list(prompt)
    for _ in range(max_new_tokens):
        tokens.append((tokens[-1] * 31 + 7) % 32000)
    return tokens


def main():
    parser = argparse.ArgumentParser(description="solo-next inference")
    parser.add_argument("--yaml_file_path", required=True)
    args = parser.parse_args()
    settings = load_config(args.yaml_file_path)
    budget = settings["data_config"]["max_new_tokens"]
    out = generate([1, 2, 3], budget)
    print(f"generated {len(out) - 3} tokens", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
