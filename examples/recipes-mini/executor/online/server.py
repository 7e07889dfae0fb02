# PD-disaggregated serving, emulated on one node for tests:
#
#   python3 executor/online/server.py --role prefill|decode --yaml-file-path <config.yaml>
#
# prefill  runs the prefill phase of one batch of requests and hands them over
#          (the KV transfer is not emulated); the engine's profiler records that
#          one prefill batch.
# decode   receives already-prefilled requests and decodes them until EOS or
#          max_new_tokens tokens (online stop rule). It never sees a prefill
#          batch, so ProfilerManager.status stays None and no profiler is built.
# A real server runs until it is killed, so ProfilerManager.__del__ never runs:
# the process ends with os._exit().
import argparse
import os
import sys

from executor.core.config.inference_config import load_inference_config
from executor.core.config.yaml_loader import ConfigError
from executor.core.engine.execution_engine import ExecutionEngine
from executor.core.forward_data_info.forward_data_info import Request
from executor.core.scheduler.scheduler import Scheduler


# Keeps the engine alive until os._exit(), as a long-running server would.
_SERVING = []


class PrefillScheduler(Scheduler):
    def _on_prefill_complete(self, request):
        # Handed to a decode node instead of decoding here.
        self.finished_requests[request.request_id] = request


def prompts(count):
    return [[(i * 37 + p * 11) % 32000 for p in range(6 + i % 5)] for i in range(count)]


def serve(role, yaml_path):
    config = load_inference_config(yaml_path, disaggregation_mode=role.upper())
    engine = ExecutionEngine(config)
    _SERVING.append(engine)
    engine.warm_up()
    batch_size = config.scheduler_config.batch_size
    if role == "prefill":
        scheduler = PrefillScheduler(config, mode="online")
        for prompt in prompts(batch_size):
            scheduler.add_request(prompt)
        forwards = 0
        while scheduler.waiting_queue:
            scheduler.run_step(engine, phase="prefill")
            forwards += 1
        print(f"[{role}] {forwards} prefill forward(s) for {batch_size} requests", flush=True)
    else:
        scheduler = Scheduler(config, mode="online")
        for index, prompt in enumerate(prompts(batch_size)):
            request = Request(index, prompt)
            request.output_id_list.append(1)  # the first token, made by the prefill node
            scheduler.add_prefilled_request(request)
        forwards = 0
        while scheduler.running_requests:
            scheduler.run_step(engine, phase="decode")
            forwards += 1
        print(f"[{role}] {forwards} decode forwards for {batch_size} requests", flush=True)
    print(f"[{role}] profiler status: {engine.profiler.status}", flush=True)


def main():
    parser = argparse.ArgumentParser(description="PD-disaggregated server (emulated).")
    parser.add_argument("--role", choices=["prefill", "decode"], required=True)
    parser.add_argument("--yaml-file-path", required=True)
    args = parser.parse_args()
    try:
        serve(args.role, args.yaml_file_path)
    except (ConfigError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
