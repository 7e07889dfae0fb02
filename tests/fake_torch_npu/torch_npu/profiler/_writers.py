"""Writers of the ASCEND_PROFILER_OUTPUT files, in torch_npu's formats."""
import csv
import json
import os
import sqlite3

from torch_npu.profiler import _env
from torch_npu.profiler import _headers as headers
from torch_npu.profiler.experimental_config import ProfilerLevel
from torch_npu.profiler._timeline import _LAYER, GROUP_ID, STREAM_ID, start_time_text, ts_text, us

_HOST_OP = {
    "RmsNorm": "npu::npu_rms_norm", "MatMulV3": "aten::mm", "ApplyRotaryPosEmb": "npu::npu_apply_rotary_pos_emb",
    "FusedInferAttentionScore": "npu::npu_fused_infer_attention_score", "Add": "aten::add",
    "SwiGlu": "npu::npu_swiglu", "ArgMaxV2": "aten::argmax",
}


class RunContext:
    """What the parser knows about a run: configuration and identity."""

    def __init__(self, rank, device_id, pid, world_size, level, aic_metrics, activities, profile_memory,
                 scheduled, export_type, with_modules=False):
        self.with_modules = with_modules
        self.rank = rank
        self.device_id = device_id
        self.pid = pid
        self.world_size = world_size
        self.level = level
        self.aic_metrics = aic_metrics
        self.activities = activities
        self.profile_memory = profile_memory
        self.scheduled = scheduled
        self.export_type = export_type

    @property
    def hardware_pid(self):
        return 800 + self.device_id

    @property
    def cann_pid(self):
        return self.pid * 100 + 2

    @property
    def overlap_pid(self):
        # Exceeds 2^32 for ordinary pids, as in real traces.
        return self.pid * 10_000 + 1_100 + self.device_id


def _write_csv(out_dir, name, header, rows):
    """Writes a CSV, or nothing when it has no rows: torch_npu never writes an empty CSV
    (`FileManager.create_csv_file` returns without data)."""
    if not rows:
        return
    with open(os.path.join(out_dir, name), "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\r\n" if _env.uses_crlf() else "\n")
        writer.writerow(header)
        writer.writerows(rows)


def info_identity():
    """profiler_info's build and rank keys: versions from 2.5.1; `rank_id` only when RANK is set
    (a string; torch.distributed would give an int), and then the file is profiler_info_{rank}.json."""
    identity = {}
    if _env.records_versions():
        identity["torch_npu_version"] = _env.torch_npu_version()
        identity["cann_version"] = _env.cann_version()
    rank = os.getenv("RANK")
    if rank not in (None, ""):
        identity["rank_id"] = rank
    return identity


def profiler_metadata(user_metadata, experimental):
    """profiler_metadata.json: ENV_VARIABLES (text export), parallel_group_info (the HCCL groups
    with their global ranks, when distributed), the user's add_metadata entries. No build writes
    `distributed_args`."""
    data = {}
    if "text" in experimental.get("_export_type", ["text"]):
        data["ENV_VARIABLES"] = {name: os.getenv(name, "") for name in ("ASCEND_GLOBAL_LOG_LEVEL", "HCCL_RDMA_TC")}
    world = _env.world_size()
    if world > 1:
        data["parallel_group_info"] = {
            f"127.0.0.1%lo_60000_0_{1764246877073569 + world}": {
                "group_name": "default_group",
                "group_rank": _env.rank(),
                "global_ranks": list(range(world)),
            }
        }
    data.update(user_metadata)
    return data


def _number(value):
    return repr(round(value, 3))


def _metric(kernel, column_index, base):
    ratio = ((kernel.index * 31 + kernel.step * 17 + column_index * 7) % 97) / 100.0
    return ratio, base * ratio


