"""Parameters and members that only some torch_npu builds have, each read in the builds' wheels.

A function decorated with `per_build`, or a class whose metaclass is `PerBuildClass`, accepts (and
`inspect.signature` shows) only the parameters of the emulated build (FAKE_TORCH_NPU_BUILD, read
at each call): passing another one raises TypeError as Python does for the real definition. A
class whose metaclass is `PerBuildMembers` has only the build's members.
"""
import inspect

from torch_npu.profiler import _env


def _from(build):
    """`build` and the later ones (by date)."""
    return _env.BUILDS[_env.BUILDS.index(build):]


# definition -> parameter -> the builds that have it (the others have no such parameter).
ONLY_IN = {
    "profile": {
        "custom_trace_id_callback": ("2.7.1.post11", "2.14.0"),
        "execution_trace_observer": ("2.14.0",),
    },
    "tensorboard_trace_handler": {"async_mode": _from("2.5.1")},
    "analyse": {"export_type": _from("2.7.1")},
    "Schedule": {"skip_first_wait": ("2.7.1.post11", "2.14.0")},
    "_ExperimentalConfig": {
        name: _from("2.7.1")
        for name in ("mstx", "host_sys", "mstx_domain_include", "mstx_domain_exclude", "sys_io", "sys_interconnection")
    },
}

# class -> member -> the builds that have it.
MEMBERS_ONLY_IN = {"AiCMetrics": {"MemoryAccess": _from("2.5.1")}}


def accepts(definition, parameter):
    """The emulated build's `definition` has `parameter`."""
    return _env.build() in ONLY_IN[definition].get(parameter, _env.BUILDS)


def has_member(cls_name, member):
    """The emulated build's class `cls_name` has `member`."""
    return _env.build() in MEMBERS_ONLY_IN.get(cls_name, {}).get(member, _env.BUILDS)


class PerBuildMembers(type):
    """Metaclass of a class of constants some of which only some builds have (MEMBERS_ONLY_IN):
    on the others the member is absent (AttributeError, not in `dir`)."""

    def __getattribute__(cls, name):
        if not name.startswith("_") and not has_member(type.__getattribute__(cls, "__name__"), name):
            raise AttributeError(f"type object {cls.__name__!r} has no attribute {name!r}")
        return super().__getattribute__(name)

    def __dir__(cls):
        return [name for name in super().__dir__() if has_member(cls.__name__, name)]

    def values(cls):
        """The values of the build's members."""
        return tuple(v for k, v in vars(cls).items() if not k.startswith("_") and has_member(cls.__name__, k))


def _signature(definition, full):
    kept = [p for p in full.parameters.values() if accepts(definition, p.name)]
    return full.replace(parameters=kept)


def _bound(definition, full, args, kwargs):
    """The arguments bound to the build's signature (TypeError when it has no such parameter),
    as keywords (a positional argument lands where the build's order puts it)."""
    try:
        bound = _signature(definition, full).bind(*args, **kwargs)
    except TypeError as error:
        raise TypeError(f"{definition}() {error}") from None
    return bound.arguments


class _Function:
    """A function whose parameters follow the emulated build."""

    def __init__(self, definition, func):
        self._definition = definition
        self._func = func
        self.__name__ = func.__name__
        self.__qualname__ = func.__qualname__
        self.__doc__ = func.__doc__
        self.__module__ = func.__module__

    @property
    def __signature__(self):
        return _signature(self._definition, inspect.signature(self._func))

    def __call__(self, *args, **kwargs):
        return self._func(**_bound(self._definition, inspect.signature(self._func), args, kwargs))


class PerBuildClass(type):
    """Metaclass of a class whose constructor's parameters follow the emulated build."""

    @property
    def __signature__(cls):
        return _signature(cls.__name__, _init_signature(cls))

    def __call__(cls, *args, **kwargs):
        return super().__call__(**_bound(cls.__name__, _init_signature(cls), args, kwargs))


def _init_signature(cls):
    full = inspect.signature(cls.__init__)
    return full.replace(parameters=list(full.parameters.values())[1:])


def per_build(func):
    """Decorates a function named in ONLY_IN."""
    return _Function(func.__name__, func)
