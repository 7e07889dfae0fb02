#!/bin/bash
# pangu_7b's own launcher: cd models/pangu_7b && bash infer.sh
# YAML_FILE_NAME is set here (an exported one is overwritten).
SCRIPT_PATH=$(cd "$(dirname "${BASH_SOURCE[0]}")" &>/dev/null && pwd)
FUNCTION_ABS_PATH=$(realpath "${SCRIPT_PATH}/../../executor/scripts/function.sh")

source ${FUNCTION_ABS_PATH}

export MODEL_DIR=$(basename "$SCRIPT_PATH")
export YAML_PARENT_PATH="${SCRIPT_PATH}/config"
export YAML_FILE_NAME="pangu_mini_7b.yaml" # modify to your yaml file name
export YAML=${YAML_PARENT_PATH}/${YAML_FILE_NAME}

launch