def kernel_row(kernel, header, ctx, first):
    uses_aic = kernel.core in ("AI_CORE", "MIX_AIC", "MIX_AIV")
    uses_aiv = kernel.core in ("AI_VECTOR_CORE", "MIX_AIC", "MIX_AIV")
    comm = kernel.is_communication
    dur_us = us(kernel.dur_ns)
    values = {
        "Step Id": str(kernel.step),
        "Device_id": str(ctx.device_id),
        "Model ID": "4294967295",
        "Task ID": "N/A" if comm else str(kernel.task_id),
        "Stream ID": "N/A" if comm else str(STREAM_ID),
        "Name": kernel.name,
        "Type": kernel.op_type,
        "OP State": "N/A" if comm else "dynamic",
        "Accelerator Core": kernel.core,
        "Start Time(us)": start_time_text(kernel.start_ns),
        "Duration(us)": f"{dur_us:.3f}",
        "Wait Time(us)": "0" if first else f"{us(kernel.wait_ns):.6f}",
        "Block Dim": "0" if comm else ("20" if uses_aic else "40"),
        "Mix Block Dim": "N/A" if comm else ("40" if kernel.core.startswith("MIX") else "0"),
        "HF32 Eligible": "N/A" if comm else "NO",
        "Context ID": "N/A",
    }
    values["Block Num"] = values["Block Dim"]
    if kernel.shapes and not comm:
        for name, value in zip(("Input Shapes", "Input Data Types", "Input Formats", "Output Shapes",
                                "Output Data Types", "Output Formats"), kernel.shapes):
            values[name] = value
    if not comm:
        aic_time = dur_us * 0.97 if uses_aic else 0.0
        aiv_time = dur_us * 0.95 if uses_aiv else 0.0
        values["aicore_time(us)"] = _number(aic_time)
        values["aic_total_cycles"] = str(int(aic_time * 33_000))
        values["aiv_time(us)"] = _number(aiv_time)
        values["aiv_total_cycles"] = str(int(aiv_time * 66_000))
        for index, column in enumerate(header):
            if column in values or not column.startswith(("aic_", "aiv_", "cube_")):
                continue
            active = uses_aic if column.startswith(("aic_", "cube_")) else uses_aiv
            ratio, scaled = _metric(kernel, index, aic_time if column.startswith("aic_") else aiv_time)
            if not active:
                values[column] = "0.000" if column.startswith("cube_") else "0.0"
            elif column.startswith("cube_"):
                values[column] = f"{ratio * 100:.3f}"
            elif "(us)" in column or "(GB/s)" in column or "(KB)" in column or "fops" in column:
                values[column] = _number(scaled)
            else:
                values[column] = _number(ratio)
    return [values.get(column, "N/A") for column in header]


def write_kernel_details(out_dir, timeline, ctx):
    header = headers.kernel_details_header(ctx.level, ctx.aic_metrics, ctx.scheduled)
    rows = [kernel_row(kernel, header, ctx, position == 0) for position, kernel in enumerate(timeline.kernels)]
    _write_csv(out_dir, "kernel_details.csv", header, rows)


def write_step_trace_time(out_dir, timeline, ctx):
    """One row per recorded step; skipped when the timeline has no computing or communication."""
    rows = []
    if timeline.kernels:
        for step in timeline.steps:
            stage = us(step.end_ns - step.start_ns)
            computing = us(step.computing_ns)
            communication = us(step.communication_ns)
            row = [
                str(step.step) if ctx.scheduled else "",
                repr(computing), repr(communication), "0.0", repr(communication),
                repr(stage - computing - communication), repr(stage), "0", repr(communication),
                repr(us(step.preparing_ns)),
            ]
            if _env.has_device_id_columns():
                row.insert(0, str(ctx.device_id))
            rows.append(row)
    _write_csv(out_dir, "step_trace_time.csv", headers.without_device_id(headers.STEP_TRACE_TIME), rows)


def write_op_statistic(out_dir, timeline, ctx):
    groups = {}
    for kernel in timeline.kernels:
        if not kernel.is_communication:
            groups.setdefault((kernel.op_type, kernel.core), []).append(us(kernel.dur_ns))
    total = sum(sum(v) for v in groups.values()) or 1.0
    rows = []
    for (op_type, core), durations in sorted(groups.items(), key=lambda item: -sum(item[1])):
        row = [op_type, core, str(len(durations)), _number(sum(durations)), _number(min(durations)),
               _number(sum(durations) / len(durations)), _number(max(durations)),
               _number(100.0 * sum(durations) / total)]
        if _env.has_device_id_columns():
            row.insert(0, str(ctx.device_id))
        rows.append(row)
    _write_csv(out_dir, "op_statistic.csv", headers.without_device_id(headers.OP_STATISTIC), rows)


def write_api_statistic(out_dir, timeline, ctx):
    apis = {}
    for kernel in timeline.kernels:
        if not kernel.is_communication:
            apis.setdefault(("acl", kernel.name.split("_", 1)[0]), []).append(4.0 + (kernel.index % 5) * 0.75)
            apis.setdefault(("runtime", "KernelLaunch"), []).append(1.5 + (kernel.step % 3) * 0.25)
    rows = []
    for (level, name), times in sorted(apis.items()):
        mean = sum(times) / len(times)
        variance = sum((t - mean) ** 2 for t in times) / len(times)
        row = [level, name, _number(sum(times)), str(len(times)), _number(mean), _number(min(times)),
               _number(max(times)), _number(variance)]
        if _env.has_device_id_columns():
            row.insert(0, "host")
        rows.append(row)
    _write_csv(out_dir, "api_statistic.csv", headers.without_device_id(headers.API_STATISTIC), rows)


