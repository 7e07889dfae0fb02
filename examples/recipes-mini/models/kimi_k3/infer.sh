#!/bin/bash
# kimi_k3's own launcher: cd models/kimi_k3 && bash infer.sh
# Unlike glm_5_2's, it honours YAML_FILE_NAME from the environment:
#   YAML_FILE_NAME=<file under config/> bash infer.sh
SCRIPT_PATH=$(cd "$(dirname "${BASH_SOURCE[0]}")" &>/dev/null && pwd)
FUNCTION_ABS_PATH=$(realpath "${SCRIPT_PATH}/../../executor/scripts/function.sh")

source "${FUNCTION_ABS_PATH}"

export MODEL_DIR=$(basename "${SCRIPT_PATH}")
export YAML_PARENT_PATH="${SCRIPT_PATH}/config"
export YAML_FILE_NAME="${YAML_FILE_NAME:-kimi_mini_rank_1.yaml}"
export YAML="${YAML_PARENT_PATH}/${YAML_FILE_NAME}"

launch
