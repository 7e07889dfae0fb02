# Reads a run configuration (models/<model>/config/<file>.yaml) of the shared engine.
#
# Defaults follow the real engine: scheduler_config.max_new_tokens 32, batch_size 1,
# max_prefill_tokens 0 (= input_truncated_len x batch_size), model_config.next_n 0,
# enable_profiler False. enable_profiler is used as written, without bool coercion
# (a quoted "False" is a non-empty string, so it switches the profiler on).
from executor.core.config.yaml_loader import ConfigError, load_config


class ModelConfig:
    def __init__(self, raw):
        self.model_name = raw.get("model_name", "")
        self.exe_mode = raw.get("exe_mode", "eager")
        self.enable_profiler = raw.get("enable_profiler", False)
        self.next_n = raw.get("next_n", 0)
        self.custom_params = raw.get("custom_params") or {}


class SchedulerConfig:
    def __init__(self, raw):
        self.batch_size = raw.get("batch_size", 1)
        self.max_new_tokens = raw.get("max_new_tokens", 32)
        self.max_prefill_tokens = raw.get("max_prefill_tokens", 0)


class DataConfig:
    def __init__(self, raw):
        self.dataset = raw.get("dataset", "default")
        self.input_truncated_len = raw.get("input_truncated_len", 256)
        self.input_max_len = raw.get("input_max_len", 128)


class InferenceConfig:
    def __init__(self, raw, disaggregation_mode="NONE"):
        self.model_config = ModelConfig(raw.get("model_config") or {})
        parallel = raw.get("parallel_config") or {}
        self.world_size = parallel.get("world_size", 1)
        self.scheduler_config = SchedulerConfig(raw.get("scheduler_config") or {})
        self.data_config = DataConfig(raw.get("data_config") or {})
        # "NONE" offline, "PREFILL" or "DECODE" for a PD-disaggregated server.
        self.disaggregation_mode = disaggregation_mode
        self._check()
        if self.scheduler_config.max_prefill_tokens == 0:
            self.scheduler_config.max_prefill_tokens = (
                self.data_config.input_truncated_len * self.scheduler_config.batch_size
            )

    def _check(self):
        values = {
            "parallel_config.world_size": self.world_size,
            "scheduler_config.max_new_tokens": self.scheduler_config.max_new_tokens,
            "scheduler_config.batch_size": self.scheduler_config.batch_size,
            "data_config.input_truncated_len": self.data_config.input_truncated_len,
        }
        for name, value in values.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, found {value!r}")
        prefill = self.scheduler_config.max_prefill_tokens
        if isinstance(prefill, bool) or not isinstance(prefill, int) or prefill < 0:
            raise ConfigError(f"scheduler_config.max_prefill_tokens must be >= 0, found {prefill!r}")
        next_n = self.model_config.next_n
        if isinstance(next_n, bool) or not isinstance(next_n, int) or next_n < 0:
            raise ConfigError(f"model_config.next_n must be a non-negative integer, found {next_n!r}")


def load_inference_config(path, disaggregation_mode="NONE"):
    """Reads the YAML file at `path` into an InferenceConfig."""
    raw = load_config(path)
    if not isinstance(raw, dict) or "scheduler_config" not in raw:
        raise ConfigError(f"{path}: not a run configuration of the shared engine (no scheduler_config)")
    return InferenceConfig(raw, disaggregation_mode)
