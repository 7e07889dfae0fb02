# Model runner: owns the model and runs one forward per batch.
#
# define_profiler() is an older helper kept for the online server; the offline
# engine profiles through executor.utils.profiler_context.ProfilerManager.
import torch_npu


def define_profiler(enable_profiler=False, profile_save_path="prof", active=10, repeat=1, skip_first=10):
    if not enable_profiler:
        return None
    return torch_npu.profiler.profile(
        activities=[torch_npu.profiler.ProfilerActivity.NPU, torch_npu.profiler.ProfilerActivity.CPU],
        schedule=torch_npu.profiler.schedule(wait=0, warmup=0, active=active, repeat=repeat, skip_first=skip_first),
        on_trace_ready=torch_npu.profiler.tensorboard_trace_handler(profile_save_path),
    )


VOCAB_SIZE = 32000
HIDDEN_SIZE = 64


class ModelRunner:
    """A tiny CPU "model": plain Python arithmetic standing in for the network.

    A forward maps each request's token history to its next tokens. With MTP
    (next_n > 0) a decode forward also proposes next_n draft tokens; the engine
    decides how many of them are accepted.
    """

    def __init__(self, infer_config):
        self.infer_config = infer_config
        self.next_n = infer_config.model_config.next_n

    def forward(self, batch):
        outputs = []
        for request in batch.requests:
            hidden = self._attention(request.tokens)
            hidden = self.forward_ffn_hidden(hidden)
            token = self._sample(hidden, len(request.tokens))
            drafts = [] if batch.is_prefill else self._drafts(hidden, token)
            outputs.append([token] + drafts)
        return outputs

    def forward_ffn(self, batch):
        # The FFN half of an attention-FFN disaggregated forward.
        return [self.forward_ffn_hidden(self._attention(r.tokens)) for r in batch.requests]

    def forward_ffn_hidden(self, hidden):
        return [(3 * h * h + 7 * h + 1) % 65521 for h in hidden]

    @staticmethod
    def _attention(tokens):
        window = tokens[-HIDDEN_SIZE:]
        acc = 0
        hidden = []
        for index in range(HIDDEN_SIZE):
            acc = (acc * 31 + window[index % len(window)] + index) % 65521
            hidden.append(acc)
        return hidden

    @staticmethod
    def _sample(hidden, position):
        return (sum(hidden) + position) % VOCAB_SIZE

    def _drafts(self, hidden, token):
        drafts = []
        for index in range(self.next_n):
            token = (token * 1103515245 + hidden[index % HIDDEN_SIZE]) % VOCAB_SIZE
            drafts.append(token)
        return drafts
