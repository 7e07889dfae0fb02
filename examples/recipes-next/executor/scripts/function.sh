#!/bin/bash
# Launch helpers, sourced by executor/scripts/infer.sh and by the models' own
# infer.sh (models/glm_5_2/infer.sh). The caller sets MODEL_DIR and YAML (absolute
# path), and for online mode PD_ROLE, then calls `launch [offline|online]`.
#
# Layout of one run (as in cann-recipes-infer):
#   DATE     = `date +%Y%m%d` (day resolution: reruns on one day share a directory)
#   NAME     = <model_name>_<yaml file name without extension>; model_name is
#              model_config.model_name, else the top-level model_name, else "None"
#              (the YAML's sub-folder is dropped)
#   RES_PATH = res/<DATE>/<NAME>                       (offline)
#              res/<DATE>/<NAME>/<role>_node<N>        (online, N = $NODE_RANK or 0)
#   WORK_DIR = <repo>/models/<MODEL_DIR>               (an exported WORK_DIR is overwritten)
#   $WORK_DIR/$RES_PATH/log_<local rank>.log           each rank's stdout+stderr (rank 0 also on the console)
# Offline, the Python entry is models/<MODEL_DIR>/infer.py when that file exists,
# else executor/offline/infer.py. The launcher never changes directory: the Python
# processes inherit the caller's working directory.

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

die() {
    echo "infer.sh: error: $*" >&2
    exit 2
}

# Prints the first non-empty value among the dotted keys given (empty if none).
config_value() {
    python3 - "$YAML" "$@" <<'PY'
import sys
from executor.core.config.yaml_loader import load_config

config = load_config(sys.argv[1])
for key in sys.argv[2:]:
    value = config
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if value is not None:
        print(value)
        break
PY
}

set_result_path() {
    local mode="$1" prefix
    MODEL_NAME="$(config_value model_config.model_name model_name)" || die "cannot read $YAML"
    [ -n "$MODEL_NAME" ] || MODEL_NAME="None"
    WORLD_SIZE_CFG="$(config_value parallel_config.world_size world_size)" || die "cannot read $YAML"
    case "$WORLD_SIZE_CFG" in
        ''|*[!0-9]*|0) die "cannot find a positive world_size in $(basename "$YAML")" ;;
    esac
    DATE=$(date +%Y%m%d)
    prefix=$(basename "$YAML")
    prefix="${prefix%.*}"
    export CASE_NAME="${MODEL_NAME}_${prefix}"
    if [ "$mode" = "online" ]; then
        export RES_PATH="res/${DATE}/${CASE_NAME}/${PD_ROLE}_node${NODE_RANK:-0}"
    else
        export RES_PATH="res/${DATE}/${CASE_NAME}"
    fi
    export WORK_DIR="${REPO_ROOT}/models/${MODEL_DIR}"
    mkdir -p "${WORK_DIR}/${RES_PATH}" || die "cannot create ${WORK_DIR}/${RES_PATH}"
}

# Starts one process per local rank and waits for all of them; non-zero if one failed.
launch() {
    local mode="${1:-offline}" rank log status failed=0 pids=() cmd
    [ -n "$MODEL_DIR" ] && [ -d "$REPO_ROOT/models/$MODEL_DIR" ] || die "no model directory models/$MODEL_DIR"
    [ -f "$YAML" ] || die "no run configuration $YAML"
    export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}${REPO_ROOT}"
    set_result_path "$mode"
    if [ "$mode" = "online" ]; then
        cmd=(python3 -u "${REPO_ROOT}/executor/online/server.py" --role "$PD_ROLE" --yaml-file-path "$YAML")
    else
        INFER_PATH="${REPO_ROOT}/models/${MODEL_DIR}/infer.py"
        [ -f "$INFER_PATH" ] || INFER_PATH="${REPO_ROOT}/executor/offline/infer.py"
        cmd=(python3 -u "$INFER_PATH" --yaml_file_path="$YAML")
    fi
    echo "infer.sh: ${WORLD_SIZE_CFG} rank(s) of ${cmd[*]:2:1}, logs in ${WORK_DIR}/${RES_PATH}" >&2
    export WORLD_SIZE=$WORLD_SIZE_CFG RANK_OFFSET=0
    for ((rank = 0; rank < WORLD_SIZE_CFG; rank++)); do
        log="${WORK_DIR}/${RES_PATH}/log_${rank}.log"
        if [ "$rank" -eq 0 ]; then
            (
                LOCAL_RANK=$rank RANK_ID=$rank RANK=$rank "${cmd[@]}" 2>&1 | tee "$log"
                exit "${PIPESTATUS[0]}"
            ) &
        else
            LOCAL_RANK=$rank RANK_ID=$rank RANK=$rank "${cmd[@]}" >"$log" 2>&1 &
        fi
        pids+=($!)
    done
    for ((rank = 0; rank < WORLD_SIZE_CFG; rank++)); do
        wait "${pids[$rank]}"
        status=$?
        if [ "$status" -ne 0 ]; then
            echo "infer.sh: rank $rank failed with exit code $status (see ${WORK_DIR}/${RES_PATH}/log_${rank}.log)" >&2
            failed=1
        fi
    done
    return "$failed"
}
