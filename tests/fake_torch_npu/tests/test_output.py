"""The run directory and ASCEND_PROFILER_OUTPUT, checked against the real samples."""
import json
import os
import re
import socket

from support import MSINSIGHT, MSTT, FakeTestCase, read_csv, sample_header, torch_npu

P = torch_npu.profiler
LEVEL2 = MSINSIGHT / "test__st__level2__rank_0_ascend_pt__ASCEND_PROFILER_OUTPUT__kernel_details.csv"
LEVEL0 = MSINSIGHT / "test__data__pytorch__text__level0__rank0_ascend_pt__ASCEND_PROFILER_OUTPUT__kernel_details.csv"
MEMORY_L0 = MSINSIGHT / "server__src__test__test_data__test_rank_0__ASCEND_PROFILER_OUTPUT__kernel_details.csv"
ARITHMETIC = MSTT / "profiler__msprof_analyze__test__ut__advisor__advisor_backend__compute_advice__kernel_details.csv"


def key_structure(value):
    """The nested key structure of a JSON value (values ignored)."""
    if isinstance(value, dict):
        return {key: key_structure(item) for key, item in value.items()}
    return None


def metric_tail(header):
    return header[header.index("Context ID") + 1:]


class SampleWindowTest(FakeTestCase):
    """The real sample's configuration: skip_first 12, warmup 1, active 1, Level2 PipeUtilization."""

    def setUp(self):
        super().setUp()
        os.environ["FAKE_TORCH_NPU_BUILD"] = "2.7.1"  # the sample's build
        schedule = P.schedule(wait=0, active=1, warmup=1, repeat=1, skip_first=12)
        self.stdout, dirs = self.profile_loop(15, schedule=schedule, level=P.ProfilerLevel.Level2)
        self.assertEqual(len(dirs), 1)
        self.run_dir = dirs[0]
        self.out = self.run_dir / "ASCEND_PROFILER_OUTPUT"

    def test_run_dir_name_and_layout(self):
        worker = f"{socket.gethostname()}_{os.getpid()}"
        self.assertRegex(self.run_dir.name, "^" + re.escape(worker) + r"_\d{17}_ascend_pt$")
        self.assertTrue((self.run_dir / "profiler_info_0.json").is_file())
        self.assertTrue((self.run_dir / "profiler_metadata.json").is_file())
        self.assertTrue((self.run_dir / "FRAMEWORK").is_dir())
        self.assertTrue(any((self.run_dir / "logs").iterdir()))
        prof = [d for d in self.run_dir.iterdir() if d.name.startswith("PROF_")]
        self.assertEqual(len(prof), 1)
        self.assertRegex(prof[0].name, r"^PROF_\d{6}_\d{17}_[A-Z]{16}$")
        self.assertTrue((prof[0] / "host" / "data").is_dir())
        self.assertTrue(any((prof[0] / "device_0" / "data").iterdir()))

    def test_profiler_info_has_the_real_key_structure(self):
        with open(MSINSIGHT / "test__st__level2__rank_0_ascend_pt__profiler_info_0.json", encoding="utf-8") as h:
            real = json.load(h)
        with open(self.run_dir / "profiler_info_0.json", encoding="utf-8") as h:
            fake = json.load(h)
        self.assertEqual(key_structure(fake), key_structure(real))
        self.assertEqual(fake["config"]["common_config"]["schedule"], real["config"]["common_config"]["schedule"])
        self.assertEqual(fake["config"]["experimental_config"]["_profiler_level"], "Level2")
        self.assertEqual(fake["config"]["experimental_config"]["_aic_metrics"], "ACL_AICORE_PIPE_UTILIZATION")
        self.assertEqual(fake["rank_id"], "0")
        self.assertEqual(fake["torch_npu_version"], "2.7.1")

    def test_kernel_details_has_the_exact_47_column_header_and_step_13(self):
        rows = read_csv(self.out / "kernel_details.csv")
        self.assertEqual(rows[0], sample_header(LEVEL2))
        self.assertEqual(len(rows[0]), 47)
        self.assertEqual({row[0] for row in rows[1:]}, {"13"})
        start = rows[0].index("Start Time(us)")
        for row in rows[1:]:
            self.assertEqual(len(row), 47)
            self.assertRegex(row[start], r"^\d{16}\.\d{3}\t$")
        self.assertIn('"4,1024;1024,1024"', [row[rows[0].index("Input Shapes")] for row in rows[1:]])
        raw = (self.out / "kernel_details.csv").read_text(encoding="utf-8")
        self.assertIn('"""4,1024;1024,1024"""', raw)

    def test_statistics_headers_match_the_samples(self):
        for name in ("step_trace_time.csv", "op_statistic.csv", "api_statistic.csv"):
            sample = MSINSIGHT / f"test__st__level2__rank_0_ascend_pt__ASCEND_PROFILER_OUTPUT__{name}"
            self.assertEqual(read_csv(self.out / name)[0], sample_header(sample), name)
        steps = read_csv(self.out / "step_trace_time.csv")[1:]
        self.assertEqual([row[1] for row in steps], ["13"])
        self.assertTrue(all(row[0] == "host" for row in read_csv(self.out / "api_statistic.csv")[1:]))

    def test_file_set_at_level2_single_card(self):
        names = sorted(os.listdir(self.out))
        # 2.7.1 (the sample's build) writes no analyse.done; 2026 builds write an empty one.
        self.assertEqual(names, ["api_statistic.csv", "kernel_details.csv", "op_statistic.csv",
                                 "operator_details.csv", "step_trace_time.csv", "trace_view.json"])
        del os.environ["FAKE_TORCH_NPU_BUILD"]
        _, dirs = self.profile_loop(3, schedule=P.schedule(wait=0, active=1, repeat=1), out="new")
        self.assertEqual((dirs[0] / "ASCEND_PROFILER_OUTPUT" / "analyse.done").stat().st_size, 0)

    def test_trace_view_is_a_complete_two_phase_array(self):
        raw = (self.out / "trace_view.json").read_bytes()
        self.assertTrue(raw.startswith(b'[{"ph": "X"'))
        self.assertTrue(raw.endswith(b"}]"))
        events = json.loads(raw)
        names = {e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "process_name"}
        self.assertTrue({"Python", "Ascend Hardware", "CANN"} <= names)
        self.assertTrue(all(isinstance(e["ts"], str) for e in events if "ts" in e))
        flow_ids = [e["id"] for e in events if e.get("name") == "torch_to_npu"]
        self.assertTrue(flow_ids and all(isinstance(i, int) and i > 2**53 for i in flow_ids))
        self.assertIn("ProfilerStep#13", {e["name"] for e in events})

    def test_parser_log_lines(self):
        lines = [line for line in self.stdout.splitlines() if "profiler.py:" in line]
        pattern = r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] \[INFO\] \[\d+\] profiler\.py: "
        self.assertRegex(lines[0], pattern + "Start parsing profiling data: " + re.escape(str(self.run_dir)))
        self.assertRegex(lines[-1], pattern + r"All profiling data parsed in a total time of \d+:\d\d:\d\d")
        self.assertNotIn("WARNING", self.stdout)

    def test_analyse_reparses_a_copy(self):
        import shutil

        copy = self.tmp / "elsewhere" / self.run_dir.name
        shutil.copytree(self.run_dir, copy)
        shutil.rmtree(copy / "ASCEND_PROFILER_OUTPUT")
        import contextlib
        import io

        with contextlib.redirect_stdout(io.StringIO()):
            P.profiler.analyse(str(copy.parent))
        self.assertEqual(
            (copy / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").read_bytes(),
            (self.out / "kernel_details.csv").read_bytes(),
        )


class LevelAndMetricsTest(FakeTestCase):
    def kernel_header(self, **kwargs):
        _, dirs = self.profile_loop(2, schedule=P.schedule(wait=0, active=1, repeat=1), **kwargs)
        return read_csv(dirs[0] / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv")

    def test_level0_minimal_header_per_release(self):
        rows = self.kernel_header(level=P.ProfilerLevel.Level0)
        self.assertEqual(rows[0], ["Step Id", "Device_id", "Name", "Type", "Accelerator Core", "Start Time(us)",
                                   "Duration(us)", "Wait Time(us)", "Block Num"])
        os.environ["FAKE_TORCH_NPU_BUILD"] = "2.7.1"
        self.assertEqual(self.kernel_header(level=P.ProfilerLevel.Level0, out="p271")[0][-1], "Block Dim")
        os.environ["FAKE_TORCH_NPU_BUILD"] = "2.5.1"
        self.assertNotIn("Device_id", self.kernel_header(level=P.ProfilerLevel.Level0, out="p251")[0])

    def test_level0_oldest_build_matches_the_real_8_column_crlf_file(self):
        os.environ["FAKE_TORCH_NPU_BUILD"] = "2.1.0.post10"
        _, dirs = self.profile_loop(2, schedule=P.schedule(wait=0, active=1, repeat=1), level=P.ProfilerLevel.Level0)
        path = dirs[0] / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
        self.assertEqual(read_csv(path)[0], sample_header(LEVEL0))
        self.assertTrue(path.read_bytes().split(b"\n", 1)[0].endswith(b"\r"))
        self.assertFalse((dirs[0] / "ASCEND_PROFILER_OUTPUT" / "analyse.done").exists())

    def test_no_experimental_config_means_level0(self):
        rows = self.kernel_header(experimental=False)
        self.assertEqual(len(rows[0]), 9)

    def test_level0_writes_no_statistics(self):
        _, dirs = self.profile_loop(2, schedule=P.schedule(wait=0, active=1, repeat=1), level=P.ProfilerLevel.Level0)
        names = set(os.listdir(dirs[0] / "ASCEND_PROFILER_OUTPUT"))
        self.assertFalse(names & {"op_statistic.csv", "api_statistic.csv"})

    def test_metric_groups_match_the_samples(self):
        for metric, sample in ((P.AiCMetrics.MemoryL0, MEMORY_L0), (P.AiCMetrics.ArithmeticUtilization, ARITHMETIC)):
            header = self.kernel_header(aic_metrics=metric, out=metric)[0]
            self.assertEqual(metric_tail(header), metric_tail(sample_header(sample)), metric)

    def test_every_metric_group_gives_consistent_rows(self):
        for name in ("PipeUtilization", "ArithmeticUtilization", "Memory", "MemoryL0", "MemoryUB",
                     "ResourceConflictRatio", "L2Cache", "MemoryAccess", "AiCoreNone"):
            rows = self.kernel_header(aic_metrics=getattr(P.AiCMetrics, name), out=name)
            self.assertTrue(all(len(row) == len(rows[0]) for row in rows), name)
            if name == "AiCoreNone":
                self.assertEqual(rows[0][-1], "Context ID")

    def test_level_none_has_no_device_data(self):
        _, dirs = self.profile_loop(2, schedule=P.schedule(wait=0, active=1, repeat=1),
                                    level=P.ProfilerLevel.Level_none)
        out = dirs[0] / "ASCEND_PROFILER_OUTPUT"
        self.assertFalse((out / "kernel_details.csv").exists())
        self.assertTrue((out / "trace_view.json").read_bytes().endswith(b"},]"))

    def test_profile_memory_writes_memory_files(self):
        _, dirs = self.profile_loop(2, schedule=P.schedule(wait=0, active=1, repeat=1), profile_memory=True)
        names = set(os.listdir(dirs[0] / "ASCEND_PROFILER_OUTPUT"))
        self.assertTrue({"memory_record.csv", "operator_memory.csv", "npu_module_mem.csv"} <= names)

    def test_db_export(self):
        import contextlib
        import io

        with contextlib.redirect_stdout(io.StringIO()):
            prof = P.profile(
                schedule=P.schedule(wait=0, active=1, repeat=1),
                on_trace_ready=P.tensorboard_trace_handler(str(self.tmp / "db")),
                experimental_config=P._ExperimentalConfig(profiler_level=P.ProfilerLevel.Level1,
                                                          export_type=P.ExportType.Db),
            )
            with prof:
                prof.step()
        out = self.run_dirs(self.tmp / "db")[0] / "ASCEND_PROFILER_OUTPUT"
        self.assertEqual(sorted(os.listdir(out)), ["analyse.done", "ascend_pytorch_profiler_0.db"])


class MultiCardTest(FakeTestCase):
    def test_communication_only_with_world_size_above_1(self):
        os.environ.update(RANK="2", WORLD_SIZE="4", LOCAL_RANK="2")
        schedule = P.schedule(wait=0, active=2, repeat=1, skip_first=1)
        _, dirs = self.profile_loop(4, schedule=schedule)
        out = dirs[0] / "ASCEND_PROFILER_OUTPUT"
        with open(out / "communication.json", encoding="utf-8") as handle:
            self.assertEqual(sorted(json.load(handle)), ["step1", "step2"])
        with open(out / "communication_matrix.json", encoding="utf-8") as handle:
            self.assertEqual(sorted(json.load(handle)), ["step1", "step2"])
        self.assertTrue((dirs[0] / "profiler_info_2.json").exists())
        rows = read_csv(out / "kernel_details.csv")
        self.assertEqual({row[1] for row in rows[1:]}, {"2"})
        self.assertIn("COMMUNICATION", {row[8] for row in rows[1:]})

    def test_level0_multi_card_has_communication_files(self):
        # CommunicationParser runs from Level0 (the parser table); its files are gated by data.
        os.environ.update(RANK="1", WORLD_SIZE="2", LOCAL_RANK="1")
        _, dirs = self.profile_loop(2, schedule=P.schedule(wait=0, active=1, repeat=1), level=P.ProfilerLevel.Level0)
        self.assertTrue((dirs[0] / "ASCEND_PROFILER_OUTPUT" / "communication.json").exists())
        metadata = json.loads((dirs[0] / "profiler_metadata.json").read_text(encoding="utf-8"))
        self.assertNotIn("distributed_args", metadata)
        (group,) = metadata["parallel_group_info"].values()
        self.assertEqual((group["group_name"], group["group_rank"], group["global_ranks"]), ("default_group", 1, [0, 1]))


class TruthfulFilesTest(FakeTestCase):
    """What the real builds write, point by point of the wheels' source."""

    def test_rank_id_only_with_rank(self):
        os.environ.pop("RANK", None)
        _, dirs = self.profile_loop(2, schedule=P.schedule(wait=0, active=1, repeat=1))
        info = json.loads((dirs[0] / "profiler_info.json").read_text(encoding="utf-8"))
        self.assertNotIn("rank_id", info)
        os.environ["RANK"] = "3"
        _, dirs = self.profile_loop(2, schedule=P.schedule(wait=0, active=1, repeat=1), out="ranked")
        info = json.loads((dirs[0] / "profiler_info_3.json").read_text(encoding="utf-8"))
        self.assertEqual(info["rank_id"], "3")

    def test_level_none_writes_host_files_only(self):
        _, dirs = self.profile_loop(2, schedule=P.schedule(wait=0, active=1, repeat=1), level=P.ProfilerLevel.Level_none,
                                    profile_memory=True)
        names = set(os.listdir(dirs[0] / "ASCEND_PROFILER_OUTPUT"))
        self.assertEqual(names, {"analyse.done", "trace_view.json", "operator_details.csv", "memory_record.csv",
                                 "operator_memory.csv"})

    def test_no_csv_is_ever_empty(self):
        # Stopped before any step was recorded: no kernels, so no kernel_details.csv at all.
        _, dirs = self.profile_loop(0, schedule=P.schedule(wait=0, active=2, repeat=1), profile_memory=True)
        self.assertEqual(len(dirs), 1)
        self.assertFalse((dirs[0] / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").exists())
        for run_dir in dirs:
            for path in (run_dir / "ASCEND_PROFILER_OUTPUT").glob("*.csv"):
                self.assertGreater(len(read_csv(path)), 1, path.name)


class ModulesTest(FakeTestCase):
    """with_modules=True: nn.Module python_function events nested by time on the Python thread."""

    def test_module_events_only_with_modules(self):
        for with_modules in (False, True):
            schedule = P.schedule(wait=0, active=2, warmup=0, repeat=1, skip_first=0)
            _, dirs = self.profile_loop(3, schedule=schedule, out=f"prof{with_modules}",
                                        with_modules=with_modules)
            events = json.loads((dirs[0] / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").read_bytes())
            modules = [e for e in events if e.get("cat") == "python_function"]
            if not with_modules:
                self.assertEqual(modules, [])
                continue
            names = sorted({e["name"] for e in modules})
            self.assertEqual(names, ["nn.Module: Attention_0", "nn.Module: Attention_1",
                                     "nn.Module: DecoderLayer_0", "nn.Module: DecoderLayer_1",
                                     "nn.Module: FakeModel_0", "nn.Module: MLP_0", "nn.Module: MLP_1"])
            # Two steps, each module once per step; a layer holds its attention.
            self.assertEqual(len(modules), 14)
            span = {e["name"]: (float(e["ts"]), float(e["ts"]) + e["dur"]) for e in modules}
            layer, attention = span["nn.Module: DecoderLayer_1"], span["nn.Module: Attention_1"]
            self.assertTrue(layer[0] <= attention[0] and attention[1] <= layer[1])
