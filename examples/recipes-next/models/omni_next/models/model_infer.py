# Part of recipes-next: omni-next's multimodal request loop. It builds the shared engine (and so
# its ProfilerManager) but runs its own generation: per request the media encoder, then the
# prompt's prefill (so encode and prefill alternate), then one decode loop for all requests,
# each ending at its own generation.max_new_tokens or at EOS.
import json
import os

from executor.core.config.inference_config import load_inference_config
from executor.core.engine.execution_engine import ExecutionEngine
from executor.utils.profiler_context import ProfilerPhase

# The toy decoder emits this token id as end of sequence.
EOS = 2


def load_requests(settings):
    options = settings["model_config"]["custom_params"]["multimodal"]
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), options["request_file"])
    with open(path, encoding="utf-8") as stream:
        return json.load(stream)["requests"]


def run_multimodal(yaml_path, settings):
    config = load_inference_config(yaml_path)
    requests = load_requests(settings)
    # The largest request budget sizes the engine (it replaces scheduler_config.max_new_tokens).
    config.scheduler_config.max_new_tokens = max(r["generation"]["max_new_tokens"] for r in requests)
    engine = ExecutionEngine(config)
    rank = int(os.getenv("LOCAL_RANK", "0"))
    live = []
    for index, request in enumerate(requests):
        engine.profiler.set_status(ProfilerPhase.MM_ENCODE)
        engine.profiler.step()
        engine.profiler.set_status(ProfilerPhase.PREFILL)
        engine.profiler.step()
        live.append({"id": request["id"], "left": request["generation"]["max_new_tokens"] - 1,
                     "eos_at": request.get("eos_at"), "made": 1, "index": index})
    decode_forwards = 0
    while any(r["left"] > 0 for r in live):
        engine.profiler.set_status(ProfilerPhase.DECODE)
        decode_forwards += 1
        for r in live:
            if r["left"] <= 0:
                continue
            r["made"] += 1
            token = EOS if r["eos_at"] is not None and r["made"] >= r["eos_at"] else 5
            r["left"] = 0 if token == EOS else r["left"] - 1
        engine.profiler.step()
    engine.profiler.current_profiler.stop()
    engine.profiler.enable_profiler = False
    print(f"[rank {rank}] {len(requests)} multimodal requests, {decode_forwards} decode forwards", flush=True)
    return 0
