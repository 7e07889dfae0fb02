"""Nothing the harness can wire: the model needs a config, the loop does sampling inline."""


def build_model(config):
    return config


def main():
    config = {"layers": 2}
    model = build_model(config)
    cache = {}
    logits = model.get("layers")
    for step in range(4):
        token = logits + step
        logits, cache = model.get(token), cache


if __name__ == "__main__":
    main()
