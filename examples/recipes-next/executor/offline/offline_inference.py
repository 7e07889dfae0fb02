# Offline generation: one batch of scheduler_config.batch_size requests runs
# through the scheduler until every request is finished.
from executor.core.engine.execution_engine import ExecutionEngine
from executor.core.scheduler.scheduler import Scheduler


class OfflineInference:
    def __init__(self, infer_config):
        self.infer_config = infer_config
        self.engine = ExecutionEngine(infer_config)
        self.scheduler = Scheduler(infer_config, mode="offline")
        # Warm-up (graph compilation) runs before the first real batch, outside any profiler.
        self.engine.warm_up()

    def generate(self, prompts):
        """Returns (finished requests, number of prefill batches, number of decode batches)."""
        batch_size = self.infer_config.scheduler_config.batch_size
        request_ids = [self.scheduler.add_request(prompt) for prompt in prompts[:batch_size]]
        # Pad to batch_size with copies of the last prompt.
        while len(request_ids) < batch_size:
            request_ids.append(self.scheduler.add_request(prompts[-1]))
        prefill_batches = decode_batches = 0
        while self.scheduler.has_work():
            prefill = bool(self.scheduler.waiting_queue)
            if not self.scheduler.run_step(self.engine):
                break
            if prefill:
                prefill_batches += 1
            else:
                decode_batches += 1
        finished = [self.scheduler.finished_requests[i] for i in request_ids]
        return finished, prefill_batches, decode_batches
