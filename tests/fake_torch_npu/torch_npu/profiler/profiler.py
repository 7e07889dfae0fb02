"""torch_npu.profiler.profile, tensorboard_trace_handler, supported_activities and analyse."""
import functools
import multiprocessing
import os
import shutil
import socket
import time
from enum import Enum

from torch_npu.profiler import _env, _log, _params, _parser, _raw, _writers
from torch_npu.profiler.experimental_config import _ExperimentalConfig
from torch_npu.profiler.scheduler import ProfilerAction, _default_schedule_fn

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


class _PathCreator:
    """torch_npu's process-wide output directory (a singleton `ProfPathCreator`): set when
    `tensorboard_trace_handler(...)` is *created*, reset by `start()` of a profiler without a
    handler. Every profiler of the process writes where it last pointed."""

    dir_name = None
    worker_name = None

    @classmethod
    def init(cls, dir_name=None, worker_name=None):
        cls.dir_name = os.path.realpath(dir_name) if dir_name else None
        cls.worker_name = worker_name

    @classmethod
    def parent(cls):
        """`dir_name`, else `$ASCEND_WORK_PATH/profiling_data`, else the working directory."""
        if cls.dir_name:
            return cls.dir_name
        work = os.getenv("ASCEND_WORK_PATH")
        if work:
            return os.path.join(os.path.abspath(work), "profiling_data")
        return os.getcwd()

    @classmethod
    def worker(cls):
        """`{worker_name}_{pid}`, or `{hostname}_{pid}`."""
        return f"{cls.worker_name or socket.gethostname()}_{os.getpid()}"


