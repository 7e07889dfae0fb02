"""The public API as torch_npu's (§11 of the reference): keyword-only profile, stop/step
around start and stop, the process-wide output directory, analyse one level deep, run
directory names, ASCEND_WORK_PATH, exceptions swallowed."""
import contextlib
import io
import json
import os
import shutil

from support import FakeTestCase, read_csv, torch_npu

P = torch_npu.profiler
OUT = "ASCEND_PROFILER_OUTPUT"


def run_dirs(parent):
    return sorted(p for p in parent.iterdir() if p.name.endswith("_ascend_pt")) if parent.exists() else []


class ApiTest(FakeTestCase):
    def quiet(self):
        return contextlib.redirect_stdout(io.StringIO())

    def test_profile_is_keyword_only(self):
        with self.assertRaises(TypeError):
            P.profile([P.ProfilerActivity.NPU])

    def test_no_key_averages(self):
        self.assertFalse(hasattr(P.profile(), "key_averages"))

    def test_second_stop_warns_and_parses_again(self):
        handler = P.tensorboard_trace_handler(str(self.tmp / "p"))
        with contextlib.redirect_stdout(io.StringIO()) as out:
            prof = P.profile(schedule=P.schedule(wait=0, active=3, warmup=1, repeat=1), on_trace_ready=handler)
            prof.start()
            prof.step()
            prof.stop()
            prof.stop()
        text = out.getvalue()
        self.assertEqual(text.count("Incorrect schedule: Stop profiler while current state is RECORD"), 2)
        self.assertEqual(text.count("Start parsing profiling data"), 2)

    def test_step_before_start_runs_the_transition(self):
        handler = P.tensorboard_trace_handler(str(self.tmp / "p"))
        with self.quiet():
            prof = P.profile(schedule=P.schedule(wait=0, active=1, warmup=1, repeat=1), on_trace_ready=handler)
            prof.step()  # WARMUP -> RECORD_AND_SAVE without start(): torch_npu still transits
            prof.step()  # RECORD_AND_SAVE -> NONE saves the cycle
        self.assertEqual(len(run_dirs(self.tmp / "p")), 0, "warmup_trace never ran: no directory")

    def test_handler_creation_sets_the_process_output_directory(self):
        # The decode handler is created before the prefill profiler starts: both phases land in decode.
        with self.quiet():
            prefill = P.profile(schedule=P.schedule(wait=0, active=1, warmup=1, repeat=1),
                                on_trace_ready=P.tensorboard_trace_handler(str(self.tmp / "prefill")))
            decode_handler = P.tensorboard_trace_handler(str(self.tmp / "decode"))
            prefill.start()
            prefill.step()
            prefill.step()
            prefill.stop()
            decode = P.profile(schedule=P.schedule(wait=0, active=1, warmup=1, repeat=1), on_trace_ready=decode_handler)
            decode.start()
            decode.step()
            decode.step()
            decode.stop()
        self.assertEqual(run_dirs(self.tmp / "prefill"), [])
        self.assertEqual(len(run_dirs(self.tmp / "decode")), 2)

    def test_start_without_a_handler_resets_the_output_directory(self):
        os.chdir(self.tmp)
        try:
            P.tensorboard_trace_handler(str(self.tmp / "decode"))
            with self.quiet():
                prof = P.profile(schedule=P.schedule(wait=0, active=1, warmup=1, repeat=1))
                prof.start()
                prof.step()
                prof.step()
                prof.stop()
        finally:
            os.chdir(self.tmp.parent)
        self.assertEqual(run_dirs(self.tmp / "decode"), [])
        self.assertEqual(len(run_dirs(self.tmp)), 1)

    def test_worker_named_directories_carry_the_pid_and_ascend_work_path_redirects(self):
        os.environ["ASCEND_WORK_PATH"] = str(self.tmp / "work")
        try:
            with self.quiet():
                prof = P.profile(schedule=P.schedule(wait=0, active=1, warmup=1, repeat=1),
                                 on_trace_ready=P.tensorboard_trace_handler(worker_name="rank_0"))
                prof.start()
                prof.step()
                prof.step()
                prof.stop()
        finally:
            del os.environ["ASCEND_WORK_PATH"]
        (run,) = run_dirs(self.tmp / "work" / "profiling_data")
        self.assertRegex(run.name, rf"^rank_0_{os.getpid()}_\d{{17}}_ascend_pt$")

    def test_exceptions_are_printed_and_swallowed(self):
        def broken(_step):
            raise RuntimeError("boom")

        with self.quiet() as out:
            prof = P.profile(schedule=lambda step: P.ProfilerAction.NONE)
            prof.schedule = broken
            prof.step()
        self.assertIn("[ERROR]", out.getvalue())
        self.assertIn("Call step failed. Exception: boom", out.getvalue())

    def test_callable_schedules_record_an_empty_schedule_and_step_ids(self):
        import functools

        rec = P.ProfilerAction.RECORD_AND_SAVE
        for schedule in (lambda step: rec if step == 1 else P.ProfilerAction.NONE,
                         functools.partial(lambda keep, step: rec if step == keep else P.ProfilerAction.NONE, 1)):
            save = self.tmp / "p"
            shutil.rmtree(save, ignore_errors=True)
            with self.quiet():
                prof = P.profile(schedule=schedule, on_trace_ready=P.tensorboard_trace_handler(str(save)))
                prof.start()
                prof.step()
                prof.step()
                prof.stop()
            (run,) = run_dirs(save)
            info = json.loads(next(run.glob("profiler_info*.json")).read_text(encoding="utf-8"))
            self.assertEqual(info["config"]["common_config"]["schedule"], {})
            header, *rows = read_csv(run / OUT / "kernel_details.csv")
            self.assertEqual(header[0], "Step Id")
            self.assertEqual({r[0] for r in rows}, {"1"})


