# hunyuan-mini's DiT denoising loop. With --prof-dit a hand-written profiler
# (wait 0, warmup 4, active 1: the 5th denoising step) is started before the
# loop, stepped after every step and stopped after it. Its output goes to
# ./prof/DiT_prof/<prof prefix>, relative to the working directory.
import os

import torch_npu


def dit_step(latents, step):
    return [(3 * value + step * 7 + 1) % 65521 for value in latents]


def run_pipeline(args):
    height, width = args.video_size
    latents = [(args.seed * 31 + i) % 65521 for i in range(height * width // 1200 + args.video_length)]
    if args.prof_dit:
        experimental_config = torch_npu.profiler._ExperimentalConfig(
            export_type=torch_npu.profiler.ExportType.Text,
            profiler_level=torch_npu.profiler.ProfilerLevel.Level1,
            msprof_tx=False,
            aic_metrics=torch_npu.profiler.AiCMetrics.AiCoreNone,
            l2_cache=False,
            op_attr=False,
            data_simplification=False,
            record_op_args=False,
            gc_detect_threshold=None
        )
        prof = torch_npu.profiler.profile(
            activities=[
                torch_npu.profiler.ProfilerActivity.CPU,
                torch_npu.profiler.ProfilerActivity.NPU
                ],
            schedule=torch_npu.profiler.schedule(wait=0, warmup=4, active=1, repeat=1, skip_first=0),
            on_trace_ready=torch_npu.profiler.tensorboard_trace_handler(os.path.join("./prof/DiT_prof/",
                                                                            args.prof_prefix)),
            record_shapes=False,
            profile_memory=False,
            with_stack=False,
            with_modules=False,
            with_flops=False,
            experimental_config=experimental_config)
        prof.start()

    for step in range(args.infer_steps):
        latents = dit_step(latents, step)
        if args.prof_dit:
            prof.step()

    if args.prof_dit:
        prof.stop()
    return args.infer_steps
