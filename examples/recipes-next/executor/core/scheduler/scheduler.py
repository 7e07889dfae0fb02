# The scheduler: assembles prefill and decode batches and decides when a
# request is finished.
#
# Stop rule (the one that sets the profiler's step budget):
#   offline  A request finishes when its decode-step count reaches
#            scheduler_config.max_new_tokens. EOS and MTP do not stop it early:
#            every request makes exactly max_new_tokens decode forwards (the
#            prefill's first token does not count), whatever next_n is. Extra
#            tokens are dropped afterwards through valid_output_len.
#   online   A request finishes on EOS or once it holds max_new_tokens tokens
#            (the prefill's token included), so MTP shortens the decode.
from collections import deque

from executor.core.forward_data_info.forward_data_info import Batch, Request


class Scheduler:
    def __init__(self, infer_config, mode="offline"):
        self.config = infer_config.scheduler_config
        self.mode = mode
        self.waiting_queue = deque()
        self.running_requests = {}
        self.finished_requests = {}
        self._next_id = 0

    def add_request(self, prompt):
        request = Request(self._next_id, prompt)
        self._next_id += 1
        self.waiting_queue.append(request)
        return request.request_id

    def add_prefilled_request(self, request):
        """Online decode role: a request whose prefill ran on another node (its KV arrived)."""
        request.is_prefill_done = True
        self.running_requests[request.request_id] = request

    def has_work(self):
        return bool(self.waiting_queue or self.running_requests)

    def run_step(self, engine, phase=None):
        """Schedules and runs one batch; returns False when nothing real ran."""
        batch = self._schedule_batch(phase)
        if batch is None or batch.is_empty():
            return False
        engine.forward_batch(batch)
        if batch.is_dummy:
            return False
        self._process_batch_output(batch)
        return True

    def _schedule_batch(self, phase):
        if phase in ("prefill", "decode"):
            batch = self._schedule_prefill_batch() if phase == "prefill" else self._schedule_decode_batch()
            if batch is not None:
                return batch
            # A forced phase with no local work still runs a dummy batch (keeps ranks in step).
            return Batch([Request(-1, [1])], is_prefill=(phase == "prefill"), is_dummy=True)
        if phase is not None:
            raise ValueError(f"unsupported phase {phase!r}")
        # Offline: prefill first, then decode.
        if self.waiting_queue:
            return self._schedule_prefill_batch()
        if self.running_requests:
            return self._schedule_decode_batch()
        return None

    def _schedule_prefill_batch(self):
        """The queue head and whatever follows it within max_prefill_tokens."""
        if not self.waiting_queue:
            return None
        selected = []
        total = 0
        while self.waiting_queue:
            request = self.waiting_queue[0]
            if selected and total + request.prompt_tokens > self.config.max_prefill_tokens:
                break
            selected.append(self.waiting_queue.popleft())
            total += request.prompt_tokens
        return Batch(selected, is_prefill=True)

    def _schedule_decode_batch(self):
        running = list(self.running_requests.values())[: self.config.batch_size]
        if not running:
            return None
        return Batch(running, is_prefill=False)

    def _process_batch_output(self, batch):
        for request in batch.requests:
            if batch.is_prefill:
                request.is_prefill_done = True
                self._on_prefill_complete(request)
            elif self._should_finish(request):
                request.is_finished = True
                self.running_requests.pop(request.request_id, None)
                self.finished_requests[request.request_id] = request

    def _on_prefill_complete(self, request):
        self.running_requests[request.request_id] = request

    def _should_finish(self, request):
        if self.mode == "offline":
            request.decode_step_count += 1
            if request.valid_output_len is not None:
                return request.decode_step_count >= self.config.max_new_tokens

        finish = False
        output_len = len(request.output_id_list)
        if request.eos_output_len is not None:
            request.finish_reason = "stop"
            if self.mode == "offline":
                request.valid_output_len = request.eos_output_len
            else:
                request.output_id_list = request.output_id_list[: request.eos_output_len]
                output_len = len(request.output_id_list)
            finish = True
        if not finish and output_len >= self.config.max_new_tokens:
            request.finish_reason = "length"
            finish = True

        if self.mode == "offline" and request.finish_reason is not None:
            if request.valid_output_len is None:
                request.valid_output_len = output_len
            # Offline finishes on the decode-step count, never earlier.
            finish = request.decode_step_count >= self.config.max_new_tokens
        return finish
