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
