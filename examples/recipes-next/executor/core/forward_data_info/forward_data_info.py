# Requests and batches that flow between the scheduler and the execution engine.


class Request:
    def __init__(self, request_id, prompt):
        self.request_id = request_id
        self.input_ids = list(prompt)
        self.prompt_tokens = len(prompt)
        # Every token the engine produced, the prefill's first token included.
        self.output_id_list = []
        # Offline: decode forwards this request took part in.
        self.decode_step_count = 0
        # Offline: how many of output_id_list are kept (set once the request is done by length or EOS).
        self.valid_output_len = None
        self.eos_output_len = None
        self.finish_reason = None
        self.is_prefill_done = False
        self.is_finished = False

    def tokens(self):
        return self.input_ids + self.output_id_list


class Batch:
    def __init__(self, requests, is_prefill, is_dummy=False):
        self.requests = requests
        self.is_prefill = is_prefill
        self.is_dummy = is_dummy

    def is_empty(self):
        return not self.requests

    def update_requests_from_batch(self, next_tokens, eos_token_ids=()):
        """Appends each request's new tokens; remembers where the first EOS fell."""
        for request, tokens in zip(self.requests, next_tokens):
            old_len = len(request.output_id_list)
            request.output_id_list.extend(tokens)
            if request.eos_output_len is None:
                for index, token in enumerate(tokens):
                    if token in eos_token_ids:
                        request.eos_output_len = old_len + index + 1
                        break
