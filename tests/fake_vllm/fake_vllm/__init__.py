"""A vLLM-Ascend-like OpenAI server for npuprof's tests: the endpoints, the profiler switches
and the per-rank output of the real one, running under the fake torch_npu (see README.md)."""