def write_operator_details(out_dir, timeline, device_data):
    """The host operators (device durations 0 without device data, as at Level_none)."""
    ops = {}
    for kernel in timeline.kernels:
        if not kernel.is_communication:
            ops.setdefault(_HOST_OP.get(kernel.op_type, "aten::" + kernel.op_type.lower()), []).append(kernel)
    rows = []
    for name, kernels in sorted(ops.items()):
        device = sum(us(k.dur_ns) for k in kernels) if device_data else 0.0
        host = 20.0 * len(kernels)
        rows.append([name, "", "", _number(host), _number(host), _number(device), _number(device),
                     _number(device), _number(device)])
    _write_csv(out_dir, "operator_details.csv", headers.OPERATOR_DETAILS, rows)


def write_memory(out_dir, timeline, ctx):
    start = timeline.steps[0].start_ns if timeline.steps else 0
    _write_csv(out_dir, "memory_record.csv", headers.MEMORY_RECORD, [
        ["PTA", start_time_text(step.start_ns).strip(), "2048.0", "4096.0", "2048.0", "187651000000000",
         f"NPU:{ctx.device_id}"]
        for step in timeline.steps
    ])
    _write_csv(out_dir, "operator_memory.csv", headers.OPERATOR_MEMORY, [
        ["aten::empty", "8.0", f"{us(k.start_ns):.3f}", f"{us(k.start_ns) + 10:.3f}", f"{us(k.start_ns) + 10:.3f}",
         "10.0", "10.0", "2048.0", "4096.0", "2048.0", "2048.0", "4096.0", "2048.0", "187651000000000",
         f"NPU:{ctx.device_id}"]
        for k in timeline.kernels[:50]
    ])
    if ctx.level != ProfilerLevel.Level_none and timeline.steps:
        _write_csv(out_dir, "npu_module_mem.csv", headers.NPU_MODULE_MEM,
                   [[str(ctx.device_id), "APP", f"{us(start):.3f}", "4096.0", f"NPU:{ctx.device_id}"]])


def write_communication(out_dir, timeline, ctx):
    """communication.json and communication_matrix.json, when the ranks communicated (any level
    from Level0; torch_npu writes no empty JSON either)."""
    comm = {}
    matrix = {}
    for kernel in timeline.kernels:
        if not kernel.is_communication:
            continue
        key = f"step{kernel.step}" if ctx.scheduled else "step"
        op = f"{kernel.name}@{GROUP_ID}"
        elapse_ms = kernel.dur_ns / 1e6
        size_mb = 8.388608
        comm.setdefault(key, {"p2p": {}, "collective": {}})["collective"][op] = {
            "Communication Time Info": {
                "Start Timestamp(us)": kernel.start_ns / 1000.0,
                "Elapse Time(ms)": elapse_ms,
                "Transit Time(ms)": elapse_ms * 0.8,
                "Wait Time(ms)": elapse_ms * 0.2,
                "Synchronization Time(ms)": elapse_ms * 0.1,
                "Idle Time(ms)": 0.0,
                "Wait Time Ratio": 0.2,
                "Synchronization Time Ratio": 0.1,
            },
            "Communication Bandwidth Info": {
                transport: {
                    "Transit Size(MB)": size_mb if transport == "HCCS" else 0,
                    "Transit Time(ms)": elapse_ms * 0.8 if transport == "HCCS" else 0,
                    "Bandwidth(GB/s)": round(size_mb / (elapse_ms * 0.8), 4) if transport == "HCCS" else 0,
                    "Large Packet Ratio": 0,
                    "Size Distribution": {},
                }
                for transport in ("RDMA", "HCCS", "PCIE", "SDMA", "SIO")
            },
        }
        links = matrix.setdefault(key, {"p2p": {}, "collective": {}})["collective"].setdefault(
            f"allreduce-top1@{GROUP_ID}", {})
        for peer in range(ctx.world_size):
            links[f"{ctx.rank if ctx.rank >= 0 else 0}-{peer}"] = {
                "Transport Type": "LOCAL" if peer == max(ctx.rank, 0) else "HCCS",
                "Transit Size(MB)": size_mb,
                "Transit Time(ms)": elapse_ms * 0.8,
                "Bandwidth(GB/s)": round(size_mb / (elapse_ms * 0.8), 4),
                "Op Name": kernel.name,
            }
    if not comm:
        return
    with open(os.path.join(out_dir, "communication.json"), "w", encoding="utf-8") as handle:
        json.dump(comm, handle)
    with open(os.path.join(out_dir, "communication_matrix.json"), "w", encoding="utf-8") as handle:
        json.dump(matrix, handle)


