# The execution engine: runs one batch (encode, prefill or decode) through the model
# worker per forward_batch() call. The scheduler decides what goes in a batch
# and when a request is finished (executor/core/scheduler/scheduler.py).
import os

from executor.core.model_worker.model_worker import ModelWorker, accepted_drafts
from executor.utils.profiler_context import ProfilerManager, ProfilerPhase

# Token ids that end a request (the CPU model's vocabulary has one).
EOS_TOKEN_IDS = frozenset({2})


class ExecutionEngine:
    def __init__(self, infer_config):
        self.infer_config = infer_config
        self.max_new_tokens = infer_config.scheduler_config.max_new_tokens
        self.next_n = infer_config.model_config.next_n
        self.is_online = infer_config.disaggregation_mode in ("PREFILL", "DECODE")
        input_len = infer_config.data_config.input_truncated_len
        if self.is_online:
            self.max_total_len = infer_config.scheduler_config.max_prefill_tokens + self.max_new_tokens
        else:
            # Offline MTP keeps room for every draft token: the KV cache grows with max_new_tokens x (next_n + 1).
            self.max_total_len = input_len + self.max_new_tokens * (self.next_n + 1) + self.next_n
        self.local_rank = int(os.getenv("LOCAL_RANK", "0"))
        self.global_rank = self.local_rank + int(os.getenv("RANK_OFFSET", "0"))
        self.world_size = infer_config.world_size
        enable_afd = infer_config.model_config.custom_params.get("enable_afd", False)
        # With attention-FFN disaggregation the first half of the ranks run the FFN side.
        self.is_afd_ffn_rank = enable_afd and self.global_rank < self.world_size // 2
        self.main_worker = ModelWorker(0 if self.is_afd_ffn_rank else self.next_n)
        self.eos_token_ids = EOS_TOKEN_IDS
        self.decode_forwards = 0

        self.enable_profiler = infer_config.model_config.enable_profiler
        self.output_path = os.path.join(os.getenv("WORK_DIR", "."), os.getenv("RES_PATH", ""))
        self.profiler = ProfilerManager(self.enable_profiler, self.output_path)

    def warm_up(self):
        """One dummy prefill and one dummy decode forward (graph compilation), outside any profiler."""
        from executor.core.forward_data_info.forward_data_info import Batch, Request

        dummy = [Request(-1, [1, 2, 3])]
        self.main_worker.inference(Batch(dummy, is_prefill=True))
        self.main_worker.inference(Batch(dummy, is_prefill=False))

    def encode_batch(self, requests):
        """The multimodal encoder's forward over the requests' media (one profiler step)."""
        self.profiler.set_status(ProfilerPhase.MM_ENCODE)
        embeddings = [[token % 7 for token in request.prompt] for request in requests]
        self.profiler.step()
        return embeddings

    def forward_batch(self, batch):
        """Runs one batch; returns {request_id: new tokens}."""
        if self.is_afd_ffn_rank:
            return self._forward_afd_ffn_batch(batch)

        self.profiler.set_status(ProfilerPhase.PREFILL if batch.is_prefill else ProfilerPhase.DECODE)
        outputs = self.main_worker.inference(batch)
        if batch.is_prefill:
            next_tokens = [output[:1] for output in outputs]
        else:
            self.decode_forwards += 1
            accepted = accepted_drafts(self.decode_forwards, self.next_n)
            # MTP: the main token plus the accepted drafts (the draft forwards run inside this step).
            next_tokens = [output[: accepted + 1] for output in outputs]

        self.profiler.step()

        batch.update_requests_from_batch(next_tokens, eos_token_ids=self.eos_token_ids)
        return {r.request_id: tokens for r, tokens in zip(batch.requests, next_tokens)}

    def _forward_afd_ffn_batch(self, batch):
        self.profiler.set_status(ProfilerPhase.PREFILL if batch.is_prefill else ProfilerPhase.DECODE)
        self.main_worker.inference_ffn(batch)
        # The FFN side produces no tokens of its own; it mirrors the attention side's step count.
        next_tokens = [[0] for _ in batch.requests]
        batch.update_requests_from_batch(next_tokens)
        self.profiler.step()
        return {r.request_id: tokens for r, tokens in zip(batch.requests, next_tokens)}
