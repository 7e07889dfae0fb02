STOP_WARMUP = "Incorrect schedule: Stop profiler while current state is WARMUP which will result in empty parsed data."
NEEDED = "a text the self-test claims"
