#!/bin/bash
# hunyuan-mini's launcher (multimedia family): cd models/hunyuan-mini && bash infer.sh
# The configuration is set here (YAML_FILE_NAME); profiling is switched on by
# adding `prof-dit: true` under model_args in that YAML.
SCRIPT_PATH=$(cd "$(dirname "${BASH_SOURCE[0]}")" &>/dev/null && pwd)
MM_FUNCTION_ABS_PATH=$(realpath "${SCRIPT_PATH}/../../executor/scripts/mm_function.sh")

source ${MM_FUNCTION_ABS_PATH}

export MODEL_DIR=$(basename "$SCRIPT_PATH")
export YAML_PARENT_PATH="${SCRIPT_PATH}/config"
export YAML_FILE_NAME=single.yaml
export YAML=${YAML_PARENT_PATH}/${YAML_FILE_NAME}

mm_launch
