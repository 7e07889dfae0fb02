"""A script that runs inference at import time: the harness must not import it."""


class Model:
    def prefill(self, ids):
        return ids

    def decode(self, tokens):
        return tokens


def build_model():
    return Model()


model = build_model()
tokens = model.prefill([1, 2])
for _ in range(3):
    tokens = model.decode(tokens)
print(tokens)
