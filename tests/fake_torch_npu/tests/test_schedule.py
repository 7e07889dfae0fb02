"""torch_npu's schedule arithmetic (reference §8) and clamping."""
import contextlib
import io
import os

from support import FakeTestCase, torch_npu

Action = torch_npu.profiler.ProfilerAction


def actions(schedule, count):
    return [schedule(step) for step in range(count)]


class ScheduleTest(FakeTestCase):
    def test_skip_first_warmup_active_records_step_13(self):
        s = torch_npu.profiler.schedule(wait=0, active=1, warmup=1, repeat=1, skip_first=12)
        got = actions(s, 16)
        self.assertEqual(got[:12], [Action.NONE] * 12)
        self.assertEqual(got[12], Action.WARMUP)
        self.assertEqual(got[13], Action.RECORD_AND_SAVE)
        self.assertEqual(got[14:], [Action.NONE, Action.NONE])

    def test_recipes_decode_default_window(self):
        s = torch_npu.profiler.schedule(wait=0, warmup=0, active=3, repeat=1, skip_first=3)
        self.assertEqual(
            actions(s, 7),
            [Action.NONE] * 3 + [Action.RECORD, Action.RECORD, Action.RECORD_AND_SAVE, Action.NONE],
        )

    def test_wait_and_repeat_cycles(self):
        s = torch_npu.profiler.schedule(wait=1, active=2, warmup=1, repeat=2, skip_first=1)
        expected = [Action.NONE,  # skipped
                    Action.NONE, Action.WARMUP, Action.RECORD, Action.RECORD_AND_SAVE,
                    Action.NONE, Action.WARMUP, Action.RECORD, Action.RECORD_AND_SAVE,
                    Action.NONE, Action.NONE]
        self.assertEqual(actions(s, 11), expected)

    def test_repeat_zero_repeats_forever(self):
        s = torch_npu.profiler.schedule(wait=0, active=1, repeat=0)
        self.assertEqual(actions(s, 5), [Action.RECORD_AND_SAVE] * 5)

    def test_invalid_values_are_clamped_with_warnings(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            s = torch_npu.profiler.schedule(wait=-1, active=0, warmup=-2, repeat=-1, skip_first=-3)
        self.assertEqual((s.wait, s.active, s.warmup, s.repeat, s.skip_first), (0, 1, 0, 0, 0))
        self.assertIn("profiler.py: Invalid parameter active, reset it to 1.", out.getvalue())
        self.assertIn("profiler.py: Profiler won't be using warmup, this can skew profiler results", out.getvalue())
        self.assertEqual(out.getvalue().count("[WARNING]"), 6)

    def test_bools_pass_the_int_checks_and_a_negative_skip_first_wait_is_set(self):
        os.environ["FAKE_TORCH_NPU_BUILD"] = "2.14.0"
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            s = torch_npu.profiler.schedule(wait=2, active=True, warmup=True, repeat=1, skip_first_wait=-1)
        self.assertEqual(out.getvalue(), "")
        self.assertEqual((s.active, s.warmup, s.skip_first_wait), (True, True, -1))
        # skip_first_wait != 0: the first cycle starts without its two wait steps.
        self.assertEqual(actions(s, 3), [Action.WARMUP, Action.RECORD_AND_SAVE, Action.NONE])

    def test_clamping_warnings_only_on_rank_0(self):
        os.environ["RANK"] = "1"
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            torch_npu.profiler.schedule(wait=0, active=0)
        self.assertEqual(out.getvalue(), "")

    def test_skip_first_wait_in_2026_builds(self):
        os.environ["FAKE_TORCH_NPU_BUILD"] = "2.14.0"
        s = torch_npu.profiler.schedule(wait=2, active=1, repeat=1, skip_first=2, skip_first_wait=1)
        # skip_first_wait: the first cycle starts without its wait steps.
        self.assertEqual(actions(s, 4), [Action.NONE, Action.NONE, Action.RECORD_AND_SAVE, Action.NONE])
        self.assertIn("skip_first_wait", s.__dict__)
        os.environ["FAKE_TORCH_NPU_BUILD"] = "2.7.1"
        older = torch_npu.profiler.schedule(wait=2, active=1, repeat=1, skip_first=2, skip_first_wait=1)
        self.assertNotIn("skip_first_wait", older.__dict__)

    def test_profiler_info_schedule_key_order(self):
        os.environ["FAKE_TORCH_NPU_BUILD"] = "2.7.1"  # the real sample's build
        s = torch_npu.profiler.schedule(wait=0, active=1, warmup=1, repeat=1, skip_first=12)
        # profiler_info records schedule.__dict__.
        self.assertEqual(list(s.__dict__), ["wait", "active", "warmup", "repeat", "skip_first"])
