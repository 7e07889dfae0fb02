//! Miniature SGLang sources of the two versions that differ for profiling, in our own minimal
//! Python: the real file paths, the start request's fields the scheduler reads, and whether the
//! profiler gets an experimental config (PR #24835). No upstream code.

use std::path::Path;

use super::vllm_checkout::write;

/// The package files route recognises, under `root/<prefix>`.
fn package(root: &Path, prefix: &str) {
    write(root, &format!("{prefix}sglang/__init__.py"), "");
    write(
        root,
        &format!("{prefix}sglang/launch_server.py"),
        "def main():\n    pass\n",
    );
}

/// A checkout like 0.5.23: the package below `python/`, the scheduler's profiler manager
/// building an experimental config (Level1 + PipeUtilization).
pub fn checkout_with_experimental_config(root: &Path) {
    package(root, "python/");
    write(
        root,
        "python/pyproject.toml",
        "[project]\nname = \"sglang\"\nversion = \"0.5.23\"\n",
    );
    write(
        root,
        "python/sglang/srt/managers/scheduler_components/profiler_manager.py",
        r#"import torch_npu


class SchedulerProfilerManager:
    def profile(self, recv_req):
        self.output_dir = recv_req.output_dir
        self.torch_profiler = torch_npu.profiler.profile(
            with_stack=recv_req.with_stack if recv_req.with_stack is not None else True,
            on_trace_ready=torch_npu.profiler.tensorboard_trace_handler(self.output_dir),
            experimental_config=torch_npu.profiler._ExperimentalConfig(
                profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
                aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization,
            ),
        )
"#,
    );
}

/// An installed package like 0.5.10: the profiler mixin, no experimental config (torch_npu's
/// defaults).
pub fn installed_without_experimental_config(root: &Path) {
    package(root, "");
    write(root, "sglang-0.5.10.dist-info/METADATA", "Name: sglang\n");
    write(
        root,
        "sglang/srt/managers/scheduler_profiler_mixin.py",
        r#"import torch_npu


class SchedulerProfilerMixin:
    def profile(self, recv_req):
        self.output_dir = recv_req.output_dir
        self.torch_profiler = torch_npu.profiler.profile(
            with_stack=recv_req.with_stack if recv_req.with_stack is not None else True,
            on_trace_ready=torch_npu.profiler.tensorboard_trace_handler(self.output_dir),
        )
"#,
    );
}
