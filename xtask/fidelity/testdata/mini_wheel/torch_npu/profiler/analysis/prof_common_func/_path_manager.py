import os
import re

from ._constant import Constant


class ProfilerPathManager:
    @classmethod
    def is_run(cls, path):
        if os.path.isdir(os.path.join(path, Constant.FRAMEWORK_DIR)):
            return True
        return any(re.match(r"^PROF_\d+_\d+_[0-9a-zA-Z]+", d) for d in os.listdir(path))

    @classmethod
    def get_profiler_path_list(cls, input_path):
        if not os.path.isdir(input_path):
            return []
        if cls.is_run(input_path):
            return [input_path]
        subs = [os.path.join(input_path, d) for d in os.listdir(input_path)]
        return [p for p in subs if os.path.isdir(p) and cls.is_run(p)]
