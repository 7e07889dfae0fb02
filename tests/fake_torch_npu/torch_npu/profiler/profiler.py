"""torch_npu.profiler.profile, tensorboard_trace_handler, supported_activities and analyse."""
import multiprocessing
import os
import shutil
import socket
import time
from enum import Enum

from torch_npu.profiler import _env, _log, _parser, _raw, _writers
from torch_npu.profiler.experimental_config import _ExperimentalConfig
from torch_npu.profiler.scheduler import ProfilerAction, Schedule

_WARMUP_STOP = (
    "Incorrect schedule: Stop profiler while current state is WARMUP which will result in empty parsed data."
)
_RECORD_STOP = (
    "Incorrect schedule: Stop profiler while current state is RECORD which may result in incomplete parsed data."
)
_RECORD_AND_SAVE_STOP = (
    "Stop profiler while current state is RECORD_AND_SAVE, perhaps the scheduling cycle has not yet completed."
)


class ProfilerActivity(Enum):
    """What to collect: host (CPU) operators and/or device (NPU) activity."""

    CPU = 0
    NPU = 1


def supported_activities():
    """The activities this build supports."""
    return [ProfilerActivity.CPU, ProfilerActivity.NPU]


class _TraceHandler:
    """What tensorboard_trace_handler returns: where to write and whether to parse."""

    def __init__(self, dir_name, worker_name, analyse_flag):
        self.dir_name = os.path.abspath(dir_name) if dir_name else os.getcwd()
        self.worker_name = worker_name
        self.analyse_flag = analyse_flag

    def __call__(self, prof):
        if self.analyse_flag and prof.run_dir:
            _parser.parse_run_dir(prof.run_dir)


def tensorboard_trace_handler(dir_name=None, worker_name=None, analyse_flag=True, async_mode=False):
    """on_trace_ready handler: run directories go under `dir_name` and are parsed on save."""
    del async_mode  # parsing is always synchronous in the fake
    return _TraceHandler(dir_name, worker_name, analyse_flag)


