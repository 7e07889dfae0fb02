"""Shared helpers of the fake torch_npu's tests: import path, samples, a profiled loop."""
import contextlib
import csv
import io
import os
import pathlib
import sys
import tempfile
import unittest

FAKE_ROOT = pathlib.Path(__file__).resolve().parents[1]
REPO_ROOT = FAKE_ROOT.parents[1]
# Real output of torch_npu (headers and profiler_info), vendored: see samples/NOTICE.md.
SAMPLES = pathlib.Path(__file__).resolve().parent / "samples"
MSINSIGHT = SAMPLES / "Ascend-msinsight"
MSTT = SAMPLES / "Ascend-mstt"

if str(FAKE_ROOT) not in sys.path:
    sys.path.insert(0, str(FAKE_ROOT))

import torch_npu  # noqa: E402

_ENV_KEYS = (
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "ASCEND_DEVICE_ID", "FAKE_TORCH_NPU_BUILD", "FAKE_TORCH_NPU_NO_MSPROF",
    "FAKE_TORCH_NPU_BAD_DISK", "FAKE_TORCH_NPU_SLOW_FIRST_STEP",
)


def sample_header(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return next(csv.reader(handle))


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


class FakeTestCase(unittest.TestCase):
    """Gives each test a temp dir and a clean environment (RANK=0, WORLD_SIZE=1)."""

    def setUp(self):
        self._saved = {key: os.environ.get(key) for key in _ENV_KEYS}
        for key in _ENV_KEYS:
            os.environ.pop(key, None)
        os.environ["RANK"] = "0"
        os.environ["WORLD_SIZE"] = "1"
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = pathlib.Path(self._tmp.name)

    def tearDown(self):
        self._tmp.cleanup()
        for key, value in self._saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value

    def profile_loop(self, steps, schedule=None, level=None, aic_metrics=None, stop=True, out="prof",
                     experimental=True, **kwargs):
        """Runs `steps` step() calls under a profiler; returns (stdout, list of run dirs)."""
        p = torch_npu.profiler
        config = None
        if experimental:
            config = p._ExperimentalConfig(
                profiler_level=level or p.ProfilerLevel.Level1,
                aic_metrics=aic_metrics,
            )
        save = self.tmp / out
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            prof = p.profile(
                activities=[p.ProfilerActivity.NPU, p.ProfilerActivity.CPU],
                schedule=schedule,
                on_trace_ready=p.tensorboard_trace_handler(str(save)),
                experimental_config=config,
                **kwargs,
            )
            prof.start()
            for _ in range(steps):
                prof.step()
            if stop:
                prof.stop()
        return buffer.getvalue(), self.run_dirs(save)

    @staticmethod
    def run_dirs(save):
        if not save.exists():
            return []
        return sorted(d for d in save.iterdir() if d.name.endswith("_ascend_pt"))
