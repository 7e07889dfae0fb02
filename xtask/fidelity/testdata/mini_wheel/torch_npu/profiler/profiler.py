class profile:
    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None):
        self.schedule = schedule

    def export_chrome_trace(self, output_path):
        pass


def tensorboard_trace_handler(dir_name=None, worker_name=None):
    return None


def analyse(profiler_path, max_process_number=1):
    return None
