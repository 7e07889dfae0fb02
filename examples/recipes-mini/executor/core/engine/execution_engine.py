# The offline execution engine: runs batches of requests through the model,
# one prefill forward and then decode forwards until the token budget is spent.
import os

from executor.utils.profiler_context import ProfilerManager


class Batch:
    def __init__(self, requests, is_prefill):
        self.requests = requests
        self.is_prefill = is_prefill


class ExecutionEngine:
    def __init__(self, infer_config, model_runner):
        self.infer_config = infer_config
        self.model_runner = model_runner
        work_dir = os.getenv("WORK_DIR", ".")
        res_path = os.getenv("RES_PATH", "res")
        self.profiler = ProfilerManager(
            infer_config.model_config.enable_profiler,
            os.path.join(work_dir, res_path),
        )

    def forward(self, batch):
        self.profiler.set_status(batch.is_prefill)
        output = self.model_runner.forward(batch)
        self.profiler.step()
        return output

    def forward_afd_ffn(self, batch):
        # Attention-FFN disaggregation: the FFN side runs its own forward.
        self.profiler.set_status(batch.is_prefill)
        output = self.model_runner.forward_ffn(batch)
        self.profiler.step()
        return output

    # ---- offline generation loop -------------------------------------------

    def generate(self, requests):
        """Runs every request to max_new_tokens tokens; returns per-batch stats."""
        batch_size = self.infer_config.batch_size
        stats = []
        for start in range(0, len(requests), batch_size):
            stats.append(self._run_batch(requests[start : start + batch_size]))
        return stats

    def _run_batch(self, requests):
        max_new_tokens = self.infer_config.max_new_tokens
        # One prefill forward produces the first token of every request.
        outputs = self.forward(Batch(requests, is_prefill=True))
        for request, output in zip(requests, outputs):
            request.append(output[:1])
        decode_forwards = 0
        while any(len(r.generated) < max_new_tokens for r in requests):
            decode_forwards += 1
            outputs = self.forward(Batch(requests, is_prefill=False))
            emitted = 1 + accepted_drafts(decode_forwards, self.infer_config.model_config.next_n)
            for request, output in zip(requests, outputs):
                remaining = max_new_tokens - len(request.generated)
                request.append(output[: min(emitted, remaining)])
        return {"requests": len(requests), "prefill_forwards": 1, "decode_forwards": decode_forwards}


def accepted_drafts(decode_forward, next_n):
    """How many MTP draft tokens the `decode_forward`-th decode forward (1-based) accepts.

    The rule is deterministic so runs are reproducible: every fourth decode
    forward rejects all drafts (emits 1 token), the others accept all next_n
    drafts (emit next_n + 1 tokens). Without MTP (next_n == 0) every forward
    emits exactly one token.
    """
    if next_n <= 0 or decode_forward % 4 == 0:
        return 0
    return next_n


class Request:
    def __init__(self, request_id, prompt):
        self.request_id = request_id
        self.tokens = list(prompt)
        self.generated = []

    def append(self, tokens):
        self.tokens.extend(tokens)
        self.generated.extend(tokens)
