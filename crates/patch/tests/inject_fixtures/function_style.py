"""Functions for each piece: load_model(), prefill(model, ids), decode_step(model, state)."""
import sys

PROMPT = [1, 2, 3]


class TinyModel:
    def __call__(self, tokens):
        return [t + 1 for t in tokens]


def load_model(path="weights.bin"):
    return TinyModel()


def prefill(model, ids):
    return model(ids)


def decode_step(model, state):
    return model(state[-1:])


def main():
    model = load_model()
    ids = [PROMPT[0], len(PROMPT)]
    state = prefill(model, ids)
    for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 8):
        state = decode_step(model, state)
    print(state)


if __name__ == "__main__":
    main()
