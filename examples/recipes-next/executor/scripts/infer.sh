#!/bin/bash
# Shared launcher:
#
#   bash executor/scripts/infer.sh --model <dir under models/> --yaml <file under models/<model>/config/>
#   bash executor/scripts/infer.sh --model <m> --mode online --pd-role prefill|decode
#        [--p-yaml-name <file>] [--d-yaml-name <file>]    (default <m>_pd/prefill.yaml, <m>_pd/decode.yaml)
#
# See function.sh for the output layout. Exits 1 if a rank fails, 2 on bad arguments.
source "$(dirname "${BASH_SOURCE[0]}")/function.sh"

usage() {
    cat <<'USAGE'
usage: bash executor/scripts/infer.sh --model <dir under models/> --yaml <file under models/<model>/config/>
                                      [--mode offline|online] [--pd-role prefill|decode]
                                      [--p-yaml-name <file>] [--d-yaml-name <file>]
USAGE
}

MODEL=""
MODE="offline"
PD_ROLE=""
YAML_FILE=""
P_YAML_NAME=""
D_YAML_NAME=""
while [ $# -gt 0 ]; do
    case "$1" in
        --model|--yaml|--mode|--pd-role|--p-yaml-name|--d-yaml-name)
            [ $# -ge 2 ] || die "$1 needs a value"
            case "$1" in
                --model) MODEL="$2" ;;
                --yaml) YAML_FILE="$2" ;;
                --mode) MODE="$2" ;;
                --pd-role) PD_ROLE="$2" ;;
                --p-yaml-name) P_YAML_NAME="$2" ;;
                --d-yaml-name) D_YAML_NAME="$2" ;;
            esac
            shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
done
[ -n "$MODEL" ] || { usage >&2; die "--model is required"; }
[ -d "$REPO_ROOT/models/$MODEL" ] || die "no model directory models/$MODEL"
export MODEL_DIR="$MODEL"
export YAML_PARENT_PATH="${REPO_ROOT}/models/${MODEL}/config"
case "$MODE" in
    offline)
        [ -z "$PD_ROLE" ] || die "--pd-role is only valid with --mode online"
        [ -n "$YAML_FILE" ] || { usage >&2; die "--yaml is required"; }
        export YAML="${YAML_PARENT_PATH}/${YAML_FILE}" ;;
    online)
        case "$PD_ROLE" in
            prefill) export YAML="${YAML_PARENT_PATH}/${P_YAML_NAME:-${MODEL}_pd/prefill.yaml}" ;;
            decode) export YAML="${YAML_PARENT_PATH}/${D_YAML_NAME:-${MODEL}_pd/decode.yaml}" ;;
            *) die "--mode online needs --pd-role prefill|decode" ;;
        esac
        export PD_ROLE ;;
    *) die "--mode must be offline or online, not '$MODE'" ;;
esac
[ -f "$YAML" ] || die "no run configuration $YAML"

if launch "$MODE"; then
    echo "infer.sh: finished, results in $WORK_DIR/$RES_PATH" >&2
else
    echo "infer.sh: FAILED, results in $WORK_DIR/$RES_PATH" >&2
    exit 1
fi
