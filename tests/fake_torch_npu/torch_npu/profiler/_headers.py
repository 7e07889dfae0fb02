"""kernel_details.csv headers by level, aic_metrics and release (see README for which are real)."""
from torch_npu.profiler import _env
from torch_npu.profiler.experimental_config import AiCMetrics, ProfilerLevel

BASE = (
    "Step Id", "Device_id", "Model ID", "Task ID", "Stream ID", "Name", "Type", "OP State",
    "Accelerator Core", "Start Time(us)", "Duration(us)", "Wait Time(us)", "Block Dim", "Mix Block Dim",
    "HF32 Eligible", "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes",
    "Output Data Types", "Output Formats", "Context ID",
)

# (aic metric columns, aiv metric columns, trailing columns) per metric group.
# PipeUtilization, ArithmeticUtilization and MemoryL0 are real (tests/samples holds their headers);
# the others follow msprof's metric names and are not verified against a device.
METRIC_COLUMNS = {
    AiCMetrics.PipeUtilization: (
        ("aic_mac_time(us)", "aic_mac_ratio", "aic_scalar_time(us)", "aic_scalar_ratio", "aic_mte1_time(us)",
         "aic_mte1_ratio", "aic_mte2_time(us)", "aic_mte2_ratio", "aic_fixpipe_time(us)", "aic_fixpipe_ratio",
         "aic_icache_miss_rate"),
        ("aiv_vec_time(us)", "aiv_vec_ratio", "aiv_scalar_time(us)", "aiv_scalar_ratio", "aiv_mte2_time(us)",
         "aiv_mte2_ratio", "aiv_mte3_time(us)", "aiv_mte3_ratio", "aiv_icache_miss_rate"),
        ("cube_utilization(%)",),
    ),
    AiCMetrics.ArithmeticUtilization: (
        ("aic_mac_fp16_ratio", "aic_mac_int8_ratio", "aic_cube_fops", "aic_vector_fops"),
        ("aiv_vec_fp32_ratio", "aiv_vec_fp16_ratio", "aiv_vec_int32_ratio", "aiv_vec_misc_ratio", "aiv_cube_fops",
         "aiv_vector_fops"),
        (),
    ),
    AiCMetrics.MemoryL0: (
        ("aic_l0a_read_bw(GB/s)", "aic_l0a_write_bw(GB/s)", "aic_l0b_read_bw(GB/s)", "aic_l0b_write_bw(GB/s)",
         "aic_l0c_read_bw_cube(GB/s)", "aic_l0c_write_bw_cube(GB/s)"),
        ("aiv_l0c_read_bw(GB/s)", "aiv_l0c_write_bw(GB/s)"),
        (),
    ),
    AiCMetrics.Memory: (
        ("aic_main_mem_read_bw(GB/s)", "aic_main_mem_write_bw(GB/s)", "aic_l2_read_bw(GB/s)",
         "aic_l2_write_bw(GB/s)"),
        ("aiv_main_mem_read_bw(GB/s)", "aiv_main_mem_write_bw(GB/s)", "aiv_l2_read_bw(GB/s)",
         "aiv_l2_write_bw(GB/s)"),
        (),
    ),
    AiCMetrics.MemoryUB: (
        ("aic_ub_read_bw_scalar(GB/s)", "aic_ub_write_bw_scalar(GB/s)"),
        ("aiv_ub_read_bw_vector(GB/s)", "aiv_ub_write_bw_vector(GB/s)", "aiv_ub_read_bw_scalar(GB/s)",
         "aiv_ub_write_bw_scalar(GB/s)"),
        (),
    ),
    AiCMetrics.ResourceConflictRatio: (
        ("aic_vec_bankgroup_cflt_ratio", "aic_vec_bank_cflt_ratio", "aic_vec_resc_cflt_ratio"),
        ("aiv_vec_bankgroup_cflt_ratio", "aiv_vec_bank_cflt_ratio", "aiv_vec_resc_cflt_ratio"),
        (),
    ),
    AiCMetrics.L2Cache: (
        ("aic_write_cache_hit", "aic_write_cache_miss_allocate", "aic_r0_read_cache_hit",
         "aic_r0_read_cache_miss_allocate", "aic_r1_read_cache_hit", "aic_r1_read_cache_miss_allocate"),
        ("aiv_write_cache_hit", "aiv_write_cache_miss_allocate", "aiv_r0_read_cache_hit",
         "aiv_r0_read_cache_miss_allocate", "aiv_r1_read_cache_hit", "aiv_r1_read_cache_miss_allocate"),
        (),
    ),
    # AiCMetrics.MemoryAccess, which the builds before 2.5.1 lack (the key is its value).
    "ACL_AICORE_MEMORY_ACCESS": (
        ("aic_read_main_memory_datas(KB)", "aic_write_main_memory_datas(KB)", "aic_GM_to_L1_datas(KB)",
         "aic_L0C_to_GM_datas(KB)"),
        ("aiv_read_main_memory_datas(KB)", "aiv_write_main_memory_datas(KB)", "aiv_GM_to_UB_datas(KB)",
         "aiv_UB_to_GM_datas(KB)"),
        (),
    ),
}


