# glm_5_2's runner: the legacy ModelRunner with the model's own settings.
from executor.model_runner import ModelRunner


class GlmRunner(ModelRunner):
    def __init__(self, runner_settings):
        super().__init__(runner_settings)
        model_config = runner_settings.get("model_config")
        self.next_n = model_config.get("next_n", 0)
        self.prefill_mini_batch_size = model_config.get("prefill_mini_batch_size", 0)