def _no_exception(func):
    """torch_npu's `no_exception_func`: an exception is printed as an ERROR line and swallowed."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except Exception as error:  # noqa: BLE001 - torch_npu swallows every exception here
            _log.error(f"Call {func.__name__} failed. Exception: {error}")
            return None

    return wrapper


class _TraceHandler:
    """What tensorboard_trace_handler returns: parses the saved run directory (or not)."""

    def __init__(self, analyse_flag):
        self.analyse_flag = analyse_flag

    def __call__(self, prof):
        if self.analyse_flag and prof.run_dir and not _refused_in_daemon():
            _parser.parse_run_dir(prof.run_dir)


def _refused_in_daemon():
    """torch_npu's parser (`NpuProfiler.analyse`, behind the trace handler and `analyse`) does not
    run inside a daemon process (vLLM's TP>1 workers): it prints an error and leaves raw data."""
    if multiprocessing.current_process().daemon:
        _log.error("The profiling data cannot be parsed during the daemon process, it is recommended "
                   "that you use an offline parsing interface to parse the collected data.")
        return True
    return False


@_no_exception
@_params.per_build
def tensorboard_trace_handler(dir_name=None, worker_name=None, analyse_flag=True, async_mode=False):
    """on_trace_ready handler. Creating it points the process's output directory at `dir_name`."""
    del async_mode  # parsing is always synchronous in the fake
    _PathCreator.init(dir_name=dir_name, worker_name=worker_name)
    if not isinstance(analyse_flag, bool):
        _log.warn("analyse_flag is not bool, set by default.")
        analyse_flag = True
    return _TraceHandler(analyse_flag)


class profile(metaclass=_params.PerBuildClass):  # noqa: N801 - torch_npu's name
    """The profiler. Use as a context manager, or call start(), step() per iteration and stop()."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, custom_trace_id_callback=None,
                 use_cuda=None):
        del execution_trace_observer, custom_trace_id_callback  # no trace ids nor observers in the fake
        if use_cuda is not None:
            _log.warn("This is npu environment, use_cuda is invalid")
        self.activities = list(activities) if activities else supported_activities()
        if schedule and callable(schedule):
            self.schedule = schedule
            self.record_steps = True
        else:
            if schedule:
                _log.warn("schedule is not Callable, set by default.")
            self.schedule = _default_schedule_fn
            self.record_steps = False
        if on_trace_ready and not callable(on_trace_ready):
            _log.warn("on_trace_ready is not Callable, set by default.")
            on_trace_ready = None
        self.on_trace_ready = on_trace_ready
        self.record_shapes = bool(record_shapes)
        self.profile_memory = bool(profile_memory)
        self.with_stack = bool(with_stack)
        self.with_flops = bool(with_flops)
        self.with_modules = bool(with_modules)
        self.experimental_config = experimental_config or _ExperimentalConfig()
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self.run_dir = None
        self.metadata = {}
        self.stopped = False
        self._recording = False
        self._cycle_start_ns = 0
        self._step_start_ns = time.time_ns()
        self._recorded = []

    # -- public API (torch_npu's profile.start/step/stop) --------------------------

    @_no_exception
    def __enter__(self):
        self.start()
        return self

    @_no_exception
    def __exit__(self, exc_type, exc_val, exc_tb):
        self.stop()

    @_no_exception
    def start(self):
        self.stopped = False
        if not self.on_trace_ready:
            _PathCreator.init()
        self._step_start_ns = time.time_ns()
        self._transit(ProfilerAction.NONE, self.current_action)

    @_no_exception
    def step(self):
        """Closes the open step and moves on; also before start(), as torch_npu does."""
        if self.stopped:
            _log.warn("Profiler is stopped, step takes no effect!")
            return
        self._close_step()
        previous = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._step_start_ns = time.time_ns()
        self._transit(previous, self.current_action)

    @_no_exception
    def stop(self):
        """Closes the open step, then runs the exit action of the current state (RECORD and
        RECORD_AND_SAVE save and parse the cycle). torch_npu records the open step too, but no
        forward ran in it (forwards end with step()), so it has no kernels and the fake writes
        no Step Id for it. Not idempotent: a second stop() warns and parses again."""
        self._transit(self.current_action, None)
        self.stopped = True

    def add_metadata(self, key, value):
        self.metadata[str(key)] = str(value)

    def add_metadata_json(self, key, value):
        self.metadata[str(key)] = value

    # -- state machine --------------------------------------------------------

    def _close_step(self):
        """step() ends the open step, which ran one forward: recorded when the trace is
        recording (its Step Id is its number)."""
        if self._recording:
            self._recorded.append((self.step_num, self._step_start_ns))

    def _transit(self, previous, current):
        none, warmup = ProfilerAction.NONE, ProfilerAction.WARMUP
        record, save = ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE
        if current is None:  # stop()
            if previous == warmup:
                _log.warn(_WARMUP_STOP)
                self._discard_trace()
            elif previous in (record, save):
                # Without a schedule the RECORD warning appears on every run. A second stop()
                # finds the trace stopped already and parses it again.
                _log.warn(_RECORD_STOP if previous == record else _RECORD_AND_SAVE_STOP)
                if not self.stopped:
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
        self.run_dir = _raw.create_run_dir(_PathCreator.parent(), _PathCreator.worker())
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
            scheduled=self.record_steps,
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
                    # schedule.__dict__: a Schedule's arguments, `{}` for any function (the
                    # default schedule, torch.profiler.schedule, a lambda, a partial).
                    "schedule": dict(getattr(self.schedule, "__dict__", {})),
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


@_no_exception
@_params.per_build
def analyse(profiler_path, max_process_number=None, export_type=None):
    """Re-parses `profiler_path` when it is a run directory, else each of its immediate
    subdirectories that is one (holds FRAMEWORK/ or a PROF_* directory); nothing deeper and
    nothing printed when none is found, as torch_npu's path manager does."""
    del max_process_number, export_type
    if _refused_in_daemon():
        return
    if os.path.islink(profiler_path):
        _log.warn(f"Path {profiler_path} is a soft link, which is not recommended.")
    for run_dir in _raw.find_run_dirs(profiler_path):
        _parser.parse_run_dir(run_dir)
