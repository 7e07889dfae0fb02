# hunyuan-mini's entry script (started by executor/scripts/mm_function.sh from
# models/hunyuan-mini): parses the model_args flags and runs the denoising loop.
import argparse

from hyvideo.pipeline import run_pipeline


def parse_args():
    parser = argparse.ArgumentParser(description="hunyuan-mini text-to-video sampling")
    parser.add_argument("--model-base", default="ckpts")
    parser.add_argument("--prompt", default="")
    parser.add_argument("--video-size", type=int, nargs=2, default=[240, 320])
    parser.add_argument("--video-length", type=int, default=9)
    parser.add_argument("--infer-steps", type=int, default=8)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--flow-reverse", action="store_true")
    parser.add_argument("--prof-dit", action="store_true", help="profile the DiT denoising loop")
    parser.add_argument("--prof-prefix", type=str, default="", help="sub-folder of ./prof/DiT_prof/")
    return parser.parse_args()


if __name__ == "__main__":
    args = parse_args()
    steps = run_pipeline(args)
    print(f"[hunyuan-mini] {steps} denoising steps, prof_dit {args.prof_dit}", flush=True)
