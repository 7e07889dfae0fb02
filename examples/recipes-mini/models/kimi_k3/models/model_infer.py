# kimi_k3's generation loop (no draft model):
#   prefill  the batch runs in mini-batch cycles; only the middle cycle
#            (prefill_cycles // 2) is profiled, by its own one-step profiler.
#   decode   max_new_tokens - 1 decode forwards. The decode profiler is entered
#            lazily at the first decode forward with the two class constants as
#            its window, and closed with one extra step() before __exit__.
import os
import sys


class Infer:
    DECODE_STARTUP_SKIP_ROUNDS = 10
    DECODE_PROFILE_ACTIVE_ROUNDS = 10

    def __init__(self, runner_settings, model_runner):
        self.model_runner = model_runner
        data_config = runner_settings.get("data_config", {})
        self.max_new_tokens = data_config.get("max_new_tokens", 128)
        self.enable_profiler = runner_settings.get("model_config", {}).get("enable_profiler", False)
        self.prefill_cycles = model_runner.prefill_cycles
        self._decode_profiler_context = None
        self._decode_profiler = None
        self.decode_forwards = 0

    def _profile_path(self, phase):
        return os.path.join(self.model_runner.res_path, "prof", phase)

    def _start_decode_profiler(self, warm_up):
        if warm_up or not self.enable_profiler or self._decode_profiler is not None:
            return
        self._decode_profiler_context = self.model_runner.define_profiler(
            enable_profiler=True,
            profile_save_path=self._profile_path("decode"),
            active=self.DECODE_PROFILE_ACTIVE_ROUNDS,
            skip_first=self.DECODE_STARTUP_SKIP_ROUNDS,
        )
        self._decode_profiler = self._decode_profiler_context.__enter__()

    def _close_decode_profiler(self):
        if self._decode_profiler_context is None:
            return
        try:
            # one more step, so a run ending exactly on the window's edge still saves
            self._decode_profiler.step()
        finally:
            self._decode_profiler_context.__exit__(*sys.exc_info())
            self._decode_profiler_context = None
            self._decode_profiler = None

    def _step_decode_profiler(self):
        if self._decode_profiler is not None:
            self._decode_profiler.step()

    def _run_model(self, input_dict, is_prefill, warm_up):
        if not is_prefill:
            self._start_decode_profiler(warm_up)
        return self.model_runner.model_inference(input_dict, is_prefill, warm_up)

    def prefill_infer_single_cycle(self, input_dict, cycle_idx, warm_up=False):
        size = len(input_dict["requests"]) // self.prefill_cycles
        cycle_input = {"requests": input_dict["requests"][cycle_idx * size:(cycle_idx + 1) * size]}
        profile_this_cycle = (
            self.enable_profiler
            and not warm_up
            and cycle_idx == self.prefill_cycles // 2
        )
        if profile_this_cycle:
            with self.model_runner.define_profiler(
                enable_profiler=True,
                profile_save_path=self._profile_path("prefill"),
                active=1,
                skip_first=0,
            ) as profiler:
                next_tokens = self._run_model(cycle_input, True, warm_up)
                profiler.step()
        else:
            next_tokens = self._run_model(cycle_input, True, warm_up)
        self.model_runner.model_output_process(cycle_input, next_tokens)

    def _model_generate_legacy(self, prompts, warm_up=False):
        from executor.core.forward_data_info.forward_data_info import Request

        input_dict = {"requests": [Request(i, prompt) for i, prompt in enumerate(prompts)]}
        for cycle_idx in range(self.prefill_cycles):
            self.prefill_infer_single_cycle(input_dict, cycle_idx, warm_up=warm_up)
        decode_steps = min(2, self.max_new_tokens - 1) if warm_up else self.max_new_tokens - 1
        for _ in range(max(decode_steps, 0)):
            next_tokens = self._run_model(input_dict, False, warm_up)
            self.model_runner.model_output_process(input_dict, next_tokens)
            self._step_decode_profiler()
            self.decode_forwards += 1
        print(f"[{self.model_runner.model_name}] {self.prefill_cycles} prefill cycle(s), "
              f"{self.decode_forwards} decode forwards", flush=True)

    def model_generate(self, prompts, warm_up=False):
        try:
            return self._model_generate_legacy(prompts, warm_up)
        finally:
            self._close_decode_profiler()
