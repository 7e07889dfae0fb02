from ..prof_common_func._constant import Constant
from ..prof_view._trace import TraceParser as TraceViewParser
from ..prof_view._views import KernelViewParser


class ParserConfig:
    LEVEL_NONE_CONFIG = {Constant.Text: {Constant.TENSORBOARD_TRACE_HANDLER: [TraceViewParser]}}
    COMMON_CONFIG = {
        Constant.Text: {Constant.TENSORBOARD_TRACE_HANDLER: [TraceViewParser, KernelViewParser]}
    }
