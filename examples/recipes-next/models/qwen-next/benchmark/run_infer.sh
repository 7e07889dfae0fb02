#!/bin/bash
# The benchmark's own launcher (recipes-next miniature): it runs the shared engine's entry, or
# the benchmark's rank entry named by BENCHMARK_ENTRY, with this directory's YAML. It is not
# infer.sh --model M --yaml F: the YAML is outside config/.
set -eo pipefail
SCRIPT_PATH=$(cd "$(dirname "${BASH_SOURCE[0]}")" &>/dev/null && pwd)
REPO_ROOT=$(cd "${SCRIPT_PATH}/../../.." &>/dev/null && pwd)
YAML_PATH="${1:-${SCRIPT_PATH}/mmlu_test.yaml}"
ENTRY="${BENCHMARK_ENTRY:-${REPO_ROOT}/executor/offline/infer.py}"
python3 -u "${ENTRY}" --yaml_file_path="${YAML_PATH}"