class profile:  # noqa: N801 - torch_npu's name
    """The profiler. Use as a context manager, or call start(), step() per iteration and stop()."""

    def __init__(self, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, use_cuda=None):
        del use_cuda
        self.activities = list(activities) if activities else supported_activities()
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.record_shapes = bool(record_shapes)
        self.profile_memory = bool(profile_memory)
        self.with_stack = bool(with_stack)
        self.with_flops = bool(with_flops)
        self.with_modules = bool(with_modules)
        self.experimental_config = experimental_config or _ExperimentalConfig()
        self.step_num = 0
        self.current_action = None
        self.run_dir = None
        self.metadata = {}
        self._started = False
        self._stopped = False
        self._recording = False
        self._cycle_start_ns = 0
        self._step_start_ns = 0
        self._recorded = []

    # -- public API ---------------------------------------------------------

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.stop()

    def start(self):
        if self._started:
            return
        self._started = True
        self.current_action = self._action(self.step_num)
        self._step_start_ns = time.time_ns()
        self._transit(ProfilerAction.NONE, self.current_action)

    def step(self):
        if not self._started or self._stopped:
            return
        if self._recording:
            self._recorded.append((self.step_num, self._step_start_ns))
        previous = self.current_action
        self.step_num += 1
        self.current_action = self._action(self.step_num)
        self._step_start_ns = time.time_ns()
        self._transit(previous, self.current_action)

    def stop(self):
        if not self._started or self._stopped:
            return
        self._stopped = True
        self._transit(self.current_action, None)

    def add_metadata(self, key, value):
        self.metadata[str(key)] = str(value)

    def add_metadata_json(self, key, value):
        self.metadata[str(key)] = value

    # -- state machine --------------------------------------------------------

    def _action(self, step):
        if self.schedule is None:
            return ProfilerAction.RECORD
        return self.schedule(step)

    def _transit(self, previous, current):
        none, warmup = ProfilerAction.NONE, ProfilerAction.WARMUP
        record, save = ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE
        if current is None:  # stop()
            if previous == warmup:
                _log.warn(_WARMUP_STOP)
                self._discard_trace()
            elif previous == record:
                # Without a schedule this warning appears on every run and is harmless.
                _log.warn(_RECORD_STOP)
                self._stop_trace()
                self._trace_ready()
            elif previous == save:
                _log.warn(_RECORD_AND_SAVE_STOP)
                self._stop_trace()
                self._trace_ready()
            return
        if previous == current and current in (none, warmup, record):
            return
        if previous == none:
            if current in (warmup, record, save):
                self._init_trace()
            if current in (record, save):
                self._start_trace()
        elif previous == warmup:
            if current == none:
                _log.warn("Incorrect schedule: WARMUP followed by NONE")
                self._stop_trace()
            elif current in (record, save):
                self._start_trace()
        elif previous == record:
            if current == none:
                _log.warn("Incorrect schedule: RECORD followed by NONE")
                self._stop_trace()
            elif current == warmup:
                _log.warn("Incorrect schedule: RECORD followed by WARMUP")
                self._stop_trace()
        elif previous == save:
            self._stop_trace()
            self._trace_ready()
            if current in (warmup, record, save):
                self._init_trace()
            if current in (record, save):
                self._start_trace()

    def _init_trace(self):
        handler = self.on_trace_ready
        parent = getattr(handler, "dir_name", None) or os.getcwd()
        worker = getattr(handler, "worker_name", None) or f"{socket.gethostname()}_{os.getpid()}"
        self.run_dir = _raw.create_run_dir(parent, worker)
        self._recorded = []
        self._cycle_start_ns = time.time_ns()

    def _start_trace(self):
        self._recording = True

    def _stop_trace(self):
        self._recording = False
        if self.run_dir is None or not os.path.isdir(self.run_dir):
            return
        raw = _raw.RawRun(
            world_size=_env.world_size(),
            device_id=_env.device_id(),
            pid=os.getpid(),
            slow_first_step=_env.slow_first_step(),
            scheduled=self.schedule is not None,
            start_ns=self._cycle_start_ns,
            steps=list(self._recorded),
        )
        _raw.write_raw(self.run_dir, raw, self._profiler_info(), self._metadata())

    def _trace_ready(self):
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def _discard_trace(self):
        if self.run_dir and os.path.isdir(self.run_dir):
            shutil.rmtree(self.run_dir)
        self.run_dir = None

    def _profiler_info(self):
        end_ns = time.time_ns()
        return {
            "config": {
                "common_config": {
                    "activities": [str(a) for a in self.activities],
                    "schedule": self.schedule.to_dict() if isinstance(self.schedule, Schedule) else {},
                    "record_shapes": self.record_shapes,
                    "profile_memory": self.profile_memory,
                    "with_stack": self.with_stack,
                    "with_flops": self.with_flops,
                    "with_modules": self.with_modules,
                },
                "experimental_config": self.experimental_config.to_dict(),
            },
            "start_info": {
                "syscnt_enable": True,
                "freq": 100,
                "start_cnt": self._cycle_start_ns // 10,
                "start_monotonic": time.monotonic_ns(),
            },
            "end_info": {"collectionTimeEnd": end_ns, "MonotonicTimeEnd": time.monotonic_ns()},
            **_writers.info_identity(),
        }

    def _metadata(self):
        return _writers.profiler_metadata(self.metadata, self.experimental_config.to_dict())


def analyse(profiler_path, max_process_number=None, export_type=None):
    """Re-parses a run directory, or every `*_ascend_pt` directory under `profiler_path`."""
    del max_process_number, export_type
    if multiprocessing.current_process().daemon:
        _log.error("The profiling data cannot be parsed during the daemon process")
        return
    if os.path.islink(profiler_path):
        _log.warn(f"Path {profiler_path} is a soft link, which is not recommended.")
    run_dirs = _raw.find_run_dirs(profiler_path)
    if not run_dirs:
        _log.error(f"No profiling data found in {profiler_path}")
    for run_dir in run_dirs:
        _parser.parse_run_dir(run_dir)
