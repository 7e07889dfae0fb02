"""A fake `torch_npu` for tests: the part of `torch_npu.profiler` that inference code uses.

It needs neither torch nor an NPU. It writes run directories in torch_npu's real
formats and reproduces its failure modes on demand. See README.md next to this
package (and `torch_npu.profiler`'s docstring) for the environment variables.
"""
from torch_npu.profiler import _env
from torch_npu import profiler  # noqa: F401 - exposes torch_npu.profiler

__version__ = _env.build()