class AnalyseTest(FakeTestCase):
    def setUp(self):
        super().setUp()
        _, dirs = self.profile_loop(2, schedule=P.schedule(wait=0, active=1, warmup=1, repeat=1), out="res/prof/decode")
        (self.run,) = dirs
        shutil.rmtree(self.run / OUT)

    def analyse(self, path):
        with contextlib.redirect_stdout(io.StringIO()) as out:
            P.profiler.analyse(str(path))
        return out.getvalue()

    def test_two_levels_up_parses_nothing_and_prints_nothing(self):
        self.assertEqual(self.analyse(self.tmp / "res" / "prof"), "")
        self.assertFalse((self.run / OUT).exists())

    def test_the_phase_directory_and_the_run_directory_are_parsed(self):
        self.analyse(self.tmp / "res" / "prof" / "decode")
        self.assertTrue((self.run / OUT / "kernel_details.csv").exists())
        (self.run / OUT / "stale.csv").write_text("x")
        self.analyse(self.run)
        self.assertFalse((self.run / OUT / "stale.csv").exists(), "ASCEND_PROFILER_OUTPUT is recreated")

    def test_a_prof_directory_alone_makes_a_run_directory(self):
        shutil.rmtree(self.run / "FRAMEWORK")
        out = self.analyse(self.run.parent)
        self.assertIn("Start parsing profiling data", out)


