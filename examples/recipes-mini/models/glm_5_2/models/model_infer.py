# glm_5_2's generation loop. Each phase gets its own profiler from
# ModelRunner.define_profiler and steps it once per forward:
#   prefill  active=1, skip_first=5, repeat=1; with profiling on, the whole
#            prefill is repeated (10 units) so that the 6th unit is recorded.
#   decode   define_profiler's defaults (skip_first 10, active 10); exactly
#            max_new_tokens decode forwards (the prefill's token is not counted).
import math
import os


class Infer:
    def __init__(self, runner_settings, main_model):
        self.runner_settings = runner_settings
        self.main_model = main_model
        self.prefill_cycles = 1
        self.forwards = {"prefill": 0, "decode": 0}

    def get_prefill_profile_cycle(self, enable_profiler):
        if not enable_profiler:
            return 1
        prefill_profile_cycle = 10
        if self.main_model.prefill_mini_batch_size == 0:
            return prefill_profile_cycle
        if self.prefill_cycles > prefill_profile_cycle:
            return 1
        return math.ceil(prefill_profile_cycle / self.prefill_cycles)

    def get_jump_flag(self, cnt, warm_up):
        # warm-up decodes twice; a real run stops after max_new_tokens decode forwards
        jump_flag_warm = warm_up and cnt >= 2
        jump_flag_oversize = cnt >= self.main_model.max_new_tokens
        return jump_flag_oversize or jump_flag_warm

    def get_inputs(self, prompts):
        from executor.core.forward_data_info.forward_data_info import Request

        return {"requests": [Request(i, prompt) for i, prompt in enumerate(prompts)]}

    def prefill_infer_single_cycle(self, cycle_idx, input_dict, prof, warm_up):
        mini = self.main_model.prefill_mini_batch_size
        requests = input_dict["requests"]
        if mini > 0:
            requests = requests[cycle_idx * mini:(cycle_idx + 1) * mini]
        next_tokens = self.main_model.model_inference({"requests": requests}, True, warm_up)
        prof.step()
        return requests, next_tokens

    def model_generate(self, prompts, warm_up=False):
        input_dict = self.get_inputs(prompts)
        batch_size = len(input_dict["requests"])
        if self.main_model.prefill_mini_batch_size > 0:
            self.prefill_cycles = batch_size // self.main_model.prefill_mini_batch_size
        else:
            self.prefill_cycles = 1
        self.forwards = {"prefill": 0, "decode": 0}

        enable_profiler = self.main_model.enable_profiler and not warm_up
        prefill_prof_cycles = self.get_prefill_profile_cycle(enable_profiler)

        prefill_profiler = self.main_model.define_profiler(
                            enable_profiler=enable_profiler,
                            profile_save_path=os.path.join(self.main_model.res_path, "prefill", "prof"),
                            active=1, skip_first=5, repeat=1)
        with prefill_profiler as prof:
            for _ in range(prefill_prof_cycles):
                results = []
                for cycle_idx in range(self.prefill_cycles):
                    results.append(self.prefill_infer_single_cycle(cycle_idx, input_dict, prof, warm_up))
                    self.forwards["prefill"] += 1
        # keep the last repetition's first tokens
        for requests, next_tokens in results:
            self.main_model.model_output_process({"requests": requests}, next_tokens)

        decode_cnt = 0
        decode_profiler = self.main_model.define_profiler(enable_profiler=enable_profiler,
                                    profile_save_path=os.path.join(self.main_model.res_path, 'decode', 'prof'))
        with decode_profiler as prof:
            while True:
                jump_flag = self.get_jump_flag(decode_cnt, warm_up)
                if jump_flag:
                    break
                next_tokens = self.main_model.model_inference(input_dict, False, warm_up)
                self.main_model.model_output_process(input_dict, next_tokens)
                prof.step()
                decode_cnt += 1
                self.forwards["decode"] += 1

        stage = "warm up" if warm_up else "run"
        print(f"[{self.main_model.model_name}] {stage}: {self.forwards['prefill']} prefill forward(s), "
              f"{self.forwards['decode']} decode forwards, profiler {'on' if enable_profiler else 'off'}",
              flush=True)