def host_trace_events(timeline, ctx):
    """The framework (host) events of trace_view.json."""
    pid = ctx.pid
    events = []
    for step in timeline.steps:
        name = f"ProfilerStep#{step.step}"
        events.append({"ph": "X", "name": name, "pid": pid, "tid": pid, "ts": ts_text(step.start_ns),
                       "dur": us(step.end_ns - step.start_ns), "cat": "cpu_op",
                       "args": {"Sequence number": -1, "Fwd thread id": 0}})
    for kernel in timeline.kernels:
        if kernel.is_communication:
            continue
        events.append({"ph": "X", "name": _HOST_OP.get(kernel.op_type, "aten::" + kernel.op_type.lower()),
                       "pid": pid, "tid": pid, "ts": ts_text(kernel.start_ns - 30_000), "dur": 20.0,
                       "cat": "cpu_op", "args": {"Sequence number": -1, "Fwd thread id": 0}})
    if ctx.with_modules:
        events += module_events(timeline, pid)
    events += [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "Python"}},
        {"ph": "M", "name": "process_labels", "pid": pid, "tid": 0, "args": {"labels": "CPU"}},
        {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": 0}},
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": pid, "args": {"name": f"Thread {pid}"}},
        {"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": pid, "args": {"sort_index": pid}},
    ]
    return events


# The modules of the fake model: a position of a layer's ops (see _timeline._LAYER) → its
# sub-module; the residual Add stays in the layer itself, the head's ArgMax in the model.
_SUBMODULES = (("Attention", range(0, 5)), ("MLP", range(7, 10)))


def module_events(timeline, pid):
    """`nn.Module` python_function events (with_modules=True): per step the model, its
    decoder layers and their attention and MLP, each spanning its ops' launches (a launch at
    the kernel's start − 30 µs), counted per class in first-call order as torch_npu names them."""
    events = []
    python_id = 1

    def module(name, launches, pad_ns):
        nonlocal python_id
        python_id += 1
        start, end = min(launches) - pad_ns, max(launches) + pad_ns
        return {"ph": "X", "cat": "python_function", "name": "nn.Module: " + name, "pid": pid, "tid": pid,
                "ts": ts_text(start), "dur": us(end - start),
                "args": {"Python id": python_id, "Python parent id": 1, "Python module id": 0}}

    by_step = {}
    for kernel in timeline.kernels:
        if not kernel.is_communication:
            by_step.setdefault(kernel.step, []).append(kernel)
    layer_ops = len(_LAYER)
    for kernels in by_step.values():
        launch = {k.index: k.start_ns - 30_000 for k in kernels}
        events.append(module("FakeModel_0", list(launch.values()), 3_000))
        layers = max(launch) // layer_ops
        for layer in range(layers):
            base = layer * layer_ops
            own = [t for i, t in launch.items() if base <= i < base + layer_ops]
            events.append(module(f"DecoderLayer_{layer}", own, 2_000))
            for name, positions in _SUBMODULES:
                events.append(module(f"{name}_{layer}", [launch[base + p] for p in positions], 1_000))
    return events


