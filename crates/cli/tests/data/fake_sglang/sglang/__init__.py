"""A fake SGLang for npuprof's tests (see ../README.md): `python -m sglang.launch_server`."""
