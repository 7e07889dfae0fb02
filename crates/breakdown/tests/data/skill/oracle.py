"""Independent numbers for npuprof's `breakdown --structure/--rules` test, from the skill's own
scripts (hicann/cann-recipes-infer fbc225d, .agents/skills/model-infer-perf-breakdown/scripts).

usage: python3 oracle.py SKILL_SCRIPTS_DIR kernel_details.csv STEP structure_spec.json rules.json npuprof.json OUT_DIR

1. analyze_kernels.py (Step 1) extracts the step → raw_ops.json.
2. detect_structure's stream sample matcher (Step 2) runs with a sample_ack.json whose samples
   are the instances npuprof found for one layer per component (layer SAMPLE_LAYER of each
   component's first phase): the skill's own windows. They are compared with npuprof's.
3. render.py (Step 3) renders the skill's draft with the rules → metrics.json; the medians,
   p95s and outliers per component type and row are printed (µs).
"""
import csv, json, os, subprocess, sys
from decimal import Decimal

scripts, csv_path, step, structure_path, rules_path, npuprof_json, out = sys.argv[1:8]
os.makedirs(out, exist_ok=True)
py = sys.executable
raw = os.path.join(out, "raw_ops.json")
details = os.path.join(out, "raw_ops_details.json")
subprocess.run([py, os.path.join(scripts, "analyze_kernels.py"), "-f", csv_path, "-s", step,
                "-o", raw, "-d", details], check=True)
ops = json.load(open(raw))["operators"]
# npuprof's positions are in start order (exact decimal, file order among equals).
order = sorted(range(len(ops)), key=lambda i: (Decimal(str(ops[i]["start_time_us"])), i))
rows = list(csv.DictReader(open(csv_path)))
kept = [o["org_index"] for o in ops]
order = sorted(range(len(ops)), key=lambda i: (Decimal(rows[kept[i]]["Start Time(us)"].strip()), i))
nj = json.load(open(npuprof_json))
st = nj["runs"][0]["structure"]["steps"][0]
ours = {}
for sec in st["sections"]:
    for inst in sec["instances"]:
        a, n = inst["first_kernel"], inst["kernels"]
        ours[(sec["component"], inst["layer_idx"])] = sorted(order[a:a + n])
SAMPLE_LAYER = int(os.environ.get("SAMPLE_LAYER", "5"))
spec = json.load(open(structure_path))
ack = {"schema_version": "stream_sample_ack.v1", "components": {}}
for sec in st["sections"]:
    inst = [i for i in sec["instances"]][SAMPLE_LAYER]
    idx = ours[(sec["component"], inst["layer_idx"])]
    sid = str(ops[idx[0]]["stream_id"])
    ack["components"][sec["component"]] = {"source": "user", "primary_stream_id": sid,
        "stream_samples": [{"stream_id": sid, "role": "primary",
                            "op_indices": [i for i in idx if str(ops[i]["stream_id"]) == sid]}]}
json.dump(ack, open(os.path.join(out, "sample_ack.json"), "w"), indent=1)
script = os.path.join(out, "model.py")
open(script, "w").write("# stands in for the model script the skill asks for\n")
json.dump({"prof_dir": out, "kernel_csv": csv_path, "trace_json": "", "model_script_paths": [script],
           "phase": "train", "rank": 0}, open(os.path.join(out, "inputs.json"), "w"))
draft = os.path.join(out, "structure_draft.json")
subprocess.run([py, os.path.join(scripts, "detect_structure.py"), "-r", raw, "--structure-spec",
                structure_path, "--inputs", os.path.join(out, "inputs.json"), "--sample-ack",
                os.path.join(out, "sample_ack.json"), "-o", draft, "--accept-warnings"], check=True)
d = json.load(open(draft))
theirs = {(c["type"], c["layer_idx"]): sorted(c["op_indices"]) for c in d["components"]}
same = sum(1 for k in ours if theirs.get(k) == ours[k])
print(f"windows: {len(ours)} npuprof instances, {len(theirs)} skill instances, {same} identical")
for k in sorted(ours):
    if theirs.get(k) != ours[k]:
        print("  differs:", k, "npuprof", ours[k][:3], len(ours[k]), "skill", (theirs.get(k) or [])[:3], len(theirs.get(k) or []))
html = os.path.join(out, "runs", "oracle", "index.html")
subprocess.run([py, os.path.join(scripts, "render.py"), "-d", draft, "-r", raw, "--raw-ops-details",
                details, "-s", rules_path, "--label", "oracle", "-o", html, "--accept-unmatched"],
               check=True)
m = json.load(open(os.path.join(out, "runs", "oracle", "metrics.json")))
for sec in m["sections"]:
    print(sec["component_type"], sec["instance_count"])
    for row in sec["sub_items"] + [dict(sec["total"], name="TOTAL")]:
        met = row["metric"]
        print(f"  {row['name']:<16} median {met['median_ms']*1000:.3f} p95 {met['p95_ms']*1000:.3f} "
              f"outliers {[o['layer_idx'] for o in row['outliers']]}")
