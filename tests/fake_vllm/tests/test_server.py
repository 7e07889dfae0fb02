"""The fake vLLM server against the facts it emulates (README.md), one test per fact. Each test
starts `bin/vllm serve …` in its own process group and ends the group afterwards."""
import glob
import json
import os
import pathlib
import signal
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent
VLLM = HERE.parent / "bin" / "vllm"


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def request(port, path, body=None, method=None):
    """(status, body bytes) of one request; status None when the port is closed."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data,
                                 method=method or ("POST" if data is not None else "GET"))
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except (ConnectionError, urllib.error.URLError):
        return None, b""


class Server:
    def __init__(self, workdir, args, env=None):
        self.port = free_port()
        self.workdir = workdir
        self.log = open(os.path.join(workdir, "server.log"), "w+b")
        environ = {k: v for k, v in os.environ.items() if not k.startswith(("FAKE_VLLM_", "VLLM_"))}
        environ.update(env or {})
        environ["PYTHONDONTWRITEBYTECODE"] = "1"
        self.proc = subprocess.Popen(
            [str(VLLM), "serve", "fake-model", "--port", str(self.port), *args],
            cwd=workdir, env=environ, stdout=self.log, stderr=subprocess.STDOUT, process_group=0,
        )

    def wait_healthy(self, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if request(self.port, "/health")[0] == 200:
                return
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited: {self.output()}")
            time.sleep(0.05)
        raise AssertionError(f"never healthy: {self.output()}")

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def end(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.log.close()


class ServerTestCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.prof = os.path.join(self.dir, "prof")
        self.servers = []

    def tearDown(self):
        for server in self.servers:
            server.end()
        self.tmp.cleanup()

    def serve(self, args=(), env=None, healthy=True):
        server = Server(self.dir, list(args), env)
        self.servers.append(server)
        if healthy:
            server.wait_healthy()
        return server

    def config(self, **extra):
        return ["--profiler-config", json.dumps({"profiler": "torch", "torch_profiler_dir": self.prof, **extra})]

    def profile_once(self, server, requests=2):
        self.assertEqual(request(server.port, "/start_profile", {}), (200, b""))
        for _ in range(requests):
            status, _ = request(server.port, "/v1/completions", {"prompt": "a b c", "max_tokens": 4})
            self.assertEqual(status, 200)
        self.assertEqual(request(server.port, "/stop_profile", {}), (200, b""))

    def runs(self):
        return sorted(glob.glob(os.path.join(self.prof, "*_ascend_pt")))

    def wait_parsed(self, run, timeout=10):
        deadline = time.monotonic() + timeout
        path = os.path.join(run, "ASCEND_PROFILER_OUTPUT", "kernel_details.csv")
        while time.monotonic() < deadline and not os.path.exists(path):
            time.sleep(0.05)
        return os.path.exists(path)

    def info(self, run):
        [path] = glob.glob(os.path.join(run, "profiler_info*.json"))
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)


class Endpoints(ServerTestCase):
    def test_port_opens_only_when_the_engine_is_up(self):
        server = self.serve(env={"FAKE_VLLM_FAULT": "never-healthy"}, healthy=False)
        time.sleep(1.0)
        self.assertIsNone(server.proc.poll())
        self.assertEqual(request(server.port, "/health")[0], None)

    def test_health_is_200_and_empty(self):
        server = self.serve()
        self.assertEqual(request(server.port, "/health"), (200, b""))

    def test_profile_routes_are_404_without_profiling_configured(self):
        server = self.serve()
        self.assertEqual(request(server.port, "/start_profile", {})[0], 404)
        self.assertEqual(request(server.port, "/stop_profile", {})[0], 404)

    def test_completions_have_the_openai_shape_and_usage(self):
        server = self.serve()
        status, body = request(server.port, "/v1/completions",
                               {"model": "fake-model", "prompt": "one two three", "max_tokens": 5, "ignore_eos": True})
        self.assertEqual(status, 200)
        reply = json.loads(body)
        self.assertTrue(reply["id"].startswith("cmpl-"))
        self.assertEqual(reply["object"], "text_completion")
        self.assertIsInstance(reply["choices"][0]["text"], str)
        self.assertEqual(reply["usage"], {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8})

    def test_chat_completions_have_the_openai_shape_and_usage(self):
        server = self.serve()
        status, body = request(server.port, "/v1/chat/completions",
                               {"messages": [{"role": "user", "content": "hi there"}], "max_tokens": 2})
        self.assertEqual(status, 200)
        reply = json.loads(body)
        self.assertEqual(reply["object"], "chat.completion")
        self.assertEqual(reply["choices"][0]["message"]["role"], "assistant")
        self.assertEqual(reply["usage"]["completion_tokens"], 2)

    def test_an_unknown_model_is_404(self):
        server = self.serve()
        self.assertEqual(request(server.port, "/v1/completions", {"model": "other", "prompt": "x"})[0], 404)

    def test_a_dead_engine_fails_the_request_says_503_then_the_server_exits(self):
        server = self.serve(self.config(), env={"FAKE_VLLM_FAULT": "die"})
        self.assertEqual(request(server.port, "/start_profile", {})[0], 200)
        self.assertEqual(request(server.port, "/v1/completions", {"prompt": "x", "max_tokens": 3})[0], 500)
        self.assertIn(request(server.port, "/health")[0], (503, None))
        self.assertEqual(server.proc.wait(timeout=10), 1)

    def test_sigterm_shuts_it_down(self):
        server = self.serve()
        os.killpg(server.proc.pid, signal.SIGTERM)
        self.assertEqual(server.proc.wait(timeout=10), 0)

    def test_ignore_sigterm_needs_sigkill(self):
        server = self.serve(env={"FAKE_VLLM_FAULT": "ignore-sigterm"})
        os.killpg(server.proc.pid, signal.SIGTERM)
        time.sleep(0.5)
        self.assertIsNone(server.proc.poll())
        self.assertEqual(request(server.port, "/health")[0], 200)


class ConfigStyles(ServerTestCase):
    def test_env_style_names_runs_by_host_and_keeps_stack_on_by_default(self):
        server = self.serve(env={"FAKE_VLLM_ERA": "env", "VLLM_TORCH_PROFILER_DIR": self.prof})
        self.profile_once(server)
        [run] = self.runs()
        self.assertTrue(os.path.basename(run).startswith(socket.gethostname() + "_"))
        self.assertTrue(self.wait_parsed(run))
        common = self.info(run)["config"]["common_config"]
        self.assertTrue(common["with_stack"])
        self.assertFalse(common["with_modules"])
        experimental = self.info(run)["config"]["experimental_config"]
        self.assertEqual(experimental["_aic_metrics"], "ACL_AICORE_NONE")

    def test_env_style_stack_off_with_zero(self):
        server = self.serve(env={"FAKE_VLLM_ERA": "env", "VLLM_TORCH_PROFILER_DIR": self.prof,
                                 "VLLM_TORCH_PROFILER_WITH_STACK": "0"})
        self.profile_once(server)
        [run] = self.runs()
        self.assertTrue(self.wait_parsed(run))
        self.assertFalse(self.info(run)["config"]["common_config"]["with_stack"])

    def test_env_style_refuses_profiler_config(self):
        server = self.serve(self.config(), env={"FAKE_VLLM_ERA": "env"}, healthy=False)
        self.assertEqual(server.proc.wait(timeout=10), 2)

    def test_profiler_config_json_names_runs_by_rank_and_stack_switches_modules(self):
        server = self.serve(self.config(torch_profiler_with_stack=True), env={"FAKE_VLLM_ERA": "profiler-config"})
        self.profile_once(server)
        [run] = self.runs()
        self.assertTrue(os.path.basename(run).startswith("dp0_pp0_tp0_dcp0_ep0_rank0_"))
        common = self.info(run)["config"]["common_config"]
        self.assertFalse(common["with_stack"])
        self.assertTrue(common["with_modules"])
        self.assertEqual(self.info(run)["config"]["experimental_config"]["_aic_metrics"], "ACL_AICORE_NONE")

    def test_profiler_config_dotted_keys(self):
        server = self.serve(["--profiler-config.profiler=torch", "--profiler-config.torch_profiler_dir", self.prof,
                             "--profiler-config.torch_profiler_with_stack=false"],
                            env={"FAKE_VLLM_ERA": "pipe"})
        self.profile_once(server)
        [run] = self.runs()
        self.assertTrue(self.wait_parsed(run))
        self.assertFalse(self.info(run)["config"]["common_config"]["with_modules"])
        self.assertEqual(self.info(run)["config"]["experimental_config"]["_aic_metrics"],
                         "ACL_AICORE_PIPE_UTILIZATION")

    def test_profiler_config_era_ignores_the_environment(self):
        server = self.serve(env={"FAKE_VLLM_ERA": "pipe", "VLLM_TORCH_PROFILER_DIR": self.prof})
        self.assertEqual(request(server.port, "/start_profile", {})[0], 404)


class Output(ServerTestCase):
    def test_tp1_parses_in_the_engine(self):
        server = self.serve(self.config(), env={"FAKE_VLLM_ERA": "pipe"})
        self.profile_once(server)
        [run] = self.runs()
        # Synchronous era: the output is there when stop returns.
        self.assertTrue(os.path.exists(os.path.join(run, "ASCEND_PROFILER_OUTPUT", "kernel_details.csv")))

    def test_tp4_leaves_one_raw_directory_per_rank(self):
        server = self.serve([*self.config(), "--tensor-parallel-size", "4"], env={"FAKE_VLLM_ERA": "pipe"})
        self.profile_once(server)
        runs = self.runs()
        self.assertEqual([os.path.basename(r).split("_rank")[1][0] for r in runs], ["0", "1", "2", "3"])
        time.sleep(0.5)
        for run in runs:
            self.assertTrue(os.path.isdir(os.path.join(run, "FRAMEWORK")))
            self.assertFalse(os.path.exists(os.path.join(run, "ASCEND_PROFILER_OUTPUT")))
        self.assertIn("cannot be parsed during the daemon process", server.output())

    def test_frontend_trace_unless_ignore_frontend(self):
        server = self.serve(self.config())
        self.profile_once(server)
        self.assertEqual(len(glob.glob(os.path.join(self.prof, "*.async_llm.*.pt.trace.json"))), 1)

    def test_ignore_frontend_writes_no_frontend_trace(self):
        server = self.serve(self.config(ignore_frontend=True))
        self.profile_once(server)
        time.sleep(0.5)
        self.assertEqual(glob.glob(os.path.join(self.prof, "*.async_llm*")), [])

    def test_async_stop_returns_before_the_output_exists(self):
        server = self.serve(self.config(), env={"FAKE_VLLM_ERA": "async"})
        self.profile_once(server)
        [run] = self.runs()
        self.assertFalse(os.path.exists(os.path.join(run, "ASCEND_PROFILER_OUTPUT")))
        self.assertTrue(self.wait_parsed(run))

    def test_slow_stop_keeps_writing_after_stop_returns(self):
        server = self.serve(self.config(), env={"FAKE_VLLM_ERA": "pipe", "FAKE_VLLM_FAULT": "slow-stop",
                                                "FAKE_VLLM_SLOW_SECONDS": "1"})
        self.profile_once(server)
        [run] = self.runs()
        path = os.path.join(run, "FRAMEWORK", "fake_vllm_slow_write.bin")
        time.sleep(0.1)
        first = os.path.getsize(path)
        time.sleep(0.5)
        self.assertGreater(os.path.getsize(path), first)
        self.assertTrue(self.wait_parsed(run))

    def test_each_start_stop_pair_is_one_directory_per_rank(self):
        server = self.serve([*self.config(), "-tp", "2"], env={"FAKE_VLLM_ERA": "pipe"})
        self.profile_once(server)
        self.profile_once(server)
        self.assertEqual(len(self.runs()), 4)


if __name__ == "__main__":
    unittest.main()
