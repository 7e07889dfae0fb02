#!/bin/bash
# glm_5_2's own launcher: cd models/glm_5_2 && bash infer.sh
#
# YAML_FILE_NAME is set here (an exported YAML_FILE_NAME is overwritten): edit
# this line to run another configuration. Results: the launcher's RES_PATH,
# relative to the working directory (so models/glm_5_2/res/... when run from here).
SCRIPT_PATH=$(cd "$(dirname "${BASH_SOURCE[0]}")" &>/dev/null && pwd)
FUNCTION_ABS_PATH=$(realpath "${SCRIPT_PATH}/../../executor/scripts/function.sh")

source "${FUNCTION_ABS_PATH}"

export MODEL_DIR=$(basename "$SCRIPT_PATH")
export YAML_PARENT_PATH="${SCRIPT_PATH}/config"
export YAML_FILE_NAME=glm_mini_rank_2.yaml # modify to your yaml file name
export YAML=${YAML_PARENT_PATH}/${YAML_FILE_NAME}

launch
