# Loads a run configuration (models/<model>/config/<file>.yaml).
#
# PyYAML is used when it is installed. Otherwise a small parser handles the
# subset the run configurations use: nested mappings by indentation, plain
# and quoted scalars, inline comments, True/False, null, ints, floats and
# flow lists such as [480, 832]. Anything else (block sequences, anchors,
# multi-line strings) is rejected with the file and line number.
import re


class ConfigError(Exception):
    """A configuration file that cannot be read."""


_INT = re.compile(r"^[-+]?[0-9]+$")
_FLOAT = re.compile(r"^[-+]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][-+]?[0-9]+)?$")


def load_config(path):
    """Returns the mapping stored in the YAML file at `path`."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    try:
        import yaml  # noqa: PLC0415 - optional dependency
    except ImportError:
        return parse_config(text, path)
    loaded = yaml.safe_load(text)
    return loaded if loaded is not None else {}


def parse_config(text, path="<config>"):
    """Parses the supported YAML subset into nested dicts."""
    root = {}
    # Stack of (indent, mapping); the root mapping lives at indent 0.
    stack = [(0, root)]
    pending = None  # (indent, key, parent) of a "key:" line awaiting a block
    for number, raw_line in enumerate(text.splitlines(), start=1):
        line = _strip_comment(raw_line, path, number).rstrip()
        if not line.strip():
            continue
        if "\t" in line[: len(line) - len(line.lstrip())]:
            raise ConfigError(f"{path}:{number}: tabs are not allowed in indentation")
        indent = len(line) - len(line.lstrip(" "))
        content = line.strip()
        if content.startswith("- ") or content == "-":
            raise ConfigError(f"{path}:{number}: block sequences are not supported; use [a, b]")
        if pending is not None:
            pending_indent, key, parent = pending
            pending = None
            if indent > pending_indent:
                child = {}
                parent[key] = child
                stack.append((indent, child))
            else:
                parent[key] = None
        while len(stack) > 1 and indent < stack[-1][0]:
            stack.pop()
        if indent != stack[-1][0]:
            raise ConfigError(f"{path}:{number}: inconsistent indentation")
        mapping = stack[-1][1]
        key, sep, rest = content.partition(":")
        if not sep or not key or (rest and not rest.startswith(" ")):
            raise ConfigError(f"{path}:{number}: expected `key: value`, found {content!r}")
        key = _scalar(key.strip(), path, number)
        rest = rest.strip()
        if key in mapping:
            raise ConfigError(f"{path}:{number}: duplicate key {key!r}")
        if rest:
            mapping[key] = _scalar(rest, path, number)
        else:
            pending = (indent, key, mapping)
    if pending is not None:
        pending[2][pending[1]] = None
    return root


def _strip_comment(line, path, number):
    quote = None
    for index, char in enumerate(line):
        if quote:
            if char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1] in " \t"):
            return line[:index]
    if quote:
        raise ConfigError(f"{path}:{number}: unterminated quoted string")
    return line


def _scalar(text, path, number):
    if text.startswith("[") and text.endswith("]"):
        return [_scalar(item, path, number) for item in _split_flow(text[1:-1], path, number)]
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    if text[0] in "[{&*!|>%@`":
        raise ConfigError(f"{path}:{number}: unsupported YAML value {text!r}")
    if text in ("True", "true", "TRUE"):
        return True
    if text in ("False", "false", "FALSE"):
        return False
    if text in ("null", "Null", "NULL", "~"):
        return None
    if _INT.match(text):
        return int(text)
    if _FLOAT.match(text):
        return float(text)
    return text


def _split_flow(text, path, number):
    items, depth, quote, start = [], 0, None, 0
    for index, char in enumerate(text):
        if quote:
            if char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif char == "," and depth == 0:
            items.append(text[start:index].strip())
            start = index + 1
    last = text[start:].strip()
    if last:
        items.append(last)
    if any(not item for item in items):
        raise ConfigError(f"{path}:{number}: empty item in flow list")
    return items
