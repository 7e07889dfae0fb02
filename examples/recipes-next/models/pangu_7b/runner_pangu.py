# pangu_7b's runner: the legacy ModelRunner's own generation loop
# (ModelRunner.model_generate: one prefill forward, then max_new_tokens - 1
# decode forwards; profiles in $RES_PATH/prof/{prefill,decode}).
from executor.core.forward_data_info.forward_data_info import Request
from executor.model_runner import ModelRunner


class PanguRunner(ModelRunner):
    def model_generate(self, prompts, warm_up=False):
        input_dict = {"requests": [Request(i, prompt) for i, prompt in enumerate(prompts)]}
        decode_forwards = super().model_generate(input_dict, warm_up=warm_up)
        stage = "warm up" if warm_up else "run"
        print(f"[{self.model_name}] {stage}: 1 prefill forward, {decode_forwards} decode forwards", flush=True)
