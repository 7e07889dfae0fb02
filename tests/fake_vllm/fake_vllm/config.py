"""What the fake reads from its command line and environment: the served model, the address,
the tensor-parallel size, the profiler switch of its era, and the fault to act out."""
import json
import os
from dataclasses import dataclass, field

# The eras of vLLM-Ascend's profiler, oldest first (see README.md): how profiling is switched on,
# which AI Core metrics the worker hard-codes, whether stop waits for the parse.
ERAS = ("env", "profiler-config", "pipe", "async")
DEFAULT_ERA = "async"
FAULTS = ("none", "die", "never-healthy", "ignore-sigterm", "slow-stop", "slow-answers", "setsid-child")

# vLLM's `ProfilerConfig` fields and defaults (vllm/config/profiler.py).
PROFILER_DEFAULTS = {
    "profiler": None,
    "torch_profiler_dir": "",
    "torch_profiler_with_stack": True,
    "torch_profiler_with_flops": False,
    "torch_profiler_use_gzip": True,
    "torch_profiler_record_shapes": False,
    "torch_profiler_with_memory": False,
    "ignore_frontend": False,
    "delay_iterations": 0,
    "max_iterations": 0,
}


class UsageError(Exception):
    """A command line the real `vllm serve` would reject."""


@dataclass
class Profiling:
    """The worker's profiler as this era builds it."""

    directory: str
    with_stack: bool
    with_modules: bool
    with_memory: bool
    aic_metrics: str
    data_simplification: bool
    rank_worker_names: bool
    lazy: bool
    async_parse: bool
    frontend: bool


@dataclass
class Settings:
    model: str
    host: str = "127.0.0.1"
    port: int = 8000
    tensor_parallel_size: int = 1
    era: str = DEFAULT_ERA
    fault: str = "none"
    slow_seconds: float = 2.0
    step_seconds: float = 0.002
    profiler: dict = field(default_factory=dict)
    profiling: Profiling | None = None


def _bool(value):
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def _coerce(key, value):
    default = PROFILER_DEFAULTS[key]
    if isinstance(default, bool):
        return _bool(value)
    if isinstance(default, int):
        return int(value)
    return value


def _profiler_option(config, arg, rest):
    """`--profiler-config JSON`, `--profiler-config=JSON`, `--profiler-config.KEY=VALUE` or
    `--profiler-config.KEY VALUE`; returns how many of `rest` it took."""
    name, eq, value = arg.partition("=")
    taken = 0
    if not eq:
        if not rest:
            raise UsageError(f"argument {name}: expected one argument")
        value, taken = rest[0], 1
    if name == "--profiler-config":
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError as error:
            raise UsageError(f"--profiler-config: invalid JSON: {error}") from error
        if not isinstance(parsed, dict):
            raise UsageError("--profiler-config: expected a JSON object")
        items = parsed.items()
    else:
        items = [(name.removeprefix("--profiler-config."), value)]
    for key, item in items:
        if key not in PROFILER_DEFAULTS:
            raise UsageError(f"--profiler-config: unknown field {key!r}")
        config[key] = _coerce(key, item)
    return taken


def parse(argv, environ=None):
    """The settings of `serve MODEL [options]`."""
    environ = os.environ if environ is None else environ
    if not argv or argv[0] != "serve":
        raise UsageError("usage: vllm serve MODEL [options]")
    args = list(argv[1:])
    if not args or args[0].startswith("-"):
        raise UsageError("vllm serve: the model is required")
    settings = Settings(model=args.pop(0))
    profiler = dict(PROFILER_DEFAULTS)
    given = False
    while args:
        arg = args.pop(0)
        name, eq, value = arg.partition("=")
        if name.startswith("--profiler-config"):
            taken = _profiler_option(profiler, arg, args)
            del args[:taken]
            given = True
            continue
        if name in ("--host", "--port", "--tensor-parallel-size", "-tp", "--served-model-name"):
            if not eq:
                if not args:
                    raise UsageError(f"argument {name}: expected one argument")
                value = args.pop(0)
            if name == "--host":
                settings.host = value
            elif name == "--port":
                settings.port = int(value)
            elif name == "--served-model-name":
                settings.model = value
            else:
                settings.tensor_parallel_size = int(value)
                if settings.tensor_parallel_size < 1:
                    raise UsageError("--tensor-parallel-size must be at least 1")
            continue
        raise UsageError(f"unrecognized arguments: {arg}")
    settings.era = environ.get("FAKE_VLLM_ERA", DEFAULT_ERA)
    if settings.era not in ERAS:
        raise UsageError(f"FAKE_VLLM_ERA must be one of {', '.join(ERAS)}")
    settings.fault = environ.get("FAKE_VLLM_FAULT", "none")
    if settings.fault not in FAULTS:
        raise UsageError(f"FAKE_VLLM_FAULT must be one of {', '.join(FAULTS)}")
    settings.slow_seconds = float(environ.get("FAKE_VLLM_SLOW_SECONDS", "2"))
    if settings.era == "env":
        if given:
            raise UsageError("unrecognized arguments: --profiler-config (this vLLM reads the environment)")
        settings.profiling = _env_profiling(environ)
    else:
        settings.profiler = profiler
        settings.profiling = _config_profiling(profiler, settings.era)
    return settings


def _env_profiling(environ):
    """The environment era (vllm-ascend `worker_v1.py` before PR 5928): on when
    VLLM_TORCH_PROFILER_DIR is set; vLLM's VLLM_TORCH_PROFILER_WITH_STACK is on unless `0`."""
    directory = environ.get("VLLM_TORCH_PROFILER_DIR")
    if not directory:
        return None
    return Profiling(
        directory=os.path.abspath(os.path.expanduser(directory)),
        with_stack=environ.get("VLLM_TORCH_PROFILER_WITH_STACK", "1") != "0",
        with_modules=False,
        with_memory=environ.get("VLLM_TORCH_PROFILER_WITH_PROFILE_MEMORY", "0") != "0",
        aic_metrics="AiCoreNone",
        data_simplification=False,
        rank_worker_names=False,
        lazy=False,
        async_parse=False,
        frontend=False,
    )


def _config_profiling(profiler, era):
    """The profiler-config era (PR 5928 on; rank worker names and lazy creation from PR 6968;
    PipeUtilization from PR 10778; async parse from 7371232a)."""
    if profiler["profiler"] is None:
        return None
    if profiler["profiler"] != "torch":
        raise UsageError(f"Unrecognized profiler: {profiler['profiler']}")
    if not profiler["torch_profiler_dir"]:
        raise UsageError("torch_profiler_dir cannot be empty.")
    return Profiling(
        directory=os.path.abspath(os.path.expanduser(profiler["torch_profiler_dir"])),
        with_stack=False,
        with_modules=profiler["torch_profiler_with_stack"],
        with_memory=profiler["torch_profiler_with_memory"],
        aic_metrics="AiCoreNone" if era == "profiler-config" else "PipeUtilization",
        data_simplification=True,
        rank_worker_names=True,
        lazy=True,
        async_parse=era == "async",
        frontend=not profiler["ignore_frontend"],
    )
