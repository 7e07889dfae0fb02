"""Module constants bound by one tuple assignment: the prefill input uses both."""
import sys

PROMPT, EXTRA = [1, 2, 3], 4


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
    ids = [PROMPT[0], EXTRA]
    state = prefill(model, ids)
    for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 8):
        state = decode_step(model, state)
    print(state)


if __name__ == "__main__":
    main()
