# Reads a run configuration (models/<model>/config/<file>.yaml).


class ModelConfig:
    def __init__(self, raw):
        self.model_name = raw.get("model_name", "")
        self.exe_mode = raw.get("exe_mode", "eager")
        self.enable_profiler = raw.get("enable_profiler", False)
        self.next_n = raw.get("next_n", 0)


class InferenceConfig:
    def __init__(self, raw):
        self.model_config = ModelConfig(raw.get("model_config", {}))
        self.world_size = raw.get("parallel_config", {}).get("world_size", 1)
        scheduler = raw.get("scheduler_config", {})
        self.max_new_tokens = scheduler.get("max_new_tokens", 1)
        self.batch_size = scheduler.get("batch_size", 1)
