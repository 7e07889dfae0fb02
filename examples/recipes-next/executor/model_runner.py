# The legacy model runner, the base class of the models that bring their own
# infer.py (family B: glm_5_2 here). The shared engine does not use it.
#
# Settings come straight from the raw YAML: top-level model_name and exe_mode,
# model_config.enable_profiler, data_config.max_new_tokens (default 32).
# Profiles are written under $RES_PATH, relative to the working directory.
import os

import torch_npu


class FakeContextManager:
    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        pass

    @staticmethod
    def step():
        return


class ModelRunner:
    def __init__(self, runner_settings):
        self.runner_settings = runner_settings
        self.model_name = runner_settings.get("model_name", "default_model_name")
        self.input_max_len = runner_settings.get("data_config").get("input_max_len", 1024)
        self.max_new_tokens = runner_settings.get("data_config").get("max_new_tokens", 32)
        self.batch_size = runner_settings.get("data_config").get("batch_size", 16)
        self.local_rank = int(os.getenv("LOCAL_RANK", "0"))
        self.rank_offset = int(os.getenv("RANK_OFFSET", "0"))
        self.global_rank = self.local_rank + self.rank_offset
        self.world_size = int(os.getenv("WORLD_SIZE", "1"))
        self.res_path = os.getenv("RES_PATH", "./")
        self.enable_profiler = runner_settings.get("model_config").get("enable_profiler", False)
        self.enable_prefill_profiler = self.enable_profiler
        self.enable_decode_profiler = self.enable_profiler
        self.execute_mode = runner_settings.get("exe_mode", "ge_graph")
        self.profiler = FakeContextManager()
        self.model = None

    @staticmethod
    def define_profiler(enable_profiler=False, profile_save_path="prof", active=10, repeat=1, skip_first=10):
        if enable_profiler:
            os.makedirs(profile_save_path, exist_ok=True)
            experimental_config = torch_npu.profiler._ExperimentalConfig(
                profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
                aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization
            )
            profiler = torch_npu.profiler.profile(
                activities=[
                    torch_npu.profiler.ProfilerActivity.NPU,
                    torch_npu.profiler.ProfilerActivity.CPU,
                ],
                with_stack=False,
                record_shapes=False,
                profile_memory=False,
                experimental_config=experimental_config,
                schedule=torch_npu.profiler.schedule(
                    wait=0,
                    warmup=0,
                    active=active,
                    repeat=repeat,
                    skip_first=skip_first
                ),
                on_trace_ready=torch_npu.profiler.tensorboard_trace_handler(profile_save_path)
            )
        else:
            profiler = FakeContextManager()

        return profiler

    def init_model(self):
        from executor.core.model_worker.model_worker import ModelWorker

        self.model = ModelWorker(next_n=0)

    def model_inference(self, input_dict, is_prefill, warm_up=False):
        from executor.core.forward_data_info.forward_data_info import Batch

        outputs = self.model.inference(Batch(input_dict["requests"], is_prefill=is_prefill))
        return [output[:1] for output in outputs]

    def model_generate(self, input_dict, warm_up=False):
        """The base loop: one prefill forward, then decode until max_new_tokens tokens.

        The prefill's token counts, so this loop makes max_new_tokens - 1 decode forwards.
        """
        cnt = 0
        enable_profiler = self.enable_prefill_profiler and not warm_up
        self.profiler = self.define_profiler(
            enable_profiler=enable_profiler,
            profile_save_path=os.path.join(self.res_path, "prof", "prefill"),
            active=1, skip_first=0, repeat=1)
        with self.profiler:
            self.model_output_process(input_dict, self.model_inference(input_dict, True, warm_up))
            self.profiler.step()
            cnt += 1
        enable_profiler = self.enable_decode_profiler and not warm_up
        self.profiler = self.define_profiler(
            enable_profiler=enable_profiler,
            profile_save_path=os.path.join(self.res_path, "prof", "decode"))
        decode_forwards = 0
        with self.profiler:
            while True:
                if self.get_jump_flag(cnt, warm_up):
                    break
                self.model_output_process(input_dict, self.model_inference(input_dict, False, warm_up))
                self.profiler.step()
                cnt += 1
                decode_forwards += 1
        return decode_forwards

    def get_jump_flag(self, cnt, warm_up):
        # Warm-up decodes only twice; a real run stops at max_new_tokens.
        return cnt >= self.max_new_tokens or (warm_up and cnt >= 2)

    @staticmethod
    def model_output_process(input_dict, next_tokens):
        for request, tokens in zip(input_dict["requests"], next_tokens):
            request.output_id_list.extend(tokens)