def kernel_details_header(level, aic_metrics, scheduled):
    """The kernel_details.csv columns for a run."""
    if level == ProfilerLevel.Level0:
        # 2.5.1 and older: 7 columns; 2.7.1: + Device_id; 2.10.0 and the 2.7.1.post11 line spell
        # `Block Num` (2.14.0 may add CANN's shape columns, not emulated).
        block = "Block Num" if _env.block_num_spelling() else "Block Dim"
        header = ["Step Id"]
        if _env.has_device_id_columns():
            header.append("Device_id")
        header += ["Name", "Type", "Accelerator Core", "Start Time(us)", "Duration(us)", "Wait Time(us)", block]
    else:
        header = list(BASE)
        if aic_metrics in METRIC_COLUMNS:
            aic, aiv, tail = METRIC_COLUMNS[aic_metrics]
            header += ["aicore_time(us)", "aic_total_cycles", *aic, "aiv_time(us)", "aiv_total_cycles", *aiv, *tail]
    if not scheduled:
        header.remove("Step Id")
    return header


STEP_TRACE_TIME = (
    "Device_id", "Step", "Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free",
    "Stage", "Bubble", "Communication(Not Overlapped and Exclude Receive)", "Preparing",
)
OP_STATISTIC = (
    "Device_id", "OP Type", "Core Type", "Count", "Total Time(us)", "Min Time(us)", "Avg Time(us)",
    "Max Time(us)", "Ratio(%)",
)
API_STATISTIC = ("Device_id", "Level", "API Name", "Time(us)", "Count", "Avg(us)", "Min(us)", "Max(us)", "Variance")
OPERATOR_DETAILS = (
    "Name", "Input Shapes", "Call Stack", "Host Self Duration(us)", "Host Total Duration(us)",
    "Device Self Duration(us)", "Device Total Duration(us)", "Device Self Duration With AICore(us)",
    "Device Total Duration With AICore(us)",
)
MEMORY_RECORD = ("Component", "Timestamp(us)", "Total Allocated(MB)", "Total Reserved(MB)", "Total Active(MB)",
                 "Stream Ptr", "Device Type")
OPERATOR_MEMORY = ("Name", "Size(KB)", "Allocation Time(us)", "Release Time(us)", "Active Release Time(us)",
                   "Duration(us)", "Active Duration(us)", "Allocation Total Allocated(MB)",
                   "Allocation Total Reserved(MB)", "Allocation Total Active(MB)", "Release Total Allocated(MB)",
                   "Release Total Reserved(MB)", "Release Total Active(MB)", "Stream Ptr", "Device Type")
NPU_MODULE_MEM = ("Device_id", "Component", "Timestamp(us)", "Total Reserved(MB)", "Device")


def without_device_id(header):
    """Before 2.7.1 the statistics had no Device_id column."""
    return header if _env.has_device_id_columns() else tuple(c for c in header if c != "Device_id")
