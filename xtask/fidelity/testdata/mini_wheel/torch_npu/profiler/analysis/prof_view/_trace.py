from ..prof_common_func._constant import Constant


class TraceParser:
    OUT = Constant.TRACE_VIEW
