"""Failure modes on demand: bad disk, schedule warnings, WARMUP stop, slow first step, no schedule."""
import contextlib
import io
import json
import os
import re
import shutil

from support import FakeTestCase, read_csv, torch_npu

P = torch_npu.profiler
CASCADE = ["CANNExportParser", "CANNTimelineParser", "KernelViewParser", "IntegrateParser", "RelationParser",
           "TraceViewParser", "TraceStepTimeParser", "OperatorViewParser", "CANNAnalyzeParser",
           "CommunicationParser"]
WARMUP_STOP = ("Incorrect schedule: Stop profiler while current state is WARMUP which will result in "
               "empty parsed data.")
RECORD_STOP = ("Incorrect schedule: Stop profiler while current state is RECORD which may result in "
               "incomplete parsed data.")
SAVE_STOP = ("Stop profiler while current state is RECORD_AND_SAVE, perhaps the scheduling cycle has "
             "not yet completed.")


def failed_tasks(stdout):
    return re.findall(r"^\[[^]]+\] \[ERROR\] \[\d+\] profiler\.py: Task \[(\w+)\] run failed\.$", stdout, re.M)


class BadDiskTest(FakeTestCase):
    def check_bad_disk(self, stdout, run_dir):
        self.assertEqual(failed_tasks(stdout), CASCADE)
        out = run_dir / "ASCEND_PROFILER_OUTPUT"
        self.assertEqual(sorted(os.listdir(out)), ["analyse.done", "trace_view.json"])
        raw = (out / "trace_view.json").read_bytes()
        self.assertTrue(raw.startswith(b"[{") and raw.endswith(b"}"))
        with self.assertRaises(json.JSONDecodeError):
            json.loads(raw)
        logs = "".join(p.read_text(encoding="utf-8") for p in (run_dir / "logs").iterdir())
        # ProfilerLogger's record, traceback and status table; `run failed` is on stdout only.
        self.assertRegex(logs, r"\[\d{4}-\d\d-\d\d-\d\d:\d\d:\d\d\.\d{3}\] \[ERROR\] "
                               r"\[AscendProfiler_CANNExportParser:101\] Failed to export CANN Profiling data\n"
                               r"Traceback \(most recent call last\):\n")
        self.assertIn("OSError: [Errno 5] Input/output error", logs)
        self.assertRegex(logs, r"\] export +\| SUB_PROCESS +\| Failed +\| ")
        self.assertNotIn("run failed", logs)

    def test_marker_file_above_the_output(self):
        (self.tmp / ".fake_torch_npu_bad_disk").touch()
        stdout, dirs = self.profile_loop(4, schedule=P.schedule(wait=0, active=2, repeat=1, skip_first=1))
        self.check_bad_disk(stdout, dirs[0])

    def test_env_switch_and_reparse_elsewhere_succeeds(self):
        os.environ["FAKE_TORCH_NPU_BAD_DISK"] = "1"
        stdout, dirs = self.profile_loop(2, schedule=P.schedule(wait=0, active=1, repeat=1))
        self.check_bad_disk(stdout, dirs[0])
        del os.environ["FAKE_TORCH_NPU_BAD_DISK"]
        copy = self.tmp / "local" / dirs[0].name
        shutil.copytree(dirs[0], copy)
        with contextlib.redirect_stdout(io.StringIO()) as out:
            P.profiler.analyse(str(copy))
        self.assertEqual(failed_tasks(out.getvalue()), [])
        self.assertTrue((copy / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").exists())
        json.loads((copy / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").read_bytes())

    def test_symlinked_output_resolves_to_a_good_disk(self):
        bad = self.tmp / "mnt"
        bad.mkdir()
        (bad / ".fake_torch_npu_bad_disk").touch()
        good = self.tmp / "local_res"
        good.mkdir()
        (bad / "res").symlink_to(good)
        stdout, dirs = self.profile_loop(2, schedule=P.schedule(wait=0, active=1, repeat=1), out="mnt/res/prof")
        self.assertEqual(failed_tasks(stdout), [])
        self.assertTrue((dirs[0] / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").exists())

    def test_build_2_5_1_leaves_trace_view_temp(self):
        os.environ.update(FAKE_TORCH_NPU_BUILD="2.5.1", FAKE_TORCH_NPU_BAD_DISK="1")
        stdout, dirs = self.profile_loop(2, schedule=P.schedule(wait=0, active=1, repeat=1))
        self.assertEqual(os.listdir(dirs[0] / "ASCEND_PROFILER_OUTPUT"), ["trace_view_temp.json"])
        # 2.5.1: no brackets on stdout, ProfilerLogger without milliseconds, no status table.
        self.assertRegex(stdout, r"(?m)^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \[ERROR\] \[\d+\] profiler\.py: "
                                 r"Task \[CANNExportParser\] run failed\.$")
        logs = "".join(p.read_text(encoding="utf-8") for p in (dirs[0] / "logs").iterdir())
        self.assertRegex(logs, r"\[\d{4}-\d\d-\d\d-\d\d:\d\d:\d\d\] \[ERROR\] \[AscendProfiler:75\] "
                               r"Failed to export CANN Profiling data, error: \[Errno 5\]")
        self.assertNotIn("Task execution completed", logs)

    def test_build_2_1_0_post10_has_no_logs_and_its_own_texts(self):
        os.environ.update(FAKE_TORCH_NPU_BUILD="2.1.0.post10", FAKE_TORCH_NPU_BAD_DISK="1")
        stdout, dirs = self.profile_loop(2, schedule=P.schedule(wait=0, active=1, repeat=1))
        self.assertFalse((dirs[0] / "logs").exists())
        self.assertIn("profiler.py: Task export has not run successfully.", stdout)
        self.assertIn("profiler.py: Task kernel has not run successfully.", stdout)
        self.assertIn("[WARNING]", stdout)
        self.assertIn("profiler.py: Profiling data parsing failed.\n", stdout)
        (info_path,) = dirs[0].glob("profiler_info*.json")
        info = json.loads(info_path.read_text(encoding="utf-8"))
        self.assertNotIn("torch_npu_version", info)
        self.assertNotIn("cann_version", info)

    def test_msprof_missing_texts_per_build(self):
        os.environ["FAKE_TORCH_NPU_NO_MSPROF"] = "1"
        stdout, _ = self.profile_loop(2, schedule=P.schedule(wait=0, active=1, repeat=1))
        self.assertRegex(stdout, r"(?m)^\[[^]]+\] \[ERROR\] \[\d+\] profiler\.py: Failed to export CANN Profiling "
                                 r"data\. Error msg: Export CANN Profiling data failed! 'msprof' command not found!")
        os.environ["FAKE_TORCH_NPU_BUILD"] = "2.5.1"
        stdout, _ = self.profile_loop(2, schedule=P.schedule(wait=0, active=1, repeat=1), out="old")
        self.assertIn("profiler.py: Export CANN Profiling data failed! msprof command not found!", stdout)


class ScheduleWarningTest(FakeTestCase):
    def test_stop_in_warmup_warns_and_deletes_the_run_dir(self):
        stdout, dirs = self.profile_loop(1, schedule=P.schedule(wait=0, warmup=2, active=1, repeat=1))
        self.assertIn(f"[WARNING] [{os.getpid()}] profiler.py: {WARMUP_STOP}", stdout)
        self.assertEqual(dirs, [])

    def test_stop_in_record_warns_and_parses_what_was_recorded(self):
        stdout, dirs = self.profile_loop(6, schedule=P.schedule(wait=0, active=30, repeat=1, skip_first=3))
        self.assertIn(RECORD_STOP, stdout)
        steps = read_csv(dirs[0] / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv")[1:]
        self.assertEqual([row[1] for row in steps], ["3", "4", "5"])

    def test_stop_in_record_and_save_warns(self):
        stdout, dirs = self.profile_loop(2, schedule=P.schedule(wait=0, active=3, repeat=1))
        self.assertIn(SAVE_STOP, stdout)
        self.assertEqual(len(dirs), 1)

    def test_clean_window_prints_no_warning(self):
        stdout, _ = self.profile_loop(7, schedule=P.schedule(wait=0, active=3, repeat=1, skip_first=3))
        self.assertNotIn("[WARNING]", stdout)

    def test_warnings_only_on_rank_0(self):
        os.environ["RANK"] = "3"
        stdout, _ = self.profile_loop(1, schedule=P.schedule(wait=0, active=30, repeat=1))
        self.assertNotIn("[WARNING]", stdout)
        self.assertIn("Start parsing profiling data", stdout)

    def test_no_schedule_warns_and_has_no_step_id(self):
        stdout, dirs = self.profile_loop(3, schedule=None)
        self.assertIn(RECORD_STOP, stdout)
        header = read_csv(dirs[0] / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv")[0]
        self.assertNotIn("Step Id", header)
        with open(next(dirs[0].glob("profiler_info_*.json")), encoding="utf-8") as handle:
            self.assertEqual(json.load(handle)["config"]["common_config"]["schedule"], {})

    def test_repeat_gives_one_directory_per_cycle(self):
        _, dirs = self.profile_loop(6, schedule=P.schedule(wait=1, active=1, repeat=2))
        self.assertEqual(len(dirs), 2)
        ids = [read_csv(d / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv")[1][1] for d in dirs]
        self.assertEqual(sorted(ids), ["1", "3"])

    def test_stop_without_start_runs_the_exit_action_and_step_after_stop_warns(self):
        with contextlib.redirect_stdout(io.StringIO()) as out:
            prof = P.profile(schedule=P.schedule(wait=0, active=1, warmup=1))
            prof.stop()
            prof.step()
        # As torch_npu: stop() runs the exit action of schedule(0) (WARMUP) even without start().
        self.assertIn(WARMUP_STOP, out.getvalue())
        self.assertIn("Profiler is stopped, step takes no effect!", out.getvalue())


class SlowFirstStepTest(FakeTestCase):
    def test_first_recorded_step_is_at_least_20_times_slower(self):
        os.environ["FAKE_TORCH_NPU_SLOW_FIRST_STEP"] = "1"
        _, dirs = self.profile_loop(7, schedule=P.schedule(wait=0, active=3, repeat=1, skip_first=3))
        out = dirs[0] / "ASCEND_PROFILER_OUTPUT"
        steps = read_csv(out / "step_trace_time.csv")
        stage = steps[0].index("Stage")
        first, *rest = [float(row[stage]) for row in steps[1:]]
        self.assertEqual(len(rest), 2)
        self.assertTrue(all(first >= 20 * other for other in rest))
        kernels = read_csv(out / "kernel_details.csv")
        duration = kernels[0].index("Duration(us)")
        per_step = {}
        for row in kernels[1:]:
            per_step.setdefault(row[0], []).append(float(row[duration]))
        self.assertGreaterEqual(min(per_step["3"]), 20 * min(per_step["4"]))


def _profile_in_a_daemon(save):
    """A daemon process's profile (vLLM's TP>1 workers are daemons), its stdout kept in a file."""
    with open(os.path.join(save, "stdout.txt"), "w", encoding="utf-8") as handle, \
            contextlib.redirect_stdout(handle):
        prof = P.profile(activities=[P.ProfilerActivity.NPU, P.ProfilerActivity.CPU],
                         on_trace_ready=P.tensorboard_trace_handler(os.path.join(save, "prof")))
        prof.start()
        prof.step()
        prof.stop()


class DaemonTest(FakeTestCase):
    def test_the_trace_handler_leaves_raw_data_in_a_daemon_process(self):
        import multiprocessing

        worker = multiprocessing.get_context("fork").Process(
            target=_profile_in_a_daemon, args=(str(self.tmp),), daemon=True)
        worker.start()
        worker.join(timeout=60)
        self.assertEqual(worker.exitcode, 0)
        [run] = self.run_dirs(self.tmp / "prof")
        self.assertTrue((run / "FRAMEWORK").is_dir())
        self.assertFalse((run / "ASCEND_PROFILER_OUTPUT").exists())
        stdout = (self.tmp / "stdout.txt").read_text(encoding="utf-8")
        self.assertIn("The profiling data cannot be parsed during the daemon process", stdout)
        # Outside the daemon, analyse parses it.
        with contextlib.redirect_stdout(io.StringIO()):
            P.profiler.analyse(str(run))
        self.assertTrue((run / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").exists())
