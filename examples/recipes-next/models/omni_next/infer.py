# Part of recipes-next: a model with its own entry point and two modes. Text runs go to the
# shared offline engine (family A); a multimodal config runs this model's own request loop,
# which drives the shared engine's profiler manager itself (models/omni_next/models/model_infer.py).
import argparse
import os
import sys
from pathlib import Path

# The launcher puts the repository on PYTHONPATH; this script's own directory (which holds a
# models/ package of its own) must not shadow the repository's models/ package.
_MODEL_DIR = Path(__file__).resolve().parent
_REPOSITORY_ROOT = _MODEL_DIR.parents[1]
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != _MODEL_DIR]

from executor.core.config.yaml_loader import load_config


def main():
    parser = argparse.ArgumentParser(description="omni-next inference")
    parser.add_argument("--yaml_file_path", required=True)
    args = parser.parse_args()
    settings = load_config(args.yaml_file_path)
    if settings.get("data_config", {}).get("dataset", "default") != "omni_multimodal":
        # Dataset paths are relative to the repository: run the shared entry from there.
        os.chdir(_REPOSITORY_ROOT)
        from executor.offline.infer import main as shared_main
        return shared_main()

    from models.omni_next.models.model_infer import run_multimodal
    return run_multimodal(args.yaml_file_path, settings)


if __name__ == "__main__":
    sys.exit(main())