class PerBuildApiTest(FakeTestCase):
    """Each build's parameters and members, as read in its wheel (`profiler.py`, `scheduler.py`,
    `experimental_config.py`): `inspect` shows them and a call with another one fails as in Python."""

    CONFIG_2025 = {"mstx", "host_sys", "mstx_domain_include", "mstx_domain_exclude", "sys_io", "sys_interconnection"}
    # build -> definition -> the parameters of the build among those only some builds have.
    EXPECTED = {
        "2.1.0.post10": {"profile": set(), "tensorboard_trace_handler": set(), "analyse": set(),
                         "schedule": set(), "_ExperimentalConfig": set()},
        "2.5.1": {"profile": set(), "tensorboard_trace_handler": {"async_mode"}, "analyse": set(),
                  "schedule": set(), "_ExperimentalConfig": set()},
        "2.7.1": {"profile": set(), "tensorboard_trace_handler": {"async_mode"}, "analyse": {"export_type"},
                  "schedule": set(), "_ExperimentalConfig": CONFIG_2025},
        "2.10.0": {"profile": set(), "tensorboard_trace_handler": {"async_mode"}, "analyse": {"export_type"},
                   "schedule": set(), "_ExperimentalConfig": CONFIG_2025},
        "2.7.1.post11": {"profile": {"custom_trace_id_callback"}, "tensorboard_trace_handler": {"async_mode"},
                         "analyse": {"export_type"}, "schedule": {"skip_first_wait"},
                         "_ExperimentalConfig": CONFIG_2025},
        "2.14.0": {"profile": {"execution_trace_observer", "custom_trace_id_callback"},
                   "tensorboard_trace_handler": {"async_mode"}, "analyse": {"export_type"},
                   "schedule": {"skip_first_wait"}, "_ExperimentalConfig": CONFIG_2025},
    }
    GATED = {
        "profile": {"execution_trace_observer", "custom_trace_id_callback"},
        "tensorboard_trace_handler": {"async_mode"},
        "analyse": {"export_type"},
        "schedule": {"skip_first_wait"},
        "_ExperimentalConfig": CONFIG_2025,
    }

    def definitions(self):
        return {
            "profile": P.profile,
            "tensorboard_trace_handler": P.tensorboard_trace_handler,
            "analyse": P.profiler.analyse,
            "schedule": P.schedule,
            "_ExperimentalConfig": P._ExperimentalConfig,
        }

    def test_signatures_follow_the_build(self):
        import inspect

        for build, expected in self.EXPECTED.items():
            os.environ["FAKE_TORCH_NPU_BUILD"] = build
            for name, obj in self.definitions().items():
                params = set(inspect.signature(obj).parameters)
                with self.subTest(build=build, definition=name):
                    self.assertEqual(params & self.GATED[name], expected[name])

    def test_a_parameter_the_build_lacks_fails_as_in_python(self):
        os.environ["FAKE_TORCH_NPU_BUILD"] = "2.10.0"
        with self.assertRaisesRegex(TypeError, "unexpected keyword argument 'custom_trace_id_callback'"):
            P.profile(custom_trace_id_callback=lambda: "id")
        with self.assertRaisesRegex(TypeError, "unexpected keyword argument 'skip_first_wait'"):
            P.schedule(wait=0, active=1, skip_first_wait=1)
        os.environ["FAKE_TORCH_NPU_BUILD"] = "2.5.1"
        with self.assertRaisesRegex(TypeError, "unexpected keyword argument 'mstx'"):
            P._ExperimentalConfig(mstx=True)
        # analyse and tensorboard_trace_handler swallow it (no_exception_func) and return None.
        with contextlib.redirect_stdout(io.StringIO()) as out:
            self.assertIsNone(P.profiler.analyse(str(self.tmp), export_type="db"))
        self.assertIn("Call analyse failed. Exception: analyse() got an unexpected keyword argument 'export_type'",
                      out.getvalue())
        os.environ["FAKE_TORCH_NPU_BUILD"] = "2.1.0.post10"
        with contextlib.redirect_stdout(io.StringIO()) as out:
            self.assertIsNone(P.tensorboard_trace_handler(str(self.tmp / "p"), async_mode=True))
        self.assertIn("Call tensorboard_trace_handler failed.", out.getvalue())

    def test_positional_arguments_follow_the_builds_order(self):
        # 2.5.1 has no mstx: its fifth parameter is data_simplification.
        os.environ["FAKE_TORCH_NPU_BUILD"] = "2.5.1"
        config = P._ExperimentalConfig(P.ProfilerLevel.Level0, None, False, False, False)
        self.assertFalse(config._data_simplification)
        os.environ["FAKE_TORCH_NPU_BUILD"] = "2.7.1"
        config = P._ExperimentalConfig(P.ProfilerLevel.Level0, None, False, False, True, False)
        self.assertEqual((config._mstx, config._data_simplification), (True, False))

    def test_memory_access_from_2_5_1(self):
        os.environ["FAKE_TORCH_NPU_BUILD"] = "2.1.0.post10"
        self.assertFalse(hasattr(P.AiCMetrics, "MemoryAccess"))
        self.assertNotIn("MemoryAccess", dir(P.AiCMetrics))
        with contextlib.redirect_stdout(io.StringIO()) as out:
            config = P._ExperimentalConfig(P.ProfilerLevel.Level1, "ACL_AICORE_MEMORY_ACCESS")
        self.assertEqual(config._aic_metrics, P.AiCMetrics.PipeUtilization)
        self.assertIn("Invalid parameter aic_metrics, reset it to default.", out.getvalue())
        os.environ["FAKE_TORCH_NPU_BUILD"] = "2.5.1"
        self.assertEqual(P.AiCMetrics.MemoryAccess, "ACL_AICORE_MEMORY_ACCESS")
