#!/bin/bash
# Offline (or emulated online) inference launcher.
#
#   bash executor/scripts/infer.sh --model <dir under models/> --yaml <file under models/<model>/config/>
#
# See function.sh for the output layout (WORK_DIR, RES_PATH, log_<rank>.log).
# Exits non-zero if any rank fails.
source "$(dirname "${BASH_SOURCE[0]}")/function.sh"

parse_args "$@"
set_env
if launch; then
    echo "infer.sh: finished, results in $WORK_DIR/$RES_PATH" >&2
else
    echo "infer.sh: FAILED, results in $WORK_DIR/$RES_PATH" >&2
    exit 1
fi
