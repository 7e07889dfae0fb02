"""A stub of torch_npu for npuprof's inject tests: only the profiler, recording what it is asked to do."""
from . import profiler  # noqa: F401
