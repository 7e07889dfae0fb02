# wan-mini's entry script (multimedia launcher). It has no profiler and no
# switch for one: profiling it means adding a profiler to the code.
import argparse


def main():
    parser = argparse.ArgumentParser(description="wan-mini text-to-video sampling")
    parser.add_argument("--ckpt_dir", default="")
    parser.add_argument("--prompt", default="")
    parser.add_argument("--task", default="t2v-mini")
    parser.add_argument("--size", default="832*480")
    parser.add_argument("--frame_num", type=int, default=9)
    parser.add_argument("--sample_steps", type=int, default=4)
    parser.add_argument("--base_seed", type=int, default=100)
    args = parser.parse_args()
    latents = [(args.base_seed + i) % 65521 for i in range(args.frame_num * 8)]
    for step in range(args.sample_steps):
        latents = [(5 * value + step) % 65521 for value in latents]
    print(f"[wan-mini] {args.sample_steps} denoising steps, checksum {sum(latents) % 65521}", flush=True)


if __name__ == "__main__":
    main()
