"""A plain inference script with no profiler: build a model, prefill, decode.

    python3 infer.py [--batch-size N] [--max-new-tokens N]

Uses torch when it is installed; otherwise a tiny pure-Python model with the
same interface, so it runs anywhere.
"""
import argparse
import time

try:
    import torch
except ImportError:
    torch = None

VOCAB_SIZE = 1000
HIDDEN_SIZE = 32


class TorchModel:
    """A two-layer toy network on torch tensors."""

    def __init__(self):
        generator = torch.Generator().manual_seed(0)
        self.embedding = torch.randn(VOCAB_SIZE, HIDDEN_SIZE, generator=generator)
        self.weight = torch.randn(HIDDEN_SIZE, HIDDEN_SIZE, generator=generator)
        self.head = torch.randn(HIDDEN_SIZE, VOCAB_SIZE, generator=generator)

    def prefill(self, input_ids):
        hidden = self.embedding[torch.tensor(input_ids)].mean(dim=1)
        return self._next(hidden)

    def decode(self, last_tokens):
        hidden = self.embedding[torch.tensor(last_tokens)]
        return self._next(hidden)

    def _next(self, hidden):
        hidden = torch.tanh(hidden @ self.weight)
        return (hidden @ self.head).argmax(dim=-1).tolist()


class PythonModel:
    """The same interface in plain Python arithmetic."""

    def prefill(self, input_ids):
        return [sum(ids) * 31 % VOCAB_SIZE for ids in input_ids]

    def decode(self, last_tokens):
        return [(token * 1103515245 + 12345) % VOCAB_SIZE for token in last_tokens]


def build_model():
    return TorchModel() if torch is not None else PythonModel()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--prompt-len", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    args = parser.parse_args()

    model = build_model()
    input_ids = [[(b * 7 + i) % VOCAB_SIZE for i in range(args.prompt_len)] for b in range(args.batch_size)]

    started = time.monotonic()
    tokens = model.prefill(input_ids)
    outputs = [[token] for token in tokens]
    for step in range(args.max_new_tokens - 1):
        tokens = model.decode(tokens)
        for output, token in zip(outputs, tokens):
            output.append(token)
    elapsed = time.monotonic() - started

    print(f"generated {len(outputs[0])} tokens for {len(outputs)} requests in {elapsed:.3f}s")
    print("first request:", outputs[0][:8], "...")


if __name__ == "__main__":
    main()
