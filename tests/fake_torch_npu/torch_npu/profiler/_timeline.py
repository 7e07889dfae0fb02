"""Synthesises the device timeline of a run from its raw record: kernels per step,
communication, and per-step totals. Deterministic: the same raw data always
gives the same output (durations are synthetic, nothing sleeps)."""

# (name, type, accelerator core, base duration in ns) of one decoder layer.
_LAYER = (
    ("aclnnRmsNorm_RmsNormAiCore_RmsNorm", "RmsNorm", "AI_VECTOR_CORE", 14_200),
    ("aclnnMatmul_MatMulV3Common_MatMulV3", "MatMulV3", "AI_CORE", 86_400),
    ("aclnnApplyRotaryPosEmb_ApplyRotaryPosEmbAiCore_ApplyRotaryPosEmb", "ApplyRotaryPosEmb", "AI_VECTOR_CORE", 9_100),
    ("aclnnFusedInferAttentionScore_FusedInferAttentionScore_FusedInferAttentionScore",
     "FusedInferAttentionScore", "MIX_AIC", 132_700),
    ("aclnnMatmul_MatMulV3Common_MatMulV3", "MatMulV3", "AI_CORE", 61_300),
    ("hcom_allReduce_", "hcom_allReduce_", "COMMUNICATION", 48_000),
    ("aclnnAdd_AddAiCore_Add", "Add", "AI_VECTOR_CORE", 4_800),
    ("aclnnMatmul_MatMulV3Common_MatMulV3", "MatMulV3", "AI_CORE", 118_500),
    ("aclnnSwiGlu_SwiGluAiCore_SwiGlu", "SwiGlu", "MIX_AIV", 21_600),
    ("aclnnMatmul_MatMulV3Common_MatMulV3", "MatMulV3", "AI_CORE", 97_000),
    ("hcom_allReduce_", "hcom_allReduce_", "COMMUNICATION", 52_000),
)
_HEAD = ("aclnnArgMax_ArgMaxV2AiCore_ArgMaxV2", "ArgMaxV2", "AI_VECTOR_CORE", 7_300)
_SHAPES = {
    "RmsNorm": ('"4,1,1024;1024"', "DT_BF16;DT_BF16", "ND;ND", '"4,1,1024;4,1,1"', "DT_BF16;FLOAT", "ND;ND"),
    "MatMulV3": ('"4,1024;1024,1024"', "DT_BF16;DT_BF16", "ND;ND", '"4,1024"', "DT_BF16", "ND"),
    "ApplyRotaryPosEmb": ('"4,1,8,128;4,1,1,128"', "DT_BF16;DT_BF16", "ND;ND", '"4,1,8,128"', "DT_BF16", "ND"),
    "FusedInferAttentionScore": ('"4,1,1024;4,128,1024;4,128,1024"', "DT_BF16;DT_BF16;DT_BF16", "ND;ND;ND",
                                 '"4,1,1024"', "DT_BF16", "ND"),
    "Add": ('"4,1,1024;4,1,1024"', "DT_BF16;DT_BF16", "ND;ND", '"4,1,1024"', "DT_BF16", "ND"),
    "SwiGlu": ('"4,1,4096"', "DT_BF16", "ND", '"4,1,2048"', "DT_BF16", "ND"),
    "ArgMaxV2": ('"4,32000"', "DT_BF16", "ND", '"4"', "INT64", "ND"),
}
LAYERS = 2
PREPARING_NS = 40_000
WAIT_NS = 2_500
TAIL_NS = 15_000
SLOW_FACTOR = 25
STREAM_ID = 2
GROUP_ID = "3985310405473756128"


class Kernel:
    def __init__(self, step, index, name, op_type, core, start_ns, dur_ns, wait_ns, task_id, shapes):
        self.step = step
        self.index = index
        self.name = name
        self.op_type = op_type
        self.core = core
        self.start_ns = start_ns
        self.dur_ns = dur_ns
        self.wait_ns = wait_ns
        self.task_id = task_id
        self.shapes = shapes

    @property
    def is_communication(self):
        return self.core == "COMMUNICATION"


class StepTotals:
    def __init__(self, step, start_ns, end_ns, computing_ns, communication_ns, preparing_ns):
        self.step = step
        self.start_ns = start_ns
        self.end_ns = end_ns
        self.computing_ns = computing_ns
        self.communication_ns = communication_ns
        self.preparing_ns = preparing_ns


class Timeline:
    """kernels: list of Kernel; steps: list of StepTotals (both in time order)."""

    def __init__(self, kernels, steps):
        self.kernels = kernels
        self.steps = steps


def synthesise(raw, level):
    """Builds the timeline of `raw` (a _raw.RawRun) at profiler level `level`."""
    # The ops run at every level; Level_none only collects no device data, which the parser
    # honours (no kernel_details, step_trace_time or device timeline; host data stays).
    del level
    kernels, totals = [], []
    cursor = raw.start_ns
    task_id = 30_000 + 1_000 * raw.device_id
    comm_count = 0
    for position, (step, wall_start) in enumerate(raw.steps):
        factor = SLOW_FACTOR if (raw.slow_first_step and position == 0) else 1
        start = max(cursor, wall_start)
        time_ns = start + PREPARING_NS * factor
        computing = communication = 0
        plan = [op for _ in range(LAYERS) for op in _LAYER] + [_HEAD]
        for index, (name, op_type, core, base) in enumerate(plan):
            if core == "COMMUNICATION":
                if raw.world_size <= 1:
                    continue
                comm_count += 1
                name = f"hcom_allReduce__{100 + raw.world_size}_{comm_count}_1"
            jitter = 1.0 + 0.04 * ((step * 7 + index * 3) % 5)
            dur = int(base * jitter) * factor
            wait = 0 if index == 0 else WAIT_NS
            time_ns += wait
            task_id += 1
            kernels.append(
                Kernel(step, index, name, op_type, core, time_ns, dur, wait,
                       None if core == "COMMUNICATION" else task_id, _SHAPES.get(op_type))
            )
            if core == "COMMUNICATION":
                communication += dur
            else:
                computing += dur
            time_ns += dur
        end = time_ns + TAIL_NS
        totals.append(StepTotals(step, start, end, computing, communication, PREPARING_NS * factor))
        cursor = end
    return Timeline(kernels, totals)


def us(ns):
    """ns as a microsecond float."""
    return ns / 1000.0


def start_time_text(ns):
    """`Start Time(us)` as torch_npu writes it: 3 decimals and a trailing TAB."""
    return f"{ns // 1000}.{ns % 1000:03d}\t"


def ts_text(ns):
    """A trace `ts` string."""
    return f"{ns // 1000}.{ns % 1000:03d}"
