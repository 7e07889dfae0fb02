"""End-to-end runs of every model of examples/recipes-mini under the fake torch_npu.

Each test runs a model the way its launcher does (on a private copy of the example)
and checks the facts the example must tell truthfully: where the results land, how
many forwards each phase makes and which steps the profiler records.
"""
import csv
import datetime
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

from support import FAKE_ROOT, REPO_ROOT

EXAMPLE = REPO_ROOT / "examples" / "recipes-mini"
_CLEAN_ENV = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "RES_PATH", "WORK_DIR", "YAML_FILE_NAME", "NODE_RANK")


def recorded_steps(run_dir):
    """The `Step` column of a run directory's step_trace_time.csv."""
    with open(run_dir / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv", newline="", encoding="utf-8") as f:
        return sorted(int(row["Step"]) for row in csv.DictReader(f))


def run_dirs(directory):
    if not directory.is_dir():
        return []
    return sorted(d for d in directory.iterdir() if d.name.endswith("_ascend_pt"))


class ExampleTestCase(unittest.TestCase):
    """A private copy of the example per test; runs its launchers under the fake torch_npu."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.repo = pathlib.Path(self._tmp.name) / "recipes-mini"
        shutil.copytree(EXAMPLE, self.repo, ignore=shutil.ignore_patterns("res", "__pycache__", "prof"))
        self.date = datetime.date.today().strftime("%Y%m%d")

    def tearDown(self):
        self._tmp.cleanup()

    def enable(self, relative, old, new):
        path = self.repo / relative
        text = path.read_text(encoding="utf-8")
        self.assertIn(old, text, f"{relative} has no {old!r}")
        path.write_text(text.replace(old, new, 1), encoding="utf-8")

    def bash(self, args, cwd=None, env=None):
        environment = {k: v for k, v in os.environ.items() if k not in _CLEAN_ENV and not k.startswith("FAKE_")}
        environment["PYTHONPATH"] = str(FAKE_ROOT)
        environment["PYTHONDONTWRITEBYTECODE"] = "1"
        environment.update(env or {})
        result = subprocess.run(
            ["bash", *args], cwd=cwd or self.repo, env=environment, capture_output=True, text=True, timeout=120
        )
        return result

    def bash_ok(self, args, cwd=None, env=None):
        result = self.bash(args, cwd, env)
        self.assertEqual(result.returncode, 0, f"{args} failed:\n{result.stdout}\n{result.stderr}")
        return result.stdout

    def infer(self, *args, cwd=None, env=None):
        return self.bash_ok([str(self.repo / "executor/scripts/infer.sh"), *args], cwd, env)

    def assert_runs(self, directory, count, steps):
        dirs = run_dirs(directory)
        self.assertEqual(len(dirs), count, f"run directories in {directory}: {dirs}")
        for run in dirs:
            self.assertEqual(recorded_steps(run), steps, run)


class SharedEngineTest(ExampleTestCase):
    """Family A: ProfilerManager in the shared engine, offline stop rule of the scheduler."""

    def test_mtp_config_makes_max_new_tokens_decode_forwards(self):
        config = "models/deepseek-mini/config/decode_mtp.yaml"
        self.enable(config, "enable_profiler: False", "enable_profiler: True ")
        console = self.infer("--model", "deepseek-mini", "--yaml", "decode_mtp.yaml")
        # next_n 1 changes the tokens per forward, not the number of forwards.
        self.assertIn("1 prefill forward(s), 32 decode forwards (decode steps per request: [32])", console)
        result = self.repo / "models/deepseek-mini/res" / self.date / "deepseek_mini_decode_mtp"
        self.assertTrue((result / "log_0.log").is_file())
        self.assert_runs(result / "prof/prefill", 1, [0])
        self.assert_runs(result / "prof/decode", 1, [3, 4, 5])

    def test_budget_one_step_short_of_the_window(self):
        config = "models/deepseek-mini/config/decode_mtp.yaml"
        self.enable(config, "enable_profiler: False", "enable_profiler: True ")
        self.enable(config, "max_new_tokens: 32", "max_new_tokens: 5")
        console = self.infer("--model", "deepseek-mini", "--yaml", "decode_mtp.yaml")
        self.assertIn("5 decode forwards", console)
        result = self.repo / "models/deepseek-mini/res" / self.date / "deepseek_mini_decode_mtp"
        # __del__ stops the decode profiler inside its window: only the steps reached are parsed.
        self.assert_runs(result / "prof/decode", 1, [3, 4])

    def test_profiler_already_on_and_every_rank_writes(self):
        self.enable("models/deepseek-mini/config/ep4.yaml", "enable_profiler: False", "enable_profiler: True ")
        self.infer("--model", "deepseek-mini", "--yaml", "ep4.yaml")
        result = self.repo / "models/deepseek-mini/res" / self.date / "deepseek_mini_ep4"
        for rank in range(4):
            self.assertIn("100 decode forwards", (result / f"log_{rank}.log").read_text(encoding="utf-8"))
        self.assert_runs(result / "prof/prefill", 4, [0])
        self.assert_runs(result / "prof/decode", 4, [3, 4, 5])

    def test_afd_ffn_rank_steps_the_profiler_too(self):
        self.enable("models/deepseek-mini/config/afd.yaml", "enable_profiler: False", "enable_profiler: True ")
        console = self.infer("--model", "deepseek-mini", "--yaml", "afd.yaml")
        self.assertIn("[rank 0] attention-FFN disaggregation: this rank runs the FFN side", console)
        result = self.repo / "models/deepseek-mini/res" / self.date / "deepseek_mini_afd"
        self.assertNotIn("FFN side", (result / "log_1.log").read_text(encoding="utf-8"))
        for rank in range(2):
            self.assertIn("12 decode forwards", (result / f"log_{rank}.log").read_text(encoding="utf-8"))
        self.assert_runs(result / "prof/prefill", 2, [0])
        self.assert_runs(result / "prof/decode", 2, [3, 4, 5])

    def test_prefill_only_config_still_makes_one_decode_forward(self):
        self.enable("models/deepseek-mini/config/prefill_only.yaml", "enable_profiler: False", "enable_profiler: True")
        console = self.infer("--model", "deepseek-mini", "--yaml", "prefill_only.yaml")
        self.assertIn("1 decode forwards", console)
        result = self.repo / "models/deepseek-mini/res" / self.date / "deepseek_mini_prefill_only"
        self.assert_runs(result / "prof/prefill", 1, [0])
        self.assert_runs(result / "prof/decode", 0, [])

    def test_reruns_on_one_day_share_the_result_directory(self):
        self.infer("--model", "qwen-mini", "--yaml", "dense.yaml")
        self.infer("--model", "qwen-mini", "--yaml", "dense.yaml")
        result = self.repo / "models/qwen-mini/res" / self.date / "qwen_mini_dense"
        self.assertEqual([d.name for d in (self.repo / "models/qwen-mini/res").iterdir()], [self.date])
        self.assert_runs(result / "prof/decode", 2, [3, 4, 5])

    def test_pd_prefill_role_records_one_batch_and_decode_role_nothing(self):
        for role in ("prefill", "decode"):
            self.enable(f"models/deepseek-mini/config/deepseek-mini_pd/{role}.yaml",
                        "enable_profiler: False", "enable_profiler: True ")
        console = self.infer("--model", "deepseek-mini", "--mode", "online", "--pd-role", "prefill")
        # max_prefill_tokens 16 splits the prefill; only the first batch is recorded.
        self.assertIn("[prefill] 3 prefill forward(s)", console)
        node = self.repo / "models/deepseek-mini/res" / self.date / "deepseek_mini_prefill/prefill_node0"
        self.assert_runs(node / "prof/prefill", 2, [0])
        self.assertFalse((node / "prof/decode").exists())

        console = self.infer("--model", "deepseek-mini", "--mode", "online", "--pd-role", "decode",
                             env={"NODE_RANK": "1"})
        self.assertIn("[decode] profiler status: None", console)
        forwards = int(re.search(r"\[decode\] (\d+) decode forwards", console).group(1))
        # Online stops on tokens: MTP (next_n 1) needs fewer forwards than max_new_tokens (48).
        self.assertLess(forwards, 48)
        node = self.repo / "models/deepseek-mini/res" / self.date / "deepseek_mini_decode/decode_node1"
        self.assertTrue((node / "log_1.log").is_file())
        self.assertFalse((node / "prof").exists())


class LegacyRunnerTest(ExampleTestCase):
    """Family B: the model's own infer.py and ModelRunner.define_profiler."""

    def test_glm_own_launcher(self):
        self.enable("models/glm_5_2/config/glm_mini_rank_2.yaml", "enable_profiler: False", "enable_profiler: True ")
        model = self.repo / "models/glm_5_2"
        # YAML_FILE_NAME is hard-coded in glm_5_2's infer.sh: an exported one is overwritten.
        console = self.bash_ok(["infer.sh"], cwd=model, env={"YAML_FILE_NAME": "missing.yaml"})
        self.assertIn("[GLM-mini] warm up: 1 prefill forward(s), 2 decode forwards, profiler off", console)
        self.assertIn("[GLM-mini] run: 10 prefill forward(s), 24 decode forwards, profiler on", console)
        result = model / "res" / self.date / "GLM-mini_glm_mini_rank_2"
        self.assertTrue((result / "log_1.log").is_file())
        self.assert_runs(result / "prefill/prof", 2, [5])
        self.assert_runs(result / "decode/prof", 2, list(range(10, 20)))
        self.assertFalse((result / "prof").exists())

    def test_glm_through_the_shared_launcher_writes_relative_to_the_working_directory(self):
        self.enable("models/glm_5_2/config/glm_mini_rank_2.yaml", "enable_profiler: False", "enable_profiler: True ")
        self.infer("--model", "glm_5_2", "--yaml", "glm_mini_rank_2.yaml")
        logs = self.repo / "models/glm_5_2/res" / self.date / "GLM-mini_glm_mini_rank_2"
        self.assertTrue((logs / "log_0.log").is_file())
        self.assertFalse((logs / "decode").exists())
        profiles = self.repo / "res" / self.date / "GLM-mini_glm_mini_rank_2"
        self.assert_runs(profiles / "decode/prof", 2, list(range(10, 20)))

    def test_yaml_sub_folder_is_dropped_from_the_result_name(self):
        for hardware in ("ci_a3", "ci_950"):
            self.enable(f"models/glm_5_2/config/{hardware}/glm_mini_rank_1.yaml",
                        "enable_profiler: False", "enable_profiler: True ")
        model = self.repo / "models/glm_5_2"
        # Two configs, one basename: both runs write into the same result directory.
        self.infer("--model", "glm_5_2", "--yaml", "ci_a3/glm_mini_rank_1.yaml", cwd=model)
        console = self.infer("--model", "glm_5_2", "--yaml", "ci_950/glm_mini_rank_1.yaml", cwd=model)
        self.assertIn("[GLM-mini] run: 10 prefill forward(s), 21 decode forwards, profiler on", console)
        result = model / "res" / self.date / "GLM-mini_glm_mini_rank_1"
        self.assertEqual([d.name for d in (model / "res" / self.date).iterdir()], [result.name])
        self.assert_runs(result / "decode/prof", 2, list(range(10, 20)))

    def test_pangu_base_loop_makes_max_new_tokens_minus_one_decode_forwards(self):
        self.enable("models/pangu_7b/config/pangu_mini_7b.yaml", "enable_profiler: False", "enable_profiler: True ")
        model = self.repo / "models/pangu_7b"
        console = self.bash_ok(["infer.sh"], cwd=model)
        self.assertIn("[pangu_mini_7B] warm up: 1 prefill forward, 1 decode forwards", console)
        self.assertIn("[pangu_mini_7B] run: 1 prefill forward, 23 decode forwards", console)
        result = model / "res" / self.date / "pangu_mini_7B_pangu_mini_7b"
        self.assert_runs(result / "prof/prefill", 1, [0])
        self.assert_runs(result / "prof/decode", 1, list(range(10, 20)))

    def test_kimi_honours_yaml_file_name_and_uses_class_constants(self):
        config = self.repo / "models/kimi_k3/config"
        shutil.copy(config / "kimi_mini_rank_1.yaml", config / "profiled.yaml")
        self.enable("models/kimi_k3/config/profiled.yaml", "enable_profiler: False", "enable_profiler: True")
        model = self.repo / "models/kimi_k3"
        console = self.bash_ok(["infer.sh"], cwd=model, env={"YAML_FILE_NAME": "profiled.yaml"})
        self.assertIn("[kimi_k3] 4 prefill cycle(s), 23 decode forwards", console)
        result = model / "res" / self.date / "kimi_k3_profiled"
        self.assert_runs(result / "prof/prefill", 1, [0])
        self.assert_runs(result / "prof/decode", 1, list(range(10, 20)))


class MultimediaTest(ExampleTestCase):
    """Family C: mm_function.sh, a model_args toggle, a hand-written profiler."""

    def test_hunyuan_prof_dit(self):
        self.enable("models/hunyuan-mini/config/single.yaml", "  seed: 42\n", "  seed: 42\n  prof-dit: true\n")
        model = self.repo / "models/hunyuan-mini"
        console = self.bash_ok(["infer.sh"], cwd=model)
        self.assertIn("8 denoising steps, prof_dit True", console)
        self.assert_runs(model / "prof/DiT_prof", 1, [4])
        logs = list((model / "res" / self.date / "hunyuan-mini").glob("log_*.log"))
        self.assertEqual(len(logs), 1, logs)

    def test_hunyuan_without_toggle_writes_no_profile(self):
        model = self.repo / "models/hunyuan-mini"
        self.assertIn("prof_dit False", self.bash_ok(["infer.sh"], cwd=model))
        self.assertFalse((model / "prof").exists())

    def test_launcher_rejects_a_model_config_section(self):
        path = self.repo / "models/hunyuan-mini/config/single.yaml"
        path.write_text(path.read_text(encoding="utf-8") + "\nmodel_config:\n  enable_profiler: True\n")
        result = self.bash(["infer.sh"], cwd=self.repo / "models/hunyuan-mini")
        self.assertEqual(result.returncode, 1)
        self.assertIn("Unknown top-level YAML key(s): ['model_config']", result.stdout)

    def test_wan_has_no_profiler(self):
        model = self.repo / "models/wan-mini"
        self.assertIn("4 denoising steps", self.bash_ok(["infer.sh"], cwd=model))
        self.assertFalse((model / "prof").exists())


class SchedulerRuleTest(unittest.TestCase):
    """The stop rule of the example's scheduler, in-process, for many budgets and next_n."""

    @classmethod
    def setUpClass(cls):
        if str(EXAMPLE) not in sys.path:
            sys.path.insert(0, str(EXAMPLE))

    def run_engine(self, mode, max_new_tokens, next_n):
        from executor.core.config.inference_config import InferenceConfig
        from executor.core.engine.execution_engine import ExecutionEngine
        from executor.core.scheduler.scheduler import Scheduler

        raw = {"model_config": {"next_n": next_n},
               "scheduler_config": {"max_new_tokens": max_new_tokens, "batch_size": 3}}
        config = InferenceConfig(raw)
        engine = ExecutionEngine(config)
        engine.eos_token_ids = frozenset()
        scheduler = Scheduler(config, mode=mode)
        for index in range(3):
            scheduler.add_request([index + 1] * (4 + index))
        while scheduler.has_work():
            scheduler.run_step(engine)
        return engine.decode_forwards, list(scheduler.finished_requests.values())

    def test_offline_decode_forwards_equal_max_new_tokens(self):
        for max_new_tokens in (1, 2, 7, 34):
            for next_n in (0, 1, 3):
                forwards, requests = self.run_engine("offline", max_new_tokens, next_n)
                self.assertEqual(forwards, max_new_tokens, (max_new_tokens, next_n))
                self.assertEqual({r.decode_step_count for r in requests}, {max_new_tokens})

    def test_offline_ignores_eos(self):
        from executor.core.forward_data_info.forward_data_info import Request

        from executor.core.scheduler.scheduler import Scheduler
        from executor.core.config.inference_config import InferenceConfig

        scheduler = Scheduler(InferenceConfig({"scheduler_config": {"max_new_tokens": 6}}))
        request = Request(0, [1])
        request.output_id_list = [5]
        request.eos_output_len = 1
        results = [scheduler._should_finish(request) for _ in range(6)]
        self.assertEqual(results, [False] * 5 + [True])
        self.assertEqual(request.valid_output_len, 1)

    def test_online_stops_on_tokens(self):
        # Without MTP the prefill's token counts: max_new_tokens - 1 decode forwards.
        self.assertEqual(self.run_engine("online", 10, 0)[0], 9)
        # With MTP fewer forwards emit the same tokens.
        self.assertLess(self.run_engine("online", 10, 1)[0], 9)


class ProfilerContextShapeTest(unittest.TestCase):
    """profiler_context.py keeps the real file's names and whitespace quirks."""

    def setUp(self):
        self.text = (EXAMPLE / "executor/utils/profiler_context.py").read_text(encoding="utf-8")
        self.lines = self.text.split("\n")

    def test_names(self):
        self.assertIn("        self.current_profiler = FakeContextManager()\n", self.text)
        self.assertNotIn("self.profiler", self.text)
        self.assertNotIn("def start", self.text)
        self.assertIn(
            'def create_profiler(enable_profiler=False, profile_save_path="prof", active=3, repeat=1, skip_first=3):\n',
            self.text,
        )
        self.assertIn("                active=1, repeat=1, skip_first=0)\n", self.text)
        self.assertIn("            self.current_profiler.start()\n        return\n\n    def step(self):", self.text)

    def test_whitespace_quirks(self):
        trailing = [line for line in self.lines if line.endswith(" ") and line.strip()]
        self.assertEqual(len(trailing), 3, trailing)
        self.assertTrue(trailing[0].startswith("    ") and not trailing[0].strip().startswith(("def", "self")))
        self.assertIn("profile_save_path=os.path.join(", trailing[1])
        self.assertEqual(trailing[2].strip(), "enable_profiler=self.enable_profiler,")
        index = self.lines.index("    def __del__(self):")
        self.assertEqual(self.lines[index - 1], "    ")
        self.assertNotIn("\t", self.text)
        self.assertNotIn("\r", self.text)


if __name__ == "__main__":
    unittest.main()
