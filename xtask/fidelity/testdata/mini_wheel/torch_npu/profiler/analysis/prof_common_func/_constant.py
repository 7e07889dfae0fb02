class Constant:
    FRAMEWORK_DIR = "FRAMEWORK"
    TRACE_VIEW = "trace_view.json"
