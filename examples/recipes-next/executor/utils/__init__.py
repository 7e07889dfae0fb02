# Small helpers shared by the models' own runners (family B).
from executor.core.config.yaml_loader import load_config


def read_yaml(path):
    """The raw run configuration at `path` (nested dicts)."""
    return load_config(path)


def update_settings(runner_settings, section, key, value):
    runner_settings.setdefault(section, {})[key] = value
    return runner_settings
