//! Miniature vLLM-Ascend checkouts of the two config styles, in our own minimal Python: the real
//! file paths and the structural facts of each version (which setting the worker reads, the
//! hard-coded level and metrics, which torch_npu argument the stack setting reaches), no
//! upstream code.

use std::fs;
use std::path::Path;

/// Writes `text` at `rel` under `root`, creating its directories.
pub fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().expect("parent")).expect("create dir");
    fs::write(path, text).expect("write");
}

/// The package directory both layouts share.
pub fn package(root: &Path) {
    write(
        root,
        "vllm_ascend/__init__.py",
        "def register():\n    return \"vllm_ascend.platform.NPUPlatform\"\n",
    );
    write(
        root,
        "vllm_ascend/platform.py",
        "class NPUPlatform:\n    device_name = \"npu\"\n",
    );
}

/// An environment-era checkout (like v0.11.0): the worker reads vLLM's environment variables
/// and hard-codes Level1 + AiCoreNone; the stack variable reaches `with_stack`.
pub fn env_era(root: &Path) {
    package(root);
    write(
        root,
        "setup.py",
        "from setuptools import setup\n\nsetup(\n    name=\"vllm_ascend\",\n    entry_points={\"vllm.platform_plugins\": [\"ascend = vllm_ascend:register\"]},\n)\n",
    );
    write(
        root,
        "vllm_ascend/worker/worker_v1.py",
        r#"import torch_npu
import vllm.envs as envs


class NPUWorker:
    def __init__(self):
        self.profiler = self._make_profiler()

    def profile(self, is_start=True):
        if self.profiler is None:
            raise RuntimeError("Profiler is not enabled.")
        if is_start:
            self.profiler.start()
        else:
            self.profiler.stop()

    def _make_profiler(self):
        if not envs.VLLM_TORCH_PROFILER_DIR:
            return None
        cfg = torch_npu.profiler._ExperimentalConfig(
            profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
            aic_metrics=torch_npu.profiler.AiCMetrics.AiCoreNone,
        )
        return torch_npu.profiler.profile(
            activities=[torch_npu.profiler.ProfilerActivity.NPU],
            with_stack=envs.VLLM_TORCH_PROFILER_WITH_STACK,
            experimental_config=cfg,
            on_trace_ready=torch_npu.profiler.tensorboard_trace_handler(envs.VLLM_TORCH_PROFILER_DIR),
        )
"#,
    );
}

/// A profiler-config-era checkout (like v0.23.0): a wrapper builds the profiler from
/// `vllm_config.profiler_config` with Level1 + PipeUtilization, the stack setting reaches
/// `with_modules`, and each rank's run directory is named by its rank suffix.
pub fn profiler_config_era(root: &Path) {
    package(root);
    write(
        root,
        "setup.py",
        "from setuptools import setup\n\nsetup(\n    name=\"vllm_ascend\",\n    entry_points={\"vllm.platform_plugins\": [\"ascend = vllm_ascend:register\"]},\n)\n",
    );
    write(
        root,
        "vllm_ascend/profiler/torch_npu_profiler.py",
        r#"import torch_npu


class NPUProfilerWrapper:
    def __init__(self, profiler_config, trace_name):
        cfg = torch_npu.profiler._ExperimentalConfig(
            profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
            aic_metrics=torch_npu.profiler.AiCMetrics.PipeUtilization,
        )
        self.profiler = torch_npu.profiler.profile(
            activities=[torch_npu.profiler.ProfilerActivity.NPU],
            with_stack=False,
            with_modules=profiler_config.torch_profiler_with_stack,
            experimental_config=cfg,
            on_trace_ready=torch_npu.profiler.tensorboard_trace_handler(
                profiler_config.torch_profiler_dir,
                worker_name=trace_name,
            ),
        )
"#,
    );
    write(
        root,
        "vllm_ascend/worker/worker.py",
        r#"from vllm_ascend.profiler.torch_npu_profiler import NPUProfilerWrapper


class NPUWorker:
    def __init__(self, vllm_config):
        self.profiler_config = vllm_config.profiler_config
        self.profiler = None

    def profile(self, is_start=True):
        if self.profiler_config is None:
            raise RuntimeError("Profiling is not enabled.")
        if is_start:
            if self.profiler is None:
                self.profiler = NPUProfilerWrapper(self.profiler_config, "rank0")
            self.profiler.profiler.start()
        elif self.profiler is not None:
            self.profiler.profiler.stop()
"#,
    );
}
