"""Stub torch_npu.profiler: records each profiler's configuration and step() count.

Each profiler appends one JSON line to the file named by NPUPROF_STUB_LOG when it stops.
"""
import json
import os


class ProfilerActivity:
    NPU = "NPU"
    CPU = "CPU"


class ProfilerLevel:
    Level0 = "Level0"
    Level1 = "Level1"
    Level2 = "Level2"


class AiCMetrics:
    AiCoreNone = "AiCoreNone"
    PipeUtilization = "PipeUtilization"


class _ExperimentalConfig:
    def __init__(self, **kwargs):
        self.kwargs = kwargs


def schedule(wait, active, warmup=0, repeat=0, skip_first=0):
    return {"wait": wait, "active": active, "warmup": warmup, "repeat": repeat, "skip_first": skip_first}


def tensorboard_trace_handler(dir_name):
    return {"handler": "tensorboard_trace_handler", "dir": dir_name}


class profile:
    def __init__(self, activities=None, schedule=None, on_trace_ready=None, experimental_config=None, **kwargs):
        self.activities = list(activities or [])
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.experimental = experimental_config.kwargs if experimental_config is not None else None
        self.options = kwargs
        self.steps = 0
        self.running = False

    def start(self):
        self.running = True

    def step(self):
        if not self.running:
            raise RuntimeError("step() on a profiler that is not running")
        self.steps += 1

    def stop(self):
        self.running = False
        path = os.environ.get("NPUPROF_STUB_LOG")
        if path:
            record = {
                "activities": self.activities,
                "schedule": self.schedule,
                "experimental": self.experimental,
                "save_dir": (self.on_trace_ready or {}).get("dir"),
                "options": self.options,
                "steps": self.steps,
            }
            with open(path, "a", encoding="utf-8") as log:
                log.write(json.dumps(record, sort_keys=True) + "\n")

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        self.stop()
        return False
