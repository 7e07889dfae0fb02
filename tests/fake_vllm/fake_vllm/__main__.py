"""`python3 -m fake_vllm serve MODEL [options]`."""
import sys

from fake_vllm.cli import main

sys.exit(main(sys.argv[1:]))
