#!/usr/bin/env python3
"""Recompute, independently of npuprof, the numbers its summary tests assert on this run.

Standard library only (csv, json). Writes expected.json next to this script; the Rust test
`crates/summary/tests/real_run.rs` compares npuprof's summary with it. Definitions follow the
README: step total = Computing + Communication(Not Overlapped) + Free; shares are of the run's
summed kernel Duration(us); a pipe's ratio per row is the largest of its ratio columns holding a
number, weighted by Duration(us) over the rows where any ratio column holds a number.
"""

import csv
import json
import os
from decimal import Decimal

HERE = os.path.dirname(os.path.abspath(__file__))
PIPES = {
    "cube": ["aic_mac_ratio", "mac_ratio"],
    "vector": ["aiv_vec_ratio", "vec_ratio"],
    "memory": ["aic_mte2_ratio", "aiv_mte2_ratio", "mte2_ratio"],
    "scalar": ["aic_scalar_ratio", "aiv_scalar_ratio", "scalar_ratio"],
}


def number(text):
    try:
        return float(text.strip())
    except ValueError:
        return None


def steps(out):
    with open(os.path.join(out, "step_trace_time.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    return [
        {
            "step": int(r["Step"]),
            "total_us": float(r["Computing"])
            + float(r["Communication(Not Overlapped)"])
            + float(r["Free"]),
            "computing_us": float(r["Computing"]),
            "free_us": float(r["Free"]),
        }
        for r in rows
    ]


def kernels(out):
    with open(os.path.join(out, "kernel_details.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    total = sum(float(r["Duration(us)"]) for r in rows)
    names, types = {}, {}
    weighted = {p: 0.0 for p in PIPES}
    measured = 0.0
    for r in rows:
        d = float(r["Duration(us)"])
        n = names.setdefault(r["Name"], {"count": 0, "total_us": 0.0, "type": r["Type"]})
        n["count"] += 1
        n["total_us"] += d
        t = types.setdefault(r["Type"], {"count": 0, "total_us": 0.0})
        t["count"] += 1
        t["total_us"] += d
        values = {p: [number(r[c]) for c in cols if c in r] for p, cols in PIPES.items()}
        if any(v is not None for vs in values.values() for v in vs):
            measured += d
            for p, vs in values.items():
                weighted[p] += d * max([v for v in vs if v is not None] or [0.0])
    top = sorted(names.items(), key=lambda kv: (-kv[1]["total_us"], kv[0]))[:5]
    return {
        "rows": len(rows),
        "total_us": total,
        "distinct_names": len(names),
        "distinct_types": len(types),
        "steps": len({r["Step Id"] for r in rows}),
        "top_names": [
            {"name": k, "type": v["type"], "count": v["count"], "total_us": v["total_us"],
             "share": v["total_us"] / total}
            for k, v in top
        ],
        "by_type": {k: v for k, v in types.items()},
        "pipe": {p: weighted[p] / measured for p in PIPES},
        "pipe_measured_us": measured,
    }


def communication(out):
    """Summed from the vendor's own `Total Op Info` entries (npuprof sums the operators)."""
    with open(os.path.join(out, "communication.json")) as f:
        data = json.load(f)
    elapse = wait = 0.0
    for step in data.values():
        for category in step.values():
            info = category.get("Total Op Info", {}).get("Communication Time Info", {})
            elapse += info.get("Elapse Time(ms)", 0.0) * 1000.0
            wait += info.get("Wait Time(ms)", 0.0) * 1000.0
    return {"elapse_us": elapse, "wait_us": wait}


def op_statistic(out):
    """The vendor's per-type statistics (rounded to 3 decimals), a second independent source."""
    with open(os.path.join(out, "op_statistic.csv"), newline="") as f:
        return {
            r["OP Type"]: {"count": int(r["Count"]), "total_us": float(r["Total Time(us)"])}
            for r in csv.DictReader(f)
        }


def ns(text):
    """A `Start Time(us)` text (with its trailing TAB) in integer ns, exactly."""
    return int(Decimal(text.strip()) * 1000)


def union(spans):
    out = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def length(spans):
    return sum(b - a for a, b in spans)


def timeline(out, step):
    """Lanes of one step from kernel_details.csv: time any computing task ran, any HCCL task
    ran, and neither, from the step's first task start to its last task end (in µs)."""
    with open(os.path.join(out, "kernel_details.csv"), newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["Step Id"] == str(step)]
    spans = [
        (ns(r["Start Time(us)"]), ns(r["Start Time(us)"]) + round(float(r["Duration(us)"]) * 1000),
         r["Accelerator Core"] in ("HCCL", "COMMUNICATION"))
        for r in rows
    ]
    start = min(a for a, _, _ in spans)
    end = max(b for _, b, _ in spans)
    computing = union([(a, b) for a, b, c in spans if not c])
    communication = union([(a, b) for a, b, c in spans if c])
    busy = union(computing + communication)
    return {
        "step": step,
        "tasks": len(rows),
        "window_us": (end - start) / 1000,
        "computing_us": length(computing) / 1000,
        "communication_us": length(communication) / 1000,
        "free_us": (end - start - length(busy)) / 1000,
    }


def mb(text):
    return round(float(text) * 1048576)


def memory(out):
    """The PTA+GE component's first largest Total Allocated, and the operator allocations alive
    then (allocated at or before it, released after it or never)."""
    with open(os.path.join(out, "memory_record.csv"), newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["Component"] == "PTA+GE"]
    peak = None
    for r in rows:
        allocated = mb(r["Total Allocated(MB)"])
        if peak is None or allocated > peak["allocated_bytes"]:
            peak = {"allocated_bytes": allocated, "reserved_bytes": mb(r["Total Reserved(MB)"]),
                    "at": Decimal(r["Timestamp(us)"].strip())}
    with open(os.path.join(out, "operator_memory.csv"), newline="") as f:
        alive = [
            (round(float(r["Size(KB)"]) * 1024), r["Name"])
            for r in csv.DictReader(f)
            if float(r["Size(KB)"]) > 0
            and Decimal(r["Allocation Time(us)"].strip()) <= peak["at"]
            and (not r["Release Time(us)"].strip()
                 or Decimal(r["Release Time(us)"].strip()) > peak["at"])
        ]
    alive.sort(key=lambda a: -a[0])
    with open(os.path.join(out, "npu_module_mem.csv"), newline="") as f:
        modules = {}
        for r in csv.DictReader(f):
            modules[r["Component"]] = max(modules.get(r["Component"], 0), mb(r["Total Reserved(MB)"]))
    top_module = max(modules, key=modules.get)
    return {
        "peak_allocated_bytes": peak["allocated_bytes"],
        "peak_reserved_bytes": peak["reserved_bytes"],
        "holders_alive": len(alive),
        "held_bytes": sum(a[0] for a in alive),
        "top_holder": {"name": alive[0][1], "size_bytes": alive[0][0]},
        "top_module": {"component": top_module, "reserved_max_bytes": modules[top_module]},
    }


def shapes(out):
    """The longest (name, Input Shapes) group that has shapes."""
    groups = {}
    with open(os.path.join(out, "kernel_details.csv"), newline="") as f:
        for r in csv.DictReader(f):
            g = groups.setdefault((r["Name"], r["Input Shapes"]), [0, 0.0])
            g[0] += 1
            g[1] += float(r["Duration(us)"])
    (name, shape), (count, total) = max(
        ((k, v) for k, v in groups.items() if k[1] != "N/A"), key=lambda kv: kv[1][1])
    return {"groups": len(groups), "top_with_shapes": {
        "name": name, "shapes": shape.strip('"'), "count": count, "total_us": total}}


def matrix(out):
    """Per link of each operator type's `-total@` entry: its bandwidth (size / time)."""
    with open(os.path.join(out, "communication_matrix.json")) as f:
        data = json.load(f)
    links = {}
    for step in data.values():
        for category in step.values():
            for key, pairs in category.items():
                if key.split("@")[0].rsplit("-", 1)[-1] != "total":
                    continue
                for pair, link in pairs.items():
                    size, time = links.get(pair, (0.0, 0.0))
                    links[pair] = (size + link["Transit Size(MB)"], time + link["Transit Time(ms)"])
    return {pair: size / time for pair, (size, time) in links.items()}


def main():
    runs = {}
    for rank in (0, 1):
        out = os.path.join(HERE, f"rank{rank}_ascend_pt", "ASCEND_PROFILER_OUTPUT")
        runs[str(rank)] = {
            "steps": steps(out),
            "kernels": kernels(out),
            "communication": communication(out),
            "op_statistic": op_statistic(out),
            "timeline": timeline(out, 50),
            "memory": memory(out),
            "shapes": shapes(out),
            "matrix": matrix(out),
        }
    means = {r: sum(s["total_us"] for s in v["steps"]) / len(v["steps"]) for r, v in runs.items()}
    slowest = max(means, key=means.get)
    fastest = min(means, key=means.get)
    expected = {
        "runs": runs,
        "slowest_rank": int(slowest),
        "imbalance_ratio": means[slowest] / means[fastest],
    }
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
