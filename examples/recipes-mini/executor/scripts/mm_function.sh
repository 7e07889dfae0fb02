#!/bin/bash
# Launch helpers of the multimedia (diffusion) models, sourced by their infer.sh:
# the caller sets MODEL_DIR and YAML, then calls mm_launch.
#
# These YAMLs have their own shape: top-level keys are limited to ALLOWED_TOP
# below (anything else, e.g. a model_config section, is rejected), model_args
# become the entry script's command-line flags (true -> --flag, false -> omitted,
# list -> --flag a b, other -> --flag value). The entry script runs from
# models/<MODEL_DIR> (the launcher changes directory there), so relative output
# paths land under the model directory. Logs: models/<MODEL_DIR>/res/<DATE>/<model_name>/log_<timestamp>.log.
# torchrun is emulated: one python3 process per rank with RANK, LOCAL_RANK, WORLD_SIZE set.

function mm_init_env()
{
    MM_SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" &>/dev/null && pwd)
    export RECIPES_ROOT=$(dirname "$(dirname "$MM_SCRIPT_DIR")")
    export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}${RECIPES_ROOT}"
}

function mm_launch()
{
    mm_init_env
    mm_check_launch
    mm_validate_yaml
    mm_parse_yaml
    mm_setup_env
    mm_launch_task
}

function mm_check_launch()
{
    if [ -z "${YAML}" ] || [ ! -f "${YAML}" ]; then
        echo "[ERROR] YAML file not found: '${YAML}'"
        exit 1
    fi
}

# Prints one value of the YAML (a top-level key, or a whole section as KEY=VALUE lines).
function mm_yaml()
{
    python3 - "${YAML}" "$@" <<'PY'
import shlex
import sys
from executor.core.config.yaml_loader import ConfigError, load_config

try:
    cfg = load_config(sys.argv[1])
except (ConfigError, OSError) as error:
    print(f"[ERROR] Failed to parse YAML {sys.argv[1]}: {error}")
    sys.exit(1)
what = sys.argv[2]
if what == "validate":
    allowed = {"model_name", "world_size", "master_port", "entry_script", "launcher", "launcher_args",
               "env_vars", "dit_cache", "sparse", "model_args"}
    required = {"model_name", "world_size", "entry_script"}
    if not isinstance(cfg, dict):
        print("[ERROR] YAML root must be a mapping.")
        sys.exit(1)
    unknown = set(cfg) - allowed
    if unknown:
        print(f"[ERROR] Unknown top-level YAML key(s): {sorted(unknown)}. Allowed: {sorted(allowed)}")
        sys.exit(1)
    missing = required - set(cfg)
    if missing:
        print(f"[ERROR] Missing required top-level YAML key(s): {sorted(missing)}")
        sys.exit(1)
    ws = cfg["world_size"]
    if isinstance(ws, bool) or not isinstance(ws, int) or ws <= 0:
        print(f"[ERROR] world_size must be a positive int, got {ws!r}")
        sys.exit(1)
    print("[INFO] YAML validation passed.")
elif what == "env_vars":
    for key, value in (cfg.get("env_vars") or {}).items():
        print(f"export {key}={shlex.quote(str(value))}")
elif what == "model_args":
    parts = []
    for key, value in (cfg.get("model_args") or {}).items():
        if isinstance(value, bool):
            if value:
                parts.append(f"--{key}")
        elif isinstance(value, list):
            parts.append(f"--{key} " + " ".join(shlex.quote(str(v)) for v in value))
        else:
            parts.append(f"--{key} {shlex.quote(str(value))}")
    print(" ".join(parts))
else:
    print(cfg.get(what, sys.argv[3] if len(sys.argv) > 3 else ""))
PY
}

function mm_validate_yaml()
{
    mm_yaml validate || exit 1
}

function mm_parse_yaml()
{
    export MODEL_NAME=$(mm_yaml model_name)
    export WORLD_SIZE=$(mm_yaml world_size)
    export MASTER_PORT=$(mm_yaml master_port 29600)
    export ENTRY_SCRIPT=$(mm_yaml entry_script)
    echo "[INFO] model_name: ${MODEL_NAME}, world_size: ${WORLD_SIZE}, entry_script: ${ENTRY_SCRIPT}"
}

function mm_setup_env()
{
    eval "$(mm_yaml env_vars)"
    DATE=$(date +%Y%m%d)
    PARENT_PARENT_DIR=$(cd "${MM_SCRIPT_DIR}/../.." &>/dev/null && pwd)
    export MM_MODEL_DIR="${PARENT_PARENT_DIR}/models/${MODEL_DIR}"
    export MM_LOG_DIR="${MM_MODEL_DIR}/res/${DATE}/${MODEL_NAME}"
    mkdir -p "${MM_LOG_DIR}"
    export ENTRY_SCRIPT_PATH="${MM_MODEL_DIR}/${ENTRY_SCRIPT}"
    if [ ! -f "${ENTRY_SCRIPT_PATH}" ]; then
        echo "[ERROR] Entry script not found: ${ENTRY_SCRIPT_PATH}"
        exit 1
    fi
}

function mm_launch_task()
{
    local args rank pids=() failed=0
    args=$(mm_yaml model_args)
    echo "[INFO] Model args: ${args}"
    cd "${MM_MODEL_DIR}" || exit 1
    (
        for ((rank = 0; rank < WORLD_SIZE; rank++)); do
            eval RANK=$rank LOCAL_RANK=$rank python3 -u '"${ENTRY_SCRIPT_PATH}"' "${args}" &
            pids+=($!)
        done
        for pid in "${pids[@]}"; do
            wait "$pid" || failed=1
        done
        exit "$failed"
    ) 2>&1 | tee "${MM_LOG_DIR}/log_$(date +%Y%m%d_%H%M%S).log"
    return "${PIPESTATUS[0]}"
}
