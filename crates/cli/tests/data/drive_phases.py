# Plays the newer engine's call order on the ProfilerManager of the repository given as
# argv[1] into the directory argv[3]: encode and prefill alternating for two requests, then N decode forwards (argv[2]),
# with step() after each forward, and the manager dropped at the end (which stops decode).
import sys

sys.path.insert(0, sys.argv[1])
from executor.utils.profiler_context import ProfilerManager, ProfilerPhase  # noqa: E402

decode_forwards = int(sys.argv[2])
manager = ProfilerManager(True, sys.argv[3])
for _ in range(2):
    manager.set_status(ProfilerPhase.MM_ENCODE)
    manager.step()
    manager.set_status(ProfilerPhase.PREFILL)
    manager.step()
for _ in range(decode_forwards):
    manager.set_status(ProfilerPhase.DECODE)
    manager.step()
manager.current_profiler.stop()
manager.enable_profiler = False
