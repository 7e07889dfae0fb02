"""The raw part of a run directory: what collection writes before any parsing.

    {worker}_{YYYYmmddHHMMSSfff}_ascend_pt/
      profiler_info[_{rank}].json, profiler_metadata.json
      FRAMEWORK/torch.op_mark, torch.op_range, torch.task_queue   (binary host data)
      PROF_{nnnnnn}_{ts}_{ID}/host/{data/,start_info,end_info,sample.json}
                               /device_{id}/{data/,start_info,end_info,sample.json}

FRAMEWORK/torch.op_mark holds what the fake's parser needs to rebuild the
output (`analyse` re-parses from it): world size, device, pid, the slow-first-step
flag and, per recorded step, its Step Id and start time in ns.
"""
import json
import os
import random
import re
import string
import struct
import time

from torch_npu.profiler import _env

_MAGIC = b"FAKENPU\x01"
_HEADER = struct.Struct("<iiiiiq")  # world_size, device_id, pid, slow_first_step, scheduled, start_ns
_STEP = struct.Struct("<qq")  # step id, start ns
ASCEND_PT_SUFFIX = "_ascend_pt"
_PROF_DIR = re.compile(r"^PROF_\d+_\d+_[0-9a-zA-Z]+")


class RawRun:
    """The recorded content of one run directory."""

    def __init__(self, world_size, device_id, pid, slow_first_step, scheduled, start_ns, steps):
        self.world_size = world_size
        self.device_id = device_id
        self.pid = pid
        self.slow_first_step = slow_first_step
        self.scheduled = scheduled  # False: no schedule, so no Step Id in the output
        self.start_ns = start_ns
        self.steps = steps  # list of (step number, wall-clock start ns) of the recorded steps


def timestamp_17(now_ns=None):
    """YYYYmmddHHMMSSfff (17 digits), local time."""
    now_ns = time.time_ns() if now_ns is None else now_ns
    seconds, rest = divmod(now_ns, 1_000_000_000)
    return time.strftime("%Y%m%d%H%M%S", time.localtime(seconds)) + f"{rest // 1_000_000:03d}"


def create_run_dir(parent, worker_name):
    """Creates a fresh `{worker}_{ts}_ascend_pt` directory under `parent` (`worker` is
    `{worker_name or hostname}_{pid}`, as torch_npu 2.5.1+ names it)."""
    os.makedirs(parent, exist_ok=True)
    while True:
        path = os.path.join(parent, f"{worker_name}_{timestamp_17()}{ASCEND_PT_SUFFIX}")
        try:
            os.mkdir(path)
            return path
        except FileExistsError:
            time.sleep(0.001)