def device_trace_events(timeline, ctx):
    """The CANN (device) events appended to trace_view.json."""
    hw, cann, overlap, pid = ctx.hardware_pid, ctx.cann_pid, ctx.overlap_pid, ctx.pid
    events = [
        {"name": "process_name", "pid": hw, "tid": 0, "args": {"name": "Ascend Hardware"}, "ph": "M"},
        {"name": "thread_name", "pid": hw, "tid": STREAM_ID, "args": {"name": f"Stream {STREAM_ID}"}, "ph": "M"},
        {"name": "thread_sort_index", "pid": hw, "tid": STREAM_ID, "args": {"sort_index": STREAM_ID}, "ph": "M"},
        {"name": "process_labels", "pid": hw, "tid": 0, "args": {"labels": f"NPU {ctx.device_id}"}, "ph": "M"},
        {"name": "process_sort_index", "pid": hw, "tid": 0, "args": {"sort_index": 8}, "ph": "M"},
        {"name": "process_name", "pid": cann, "tid": 0, "args": {"name": "CANN"}, "ph": "M"},
        {"name": "thread_name", "pid": cann, "tid": pid, "args": {"name": f"Thread {pid}"}, "ph": "M"},
        {"name": "process_labels", "pid": cann, "tid": 0, "args": {"labels": "CPU"}, "ph": "M"},
        {"name": "process_sort_index", "pid": cann, "tid": 0, "args": {"sort_index": 2}, "ph": "M"},
        {"name": "process_name", "pid": overlap, "tid": 0, "args": {"name": "Overlap Analysis"}, "ph": "M"},
        {"name": "thread_name", "pid": overlap, "tid": 0, "args": {"name": "Computing"}, "ph": "M"},
        {"name": "thread_name", "pid": overlap, "tid": 1, "args": {"name": "Communication"}, "ph": "M"},
        {"name": "process_labels", "pid": overlap, "tid": 0, "args": {"labels": f"NPU {ctx.device_id}"}, "ph": "M"},
    ]
    for kernel in timeline.kernels:
        ts = ts_text(kernel.start_ns)
        dur = us(kernel.dur_ns)
        tid = STREAM_ID if not kernel.is_communication else STREAM_ID + 1
        events.append({"name": kernel.name, "pid": hw, "tid": tid, "ts": ts, "dur": dur,
                       "args": {"Model Id": 4294967295, "Task Type": kernel.core, "Stream Id": tid,
                                "Task Id": kernel.task_id or 0, "Batch Id": 0, "Subtask Id": 4294967295,
                                "connection_id": kernel.index}, "ph": "X"})
        events.append({"name": "Communication" if kernel.is_communication else "Computing", "pid": overlap,
                       "tid": 1 if kernel.is_communication else 0, "ts": ts, "dur": dur, "ph": "X"})
        if kernel.is_communication:
            continue
        launch_ns = kernel.start_ns - 28_000
        flow_id = str(38654705663 + kernel.task_id)
        events.append({"name": "AscendCL@" + kernel.name.split("_", 1)[0], "pid": cann, "tid": pid,
                       "ts": ts_text(launch_ns), "dur": 12.5,
                       "args": {"Thread Id": pid, "Mode": "ACL_OP", "level": "acl", "id": kernel.name,
                                "item_id": "0", "connection_id": kernel.index}, "ph": "X"})
        events.append({"name": "HostToDevice" + flow_id, "ph": "s", "cat": "HostToDevice", "id": flow_id,
                       "pid": cann, "tid": pid, "ts": ts_text(launch_ns)})
        events.append({"name": "HostToDevice" + flow_id, "ph": "f", "id": flow_id, "ts": ts, "cat": "HostToDevice",
                       "pid": hw, "tid": tid, "bp": "e"})
        if "CPU" in ctx.activities:
            events.append({"ph": "s", "bp": "e", "name": "torch_to_npu", "id": kernel.start_ns, "pid": pid,
                           "tid": pid, "ts": ts_text(kernel.start_ns - 30_000), "cat": "async_npu"})
            events.append({"ph": "f", "bp": "e", "name": "torch_to_npu", "id": kernel.start_ns, "pid": hw,
                           "tid": tid, "ts": ts, "cat": "async_npu"})
    return events


def write_trace_host_phase(path, events):
    """Phase 1: the host events, WITHOUT the closing `]`."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(events)[:-1])


def append_trace_device_phase(path, events, host_written):
    """Phase 2: append the device events and close the array (`,]` if there are none)."""
    with open(path, "a", encoding="utf-8") as handle:
        body = json.dumps(events)[1:]
        handle.write(("," if host_written else "") + body)


def close_trace(path):
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("]")


def write_db(out_dir, timeline, ctx):
    name = "ascend_pytorch_profiler.db" if ctx.rank < 0 else f"ascend_pytorch_profiler_{ctx.rank}.db"
    path = os.path.join(out_dir, name)
    if os.path.exists(path):
        os.remove(path)
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE TASK (stepId INTEGER, name TEXT, startNs INTEGER, endNs INTEGER, deviceId INTEGER)")
        db.executemany(
            "INSERT INTO TASK VALUES (?, ?, ?, ?, ?)",
            [(k.step, k.name, k.start_ns, k.start_ns + k.dur_ns, ctx.device_id) for k in timeline.kernels],
        )
    db.close()
    if ctx.world_size > 1:
        with sqlite3.connect(os.path.join(out_dir, "analysis.db")) as db:
            db.execute("CREATE TABLE IF NOT EXISTS CommAnalyzerTime (step TEXT, opName TEXT, elapseTime REAL)")
        db.close()
