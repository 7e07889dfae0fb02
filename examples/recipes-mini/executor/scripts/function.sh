#!/bin/bash
# Helpers for executor/scripts/infer.sh (sourced, not run).
#
# Layout of one run (the same as cann-recipes-infer):
#   WORK_DIR = <repo>/models/<model>          (always set here: an exported WORK_DIR is overwritten)
#   RES_PATH = res/<date>/<model_name>_<yaml basename>          (offline)
#              res/<date>/<model_name>_<yaml basename>/<role>_node<N>   (online, N = $NODE_RANK or 0)
#   $WORK_DIR/$RES_PATH/log_<local rank>.log   stdout+stderr of each local rank (rank 0 also on the console)
#   $WORK_DIR/$RES_PATH/prof/{prefill,decode}/ profiler output, when model_config.enable_profiler is True
#
# <date> is `date +%Y%m%d_%H%M%S` (seconds resolution). If that directory
# already exists (two runs started within the same second), the launcher waits
# for the next second, so reruns never mix their logs or profiles.

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

usage() {
    cat <<'USAGE'
usage: bash executor/scripts/infer.sh --model <dir under models/> --yaml <file under models/<model>/config/>
                                      [--mode offline|online] [--pd-role prefill|decode]
  --model    model directory name under models/ (e.g. deepseek-mini)
  --yaml     run configuration file name (or path) under models/<model>/config/
  --mode     offline (default) or online (PD disaggregation; needs --pd-role; the
             default --yaml is then <model>_pd/<role>.yaml)
  --pd-role  prefill or decode (online mode only)
USAGE
}

die() {
    echo "infer.sh: error: $*" >&2
    exit 2
}

parse_args() {
    MODEL=""
    YAML=""
    MODE="offline"
    PD_ROLE=""
    while [ $# -gt 0 ]; do
        case "$1" in
            --model) [ $# -ge 2 ] || die "--model needs a value"; MODEL="$2"; shift 2 ;;
            --model=*) MODEL="${1#*=}"; shift ;;
            --yaml) [ $# -ge 2 ] || die "--yaml needs a value"; YAML="$2"; shift 2 ;;
            --yaml=*) YAML="${1#*=}"; shift ;;
            --mode) [ $# -ge 2 ] || die "--mode needs a value"; MODE="$2"; shift 2 ;;
            --mode=*) MODE="${1#*=}"; shift ;;
            --pd-role) [ $# -ge 2 ] || die "--pd-role needs a value"; PD_ROLE="$2"; shift 2 ;;
            --pd-role=*) PD_ROLE="${1#*=}"; shift ;;
            -h|--help) usage; exit 0 ;;
            *) usage >&2; die "unknown argument: $1" ;;
        esac
    done
    [ -n "$MODEL" ] || { usage >&2; die "--model is required"; }
    [ -d "$REPO_ROOT/models/$MODEL" ] || die "no model directory models/$MODEL"
    case "$MODE" in
        offline) [ -z "$PD_ROLE" ] || die "--pd-role is only valid with --mode online" ;;
        online)
            case "$PD_ROLE" in
                prefill|decode) ;;
                *) die "--mode online needs --pd-role prefill|decode" ;;
            esac
            [ -n "$YAML" ] || YAML="${MODEL}_pd/${PD_ROLE}.yaml" ;;
        *) die "--mode must be offline or online, not '$MODE'" ;;
    esac
    [ -n "$YAML" ] || { usage >&2; die "--yaml is required"; }
    case "$YAML" in
        /*) YAML_PATH="$YAML" ;;
        *) YAML_PATH="$REPO_ROOT/models/$MODEL/config/$YAML" ;;
    esac
    [ -f "$YAML_PATH" ] || die "no run configuration $YAML_PATH"
}

# Prints the value of a dotted key of the run configuration (empty if absent).
config_value() {
    python3 - "$YAML_PATH" "$1" <<'PY'
import sys
from executor.core.config.yaml_loader import load_config

value = load_config(sys.argv[1])
for part in sys.argv[2].split("."):
    value = value.get(part) if isinstance(value, dict) else None
print("" if value is None else value)
PY
}

set_env() {
    # The repo root goes first; the caller's PYTHONPATH (e.g. a torch_npu) is kept after it.
    export PYTHONPATH="$REPO_ROOT${PYTHONPATH:+:$PYTHONPATH}"
    cd "$REPO_ROOT" || die "cannot enter $REPO_ROOT"
    MODEL_NAME="$(config_value model_config.model_name)" || die "cannot read $YAML_PATH"
    [ -n "$MODEL_NAME" ] || MODEL_NAME="$MODEL"
    WORLD_SIZE_CFG="$(config_value parallel_config.world_size)" || die "cannot read $YAML_PATH"
    [ -n "$WORLD_SIZE_CFG" ] || WORLD_SIZE_CFG=1
    case "$WORLD_SIZE_CFG" in
        ''|*[!0-9]*|0) die "parallel_config.world_size must be a positive integer in $YAML_PATH" ;;
    esac
    export WORK_DIR="$REPO_ROOT/models/$MODEL"
    local yaml_base run_name
    yaml_base="$(basename "$YAML_PATH" .yaml)"
    yaml_base="$(basename "$yaml_base" .yml)"
    run_name="${MODEL_NAME}_${yaml_base}"
    while :; do
        RES_DATE="$(date +%Y%m%d_%H%M%S)"
        [ -e "$WORK_DIR/res/$RES_DATE/$run_name" ] || break
        sleep 1
    done
    RES_PATH="res/$RES_DATE/$run_name"
    if [ "$MODE" = "online" ]; then
        RES_PATH="$RES_PATH/${PD_ROLE}_node${NODE_RANK:-0}"
    fi
    export RES_PATH
    mkdir -p "$WORK_DIR/$RES_PATH" || die "cannot create $WORK_DIR/$RES_PATH"
}

# Starts one process per local rank and waits for all of them.
launch() {
    local pids=() rank log status failed=0
    echo "infer.sh: $WORLD_SIZE_CFG rank(s), logs in $WORK_DIR/$RES_PATH" >&2
    local role_args=()
    [ -n "$PD_ROLE" ] && role_args=(--pd-role "$PD_ROLE")
    for ((rank = 0; rank < WORLD_SIZE_CFG; rank++)); do
        log="$WORK_DIR/$RES_PATH/log_${rank}.log"
        if [ "$rank" -eq 0 ]; then
            (
                RANK=$rank LOCAL_RANK=$rank WORLD_SIZE=$WORLD_SIZE_CFG \
                    python3 -u -m executor.offline_inference --yaml "$YAML_PATH" "${role_args[@]}" 2>&1 | tee "$log"
                exit "${PIPESTATUS[0]}"
            ) &
        else
            RANK=$rank LOCAL_RANK=$rank WORLD_SIZE=$WORLD_SIZE_CFG \
                python3 -u -m executor.offline_inference --yaml "$YAML_PATH" "${role_args[@]}" >"$log" 2>&1 &
        fi
        pids+=($!)
    done
    for ((rank = 0; rank < WORLD_SIZE_CFG; rank++)); do
        wait "${pids[$rank]}"
        status=$?
        if [ "$status" -ne 0 ]; then
            echo "infer.sh: rank $rank failed with exit code $status (see $WORK_DIR/$RES_PATH/log_${rank}.log)" >&2
            failed=1
        fi
    done
    return "$failed"
}
