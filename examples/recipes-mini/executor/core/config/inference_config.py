# Reads a run configuration (models/<model>/config/<file>.yaml).
from executor.core.config.yaml_loader import ConfigError, load_config


class ModelConfig:
    def __init__(self, raw):
        self.model_name = raw.get("model_name", "")
        self.exe_mode = raw.get("exe_mode", "eager")
        self.enable_profiler = raw.get("enable_profiler", False)
        self.next_n = raw.get("next_n", 0)
        self.custom_params = raw.get("custom_params") or {}


class InferenceConfig:
    def __init__(self, raw):
        self.model_config = ModelConfig(raw.get("model_config", {}))
        self.world_size = raw.get("parallel_config", {}).get("world_size", 1)
        scheduler = raw.get("scheduler_config", {})
        self.max_new_tokens = scheduler.get("max_new_tokens", 1)
        self.batch_size = scheduler.get("batch_size", 1)
        data = raw.get("data_config") or {}
        self.input_max_len = data.get("input_max_len", 128)
        # Requests in the run; one batch unless the config says otherwise.
        self.num_requests = data.get("num_requests", self.batch_size)
        self._check()

    def _check(self):
        for name in ("world_size", "max_new_tokens", "batch_size", "num_requests", "input_max_len"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, found {value!r}")
        next_n = self.model_config.next_n
        if isinstance(next_n, bool) or not isinstance(next_n, int) or next_n < 0:
            raise ConfigError(f"model_config.next_n must be a non-negative integer, found {next_n!r}")
        if not isinstance(self.model_config.enable_profiler, bool):
            raise ConfigError(
                "model_config.enable_profiler must be True or False, "
                f"found {self.model_config.enable_profiler!r}"
            )


def load_inference_config(path):
    """Reads the YAML file at `path` into an InferenceConfig."""
    raw = load_config(path)
    if not isinstance(raw, dict) or "scheduler_config" not in raw:
        raise ConfigError(f"{path}: not an LLM run configuration (no scheduler_config)")
    return InferenceConfig(raw)
