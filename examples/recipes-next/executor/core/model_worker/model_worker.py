# The model worker: a tiny CPU "model" made of plain Python arithmetic.
#
# A forward maps each request's token history to its next token. With MTP
# (next_n > 0) a decode forward also yields next_n draft tokens; how many of
# them are accepted is decided by accepted_drafts() below.
VOCAB_SIZE = 32000
HIDDEN_SIZE = 64


class ModelWorker:
    def __init__(self, next_n):
        self.next_n = next_n

    def inference(self, batch):
        outputs = []
        for request in batch.requests:
            hidden = self.attention(request.tokens())
            hidden = self.ffn(hidden)
            token = (sum(hidden) + len(request.tokens())) % VOCAB_SIZE
            drafts = [] if batch.is_prefill else self._drafts(hidden, token)
            outputs.append([token] + drafts)
        return outputs

    def inference_ffn(self, batch):
        # The FFN half of an attention-FFN disaggregated (AFD) forward.
        return [self.ffn(self.attention(r.tokens())) for r in batch.requests]

    @staticmethod
    def ffn(hidden):
        return [(3 * h * h + 7 * h + 1) % 65521 for h in hidden]

    @staticmethod
    def attention(tokens):
        window = tokens[-HIDDEN_SIZE:]
        acc = 0
        hidden = []
        for index in range(HIDDEN_SIZE):
            acc = (acc * 31 + window[index % len(window)] + index) % 65521
            hidden.append(acc)
        return hidden

    def _drafts(self, hidden, token):
        drafts = []
        for index in range(self.next_n):
            token = (token * 1103515245 + hidden[index % HIDDEN_SIZE]) % VOCAB_SIZE
            drafts.append(token)
        return drafts


def accepted_drafts(decode_forward, next_n):
    """How many MTP drafts the `decode_forward`-th decode forward (1-based) accepts.

    Deterministic so runs are reproducible: every fourth decode forward rejects
    all drafts (emits 1 token), the others accept all next_n (emit next_n + 1).
    """
    if next_n <= 0 or decode_forward % 4 == 0:
        return 0
    return next_n