def write_raw(run_dir, raw, profiler_info, metadata):
    """Writes FRAMEWORK/, PROF_*/, profiler_info and profiler_metadata."""
    framework = os.path.join(run_dir, "FRAMEWORK")
    os.makedirs(framework, exist_ok=True)
    steps = raw.steps
    with open(os.path.join(framework, "torch.op_mark"), "wb") as handle:
        handle.write(_MAGIC)
        handle.write(
            _HEADER.pack(
                raw.world_size, raw.device_id, raw.pid, int(raw.slow_first_step), int(raw.scheduled), raw.start_ns
            )
        )
        handle.write(struct.pack("<i", len(steps)))
        for step_id, start_ns in steps:
            handle.write(_STEP.pack(step_id, start_ns))
    noise = random.Random(raw.start_ns)
    for name in ("torch.op_range", "torch.task_queue"):
        with open(os.path.join(framework, name), "wb") as handle:
            handle.write(bytes(noise.getrandbits(8) for _ in range(256 + 64 * len(steps))))

    prof_id = "".join(noise.choice(string.ascii_uppercase) for _ in range(16))
    prof = os.path.join(run_dir, f"PROF_{noise.randint(1, 999999):06d}_{timestamp_17(raw.start_ns)}_{prof_id}")
    for part in ("host", f"device_{raw.device_id}"):
        data = os.path.join(prof, part, "data")
        os.makedirs(data, exist_ok=True)
        names = ["api_event.data.slice_0"] if part == "host" else [
            f"ts_track.data.{raw.device_id}.slice_0",
            f"hwts.data.{raw.device_id}.slice_0",
            f"aicore.data.{raw.device_id}.slice_0",
        ]
        for name in names:
            with open(os.path.join(data, name), "wb") as handle:
                handle.write(bytes(noise.getrandbits(8) for _ in range(128 + 32 * len(steps))))
        for info in ("start_info", "end_info"):
            with open(os.path.join(prof, part, info), "w", encoding="utf-8") as handle:
                json.dump({"collectionTimeBegin" if info == "start_info" else "collectionTimeEnd": str(raw.start_ns)}, handle)
        with open(os.path.join(prof, part, "sample.json"), "w", encoding="utf-8") as handle:
            json.dump({"devices": str(raw.device_id), "aiCoreMetrics": profiler_info["config"]["experimental_config"]["_aic_metrics"]}, handle)

    rank_id = profiler_info.get("rank_id")
    info_name = "profiler_info.json" if rank_id is None else f"profiler_info_{rank_id}.json"
    with open(os.path.join(run_dir, info_name), "w", encoding="utf-8") as handle:
        json.dump(profiler_info, handle, indent=4)
    with open(os.path.join(run_dir, "profiler_metadata.json"), "w", encoding="utf-8") as handle:
        json.dump(metadata, handle, indent=4)


def read_raw(run_dir):
    """Reads back what write_raw stored; raises ValueError when the raw data is missing or broken."""
    path = os.path.join(run_dir, "FRAMEWORK", "torch.op_mark")
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise ValueError(f"CANN Profiling data does not exist. ({error})") from error
    if not data.startswith(_MAGIC):
        raise ValueError(f"{path}: not raw data written by the fake torch_npu")
    offset = len(_MAGIC)
    world_size, device_id, pid, slow, scheduled, start_ns = _HEADER.unpack_from(data, offset)
    offset += _HEADER.size
    (count,) = struct.unpack_from("<i", data, offset)
    offset += 4
    if count < 0 or len(data) < offset + count * _STEP.size:
        raise ValueError(f"{path}: truncated raw data")
    steps = [_STEP.unpack_from(data, offset + i * _STEP.size) for i in range(count)]
    return RawRun(world_size, device_id, pid, bool(slow), bool(scheduled), start_ns, steps)


def read_profiler_info(run_dir):
    """Returns (rank, profiler_info dict) of a run directory."""
    for name in sorted(os.listdir(run_dir)):
        if name.startswith("profiler_info") and name.endswith(".json"):
            with open(os.path.join(run_dir, name), encoding="utf-8") as handle:
                info = json.load(handle)
            stem = name[: -len(".json")]
            rank = int(stem.rsplit("_", 1)[1]) if stem != "profiler_info" else -1
            return rank, info
    raise ValueError(f"{run_dir}: no profiler_info.json")


def read_metadata(run_dir):
    path = os.path.join(run_dir, "profiler_metadata.json")
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def _is_run_dir(path):
    """Holds FRAMEWORK/ or a PROF_* directory (torch_npu's path manager)."""
    if os.path.isdir(os.path.join(path, "FRAMEWORK")):
        return True
    try:
        names = os.listdir(path)
    except OSError:
        return False
    return any(_PROF_DIR.match(n) and os.path.isdir(os.path.join(path, n)) for n in names)


def find_run_dirs(path):
    """What torch_npu's `analyse(path)` parses: `path` when it is a run directory, else its
    immediate subdirectories that are (sorted); nothing deeper."""
    if not os.path.isdir(path):
        return []
    if _is_run_dir(path):
        return [path]
    subdirs = (os.path.join(path, n) for n in sorted(os.listdir(path)))
    return [d for d in subdirs if os.path.isdir(d) and _is_run_dir(d)]
