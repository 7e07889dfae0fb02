"""Checks npuprof's torch_npu facts against one extracted torch-npu wheel.

Driven by `cargo xtask fidelity`: the Rust side downloads the wheel, extracts
`torch_npu/profiler/**` under ROOT and writes FACTS (npuprof's facts as JSON, computed from the
project's crates); this script reads the wheel's Python without importing torch (single modules
are executed by path with stub imports, the rest is read with `ast`) and prints one JSON document:
`{"checks": [{"check": NAME, "status": "ok"|"drift"|"error", "reason": ONE_LINE,
"details": [...]}, ...]}`.

Usage: python3 fidelity.py check ROOT FACTS
       python3 fidelity.py extract WHEEL DEST   (only `torch_npu/profiler/**`)
"""

import ast
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import io
import json
import os
import sys
import contextlib
import shutil
import traceback
import types
import zipfile

PROFILER = os.path.join("torch_npu", "profiler")


# ---------------------------------------------------------------------------------------------
# Loading single modules of the wheel without torch


class _Anything:
    """Stands for any object of a stubbed module: callable, attribute-rich, usable as a base."""

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        return _Anything()

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything()

    def __mro_entries__(self, bases):
        return (object,)

    def __iter__(self):
        return iter(())

    def __bool__(self):
        return False

    def __str__(self):
        return ""

    def __add__(self, other):
        return other

    __radd__ = __add__


class _StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything()


class _WheelFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves `torch_npu.profiler.*` from the extracted wheel and stubs every other `torch*`."""

    def __init__(self, root):
        self.root = root

    def find_spec(self, fullname, path=None, target=None):
        top = fullname.split(".")[0]
        if top not in ("torch", "torch_npu"):
            return None
        rel = os.path.join(self.root, *fullname.split("."))
        if fullname.startswith("torch_npu.profiler"):
            if os.path.isdir(rel):
                init = os.path.join(rel, "__init__.py")
                # Packages are bare namespaces: their __init__ imports half of torch_npu.
                spec = importlib.machinery.ModuleSpec(fullname, self, is_package=True)
                spec.submodule_search_locations = [rel]
                spec.origin = init
                return spec
            if os.path.isfile(rel + ".py"):
                return importlib.util.spec_from_file_location(fullname, rel + ".py")
        spec = importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        spec.submodule_search_locations = []
        return spec

    def create_module(self, spec):
        return _StubModule(spec.name)

    def exec_module(self, module):
        pass


@contextlib.contextmanager
def wheel_imports(root):
    """Imports of `torch*` go to the wheel (profiler modules) or to stubs, inside the block."""
    saved = {k: v for k, v in sys.modules.items() if k.split(".")[0] in ("torch", "torch_npu")}
    for k in saved:
        del sys.modules[k]
    finder = _WheelFinder(root)
    sys.meta_path.insert(0, finder)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        sys.meta_path.remove(finder)
        for k in [k for k in sys.modules if k.split(".")[0] in ("torch", "torch_npu")]:
            del sys.modules[k]
        sys.modules.update(saved)


def load(dotted):
    """The wheel's module `torch_npu.profiler.<dotted>`, executed with stub imports (inside
    `wheel_imports`)."""
    return importlib.import_module("torch_npu.profiler." + dotted)


def source(root, *parts):
    with open(os.path.join(root, PROFILER, *parts), encoding="utf-8") as f:
        return f.read()


def wheel_path(*parts):
    return "/".join((PROFILER.replace(os.sep, "/"),) + parts)


def result(check, drifts, ok_reason, details=None, error=None):
    if error is not None:
        return {"check": check, "status": "error", "reason": error, "details": details or []}
    if drifts:
        reason = drifts[0] if len(drifts) == 1 else f"{drifts[0]} (+{len(drifts) - 1} more)"
        return {"check": check, "status": "drift", "reason": reason, "details": drifts}
    return {"check": check, "status": "ok", "reason": ok_reason, "details": details or []}


# ---------------------------------------------------------------------------------------------
# 1. schedule arithmetic


def check_schedule(root, facts):
    cases = facts["schedule"]
    with wheel_imports(root):
        scheduler = load("scheduler")
        params = inspect.signature(scheduler.Schedule.__init__).parameters
        has_skip_first_wait = "skip_first_wait" in params
        drifts = []
        compared = 0
        skipped = 0
        for case in cases:
            args = dict(case["args"])
            if not has_skip_first_wait:
                if args.get("skip_first_wait", 0) != 0:
                    skipped += 1
                    continue
                args.pop("skip_first_wait", None)
            sched = scheduler.Schedule(**args)
            real = [sched(step).name for step in range(len(case["actions"]))]
            compared += 1
            if real != case["actions"]:
                first = next(i for i, (a, b) in enumerate(zip(real, case["actions"])) if a != b)
                drifts.append(
                    f"schedule({fmt_args(case['args'])}) step {first}: "
                    f"torch_npu {real[first]}, npuprof {case['actions'][first]}"
                )
    note = f"{compared} schedules agree step by step"
    if skipped:
        note += f" ({skipped} with skip_first_wait not compared: this build has no such argument)"
    return result("schedule", drifts, note + f" ({wheel_path('scheduler.py')})")


def fmt_args(args):
    return ", ".join(f"{k}={v}" for k, v in args.items())


# ---------------------------------------------------------------------------------------------
# 2. texts npuprof matches


def string_constants(root):
    """Every string constant of the profiler's Python, f-strings' literal parts included."""
    out = []
    base = os.path.join(root, PROFILER)
    for dirpath, _, files in os.walk(base):
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            with open(path, encoding="utf-8", errors="replace") as f:
                tree = ast.parse(f.read())
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    out.append((node.value, rel))
                elif isinstance(node, ast.JoinedStr):
                    # `f"Task [{name}] run failed."`: literal parts joined by a placeholder.
                    parts = [
                        v.value if isinstance(v, ast.Constant) else "\0"
                        for v in node.values
                    ]
                    out.append(("".join(parts), rel))
    return out


def check_texts(root, facts, build):
    """Each text npuprof matches or prints: present in this build? A text npuprof claims for
    this build (`builds` lists it) and is absent is drift; the others are listed as lacking."""
    constants = string_constants(root)
    drifts = []
    present = []
    lacking = []
    for fact in facts["texts"]:
        claimed = fact.get("builds") is not None and build in fact["builds"]
        hits = sorted({rel for value, rel in constants if fact["text"] in value})
        if hits:
            present.append({"text": fact["text"], "file": hits[0]})
        else:
            lacking.append(fact["text"])
            if claimed:
                drifts.append(f"{fact['text']!r} ({fact['owner']}) is in no file of {wheel_path()}")
    reason = f"{len(present)} of {len(facts['texts'])} present"
    if lacking:
        reason += "; lacks " + ", ".join(repr(t) for t in lacking)
    out = result("texts", drifts, reason, [p["text"] for p in present])
    out["present"] = [p["text"] for p in present]
    return out


# ---------------------------------------------------------------------------------------------
# 3. files by level


def _imports(tree):
    """Imported name -> module path relative to the package of the module."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                out[alias.asname or alias.name] = (node.level, node.module)
    return out


def _config_parsers(tree, config):
    """Parser class names of `ParserConfig.<config>[Constant.Text][Constant.TENSORBOARD_TRACE_HANDLER]`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == config for t in node.targets
        ):
            for key, value in zip(node.value.keys, node.value.values):
                if ast.unparse(key).endswith(".Text"):
                    for k2, v2 in zip(value.keys, value.values):
                        if ast.unparse(k2).endswith(".TENSORBOARD_TRACE_HANDLER"):
                            return [ast.unparse(e) for e in v2.elts]
    return None


def _output_names(text):
    """Output file names a parser module names: string constants `name.csv` / `name.json`."""
    names = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            v = node.value
            if (v.endswith(".csv") or v.endswith(".json")) and "/" not in v and " " not in v:
                names.add(v)
    return names


def written_files(root, config):
    """Files the parsers of one level config can write (file name -> the parser naming it)."""
    rel_config = ("analysis", "prof_config", "_parser_config.py")
    tree = ast.parse(source(root, *rel_config))
    parsers = _config_parsers(tree, config)
    if parsers is None:
        raise LookupError(f"{config} not found in {wheel_path(*rel_config)}")
    imports = _imports(tree)
    constant = ast.parse(source(root, "analysis", "prof_common_func", "_constant.py"))
    trace_view = _output_names(ast.unparse(constant)) & {"trace_view.json"}
    files = {}
    for parser in parsers:
        level, module = imports[parser]
        base = os.path.join(root, PROFILER, *rel_config[:-1])
        for _ in range(level - 1):
            base = os.path.dirname(base)
        path = os.path.join(base, *module.split(".")) + ".py"
        with open(path, encoding="utf-8") as f:
            names = _output_names(f.read())
        if parser == "TraceViewParser":
            names |= trace_view
        for name in names:
            files.setdefault(name, parser)
    return files


def check_levels(root, facts):
    none_files = written_files(root, "LEVEL_NONE_CONFIG")
    common_files = written_files(root, "COMMON_CONFIG")
    drifts = []
    for level, expected in facts["levels"].items():
        real = none_files if level == "Level_none" else common_files
        for name in expected:
            if name not in real:
                drifts.append(
                    f"{level}: npuprof expects {name}, no parser of "
                    f"{'LEVEL_NONE_CONFIG' if level == 'Level_none' else 'COMMON_CONFIG'} writes it "
                    f"({wheel_path('analysis/prof_config/_parser_config.py')})"
                )
    details = [
        f"Level_none parsers write: {', '.join(sorted(none_files))}",
        f"Level0-2 parsers write: {', '.join(sorted(common_files))}",
    ]
    sizes = ", ".join(f"{level} {len(files)}" for level, files in facts["levels"].items())
    return result("levels", drifts, f"every file verify expects is written at its level ({sizes})", details)


# ---------------------------------------------------------------------------------------------
# 4. analyse's path rule


def check_paths(root, facts):
    tree_root = facts["paths"]["root"]
    with wheel_imports(root):
        manager = load("analysis.prof_common_func._path_manager").ProfilerPathManager
        drifts = []

        def parsed(rel):
            got = manager.get_profiler_path_list(os.path.join(tree_root, rel))
            return sorted(os.path.relpath(p, tree_root).replace(os.sep, "/") for p in got)

        for case in facts["paths"]["cases"]:
            got = parsed(case["path"])
            if got != sorted(case["parses"]):
                drifts.append(
                    f"analyse('{case['path']}') parses {got or 'nothing'}, npuprof says {case['parses'] or 'nothing'}"
                )
        runs = [c["path"] for c in facts["paths"]["cases"] if c["parses"] == [c["path"]]]
        for suggested in facts["paths"]["suggested"]:
            path = suggested["path"]
            shown = os.path.relpath(path, tree_root) if path.startswith(tree_root) else path
            if not os.path.exists(path):
                # A copy destination (`cp -r <run> <copy>` first): it holds the run it copies.
                copied = [r for r in runs if os.path.basename(r) == os.path.basename(path)]
                if not copied:
                    drifts.append(f"verify suggests analyse('{shown}') ({suggested['code']}), which is no run of the tree")
                    continue
                path = os.path.join(tree_root, copied[0])
            if not manager.get_profiler_path_list(path):
                drifts.append(f"verify suggests analyse('{shown}') ({suggested['code']}), which parses nothing")
    n = len(facts["paths"]["cases"]) + len(facts["paths"]["suggested"])
    return result(
        "paths",
        drifts,
        f"{n} paths parse as npuprof says ({wheel_path('analysis/prof_common_func/_path_manager.py')})",
    )


# ---------------------------------------------------------------------------------------------
# 5. the fake's public API


def _ast_params(fn):
    a = fn.args
    out = []
    pos = a.posonlyargs + a.args
    defaults = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)
    for arg, d in zip(pos, defaults):
        kind = "positional-only" if arg in a.posonlyargs else "positional-or-keyword"
        out.append((arg.arg, kind, d is not None))
    if a.vararg:
        out.append((a.vararg.arg, "var-positional", False))
    for arg, d in zip(a.kwonlyargs, a.kw_defaults):
        out.append((arg.arg, "keyword-only", d is not None))
    if a.kwarg:
        out.append((a.kwarg.arg, "var-keyword", False))
    return out


_KINDS = {
    inspect.Parameter.POSITIONAL_ONLY: "positional-only",
    inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional-or-keyword",
    inspect.Parameter.VAR_POSITIONAL: "var-positional",
    inspect.Parameter.KEYWORD_ONLY: "keyword-only",
    inspect.Parameter.VAR_KEYWORD: "var-keyword",
}


def _inspect_params(obj):
    sig = inspect.signature(obj)
    return [
        (p.name, _KINDS[p.kind], p.default is not inspect.Parameter.empty)
        for p in sig.parameters.values()
    ]


def _find(tree, name):
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and node.name == name:
            return node
    return None


def _init(cls):
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            return node
    return None


def _members(cls):
    out = []
    for node in cls.body:
        if isinstance(node, ast.Assign):
            out += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.append(node.target.id)
    return [m for m in out if not m.startswith("_")]


def _compare_params(api, real, fake):
    drifts = []
    real_by = {n: (k, d) for n, k, d in real}
    fake_by = {n: (k, d) for n, k, d in fake}
    for name, (kind, default) in fake_by.items():
        if name not in real_by:
            if kind.startswith("var-"):
                continue
            drifts.append(f"{api}: the fake accepts {name!r}, torch_npu has no such parameter")
        elif real_by[name][0] != kind:
            drifts.append(f"{api}: {name!r} is {real_by[name][0]} in torch_npu, {kind} in the fake")
        elif real_by[name][1] != default:
            has = "has a default" if real_by[name][1] else "is required"
            drifts.append(f"{api}: {name!r} {has} in torch_npu, not in the fake")
    if not any(k == "var-keyword" for k, _ in fake_by.values()):
        for name, (kind, default) in real_by.items():
            if name not in fake_by and not kind.startswith("var-"):
                drifts.append(f"{api}: torch_npu accepts {name!r}, the fake does not")
    return drifts


def check_api(root, facts):
    fake_root = facts["api"]["fake_root"]
    sys.path.insert(0, fake_root)
    for k in [k for k in sys.modules if k.split(".")[0] == "torch_npu"]:
        del sys.modules[k]
    try:
        fake = __import__("torch_npu.profiler", fromlist=["profiler"])
        fake_analyse = fake.profiler.analyse
    finally:
        sys.path.remove(fake_root)
        for k in [k for k in sys.modules if k.split(".")[0] == "torch_npu"]:
            del sys.modules[k]
    profiler = ast.parse(source(root, "profiler.py"))
    scheduler = ast.parse(source(root, "scheduler.py"))
    experimental = ast.parse(source(root, "experimental_config.py"))
    drifts = []
    compared = []

    def func(api, tree, name, fake_obj, is_class):
        node = _find(tree, name)
        if node is None:
            drifts.append(f"{api}: not defined where expected in {wheel_path()}")
            return
        fn = _init(node) if is_class else node
        if fn is None:
            drifts.append(f"{api}: torch_npu's class has no __init__ of its own")
            return
        real = _ast_params(fn)
        if is_class:
            real = real[1:]
        drifts.extend(_compare_params(api, real, _inspect_params(fake_obj)))
        compared.append(api)

    func("profile", profiler, "profile", fake.profile, True)
    func("tensorboard_trace_handler", profiler, "tensorboard_trace_handler", fake.tensorboard_trace_handler, False)
    func("analyse", profiler, "analyse", fake_analyse, False)
    func("schedule", scheduler, "Schedule", fake.schedule, True)
    func("_ExperimentalConfig", experimental, "_ExperimentalConfig", fake._ExperimentalConfig, True)
    for enum, tree in [
        ("ProfilerLevel", experimental),
        ("AiCMetrics", experimental),
        ("ExportType", experimental),
        ("ProfilerAction", scheduler),
    ]:
        node = _find(tree, enum)
        if node is None:
            drifts.append(f"{enum}: not defined in {wheel_path()}")
            continue
        real = set(_members(node))
        obj = getattr(fake, enum)
        fake_members = {m for m in dir(obj) if not m.startswith("_")}
        if hasattr(obj, "__members__"):
            fake_members = set(obj.__members__)
        for m in sorted(fake_members - real):
            drifts.append(f"{enum}.{m}: in the fake, not in torch_npu")
        for m in sorted(real - fake_members):
            drifts.append(f"{enum}.{m}: in torch_npu, not in the fake")
        compared.append(enum)
    real_key_averages = any(
        isinstance(n, ast.FunctionDef) and n.name == "key_averages" for n in ast.walk(profiler)
    )
    if hasattr(fake.profile, "key_averages") and not real_key_averages:
        drifts.append("profile.key_averages: in the fake, torch_npu's profile has none")
    methods = {
        n.name
        for cls in profiler.body
        if isinstance(cls, ast.ClassDef)
        for n in cls.body
        if isinstance(n, ast.FunctionDef)
    }
    for name in facts["api"].get("trace_handler_alternatives", []):
        if name not in methods:
            drifts.append(f"lint takes profile.{name}() for a trace-handler alternative; no class of {wheel_path('profiler.py')} has it")
    return result("api", drifts, f"the fake's {', '.join(compared)} match")


# ---------------------------------------------------------------------------------------------
# 6. AiCoreNone promotion


def check_aicore_none(root, facts, build):
    with wheel_imports(root):
        cfg = load("experimental_config")
        level1 = cfg.ProfilerLevel.Level1
        none = cfg.AiCMetrics.AiCoreNone
        config = cfg._ExperimentalConfig(profiler_level=level1, aic_metrics=none)
        promoted = config._aic_metrics != none
    expected = build in facts["aicore_none"]["promoting_builds"]
    if promoted == expected:
        return result(
            "aicore-none",
            [],
            f"Level1 + AiCoreNone is {'promoted to ' + str(config._aic_metrics) if promoted else 'kept (no pipe metrics)'}, as lint says",
        )
    says = "promotes" if expected else "does not promote"
    real = f"promotes it to {config._aic_metrics}" if promoted else "keeps it"
    return result(
        "aicore-none",
        [f"lint says this build {says} Level1 + AiCoreNone; _ExperimentalConfig {real} ({wheel_path('experimental_config.py')})"],
        "",
    )


CHECKS = [
    ("schedule", lambda root, facts, build: check_schedule(root, facts)),
    ("texts", check_texts),
    ("levels", lambda root, facts, build: check_levels(root, facts)),
    ("paths", lambda root, facts, build: check_paths(root, facts)),
    ("api", lambda root, facts, build: check_api(root, facts)),
    ("aicore-none", check_aicore_none),
]


def extract(wheel, dest):
    """Extracts `torch_npu/profiler/**` of WHEEL into DEST (replaced whole)."""
    prefix = "torch_npu/profiler/"
    tmp = dest + ".partial"
    shutil.rmtree(tmp, ignore_errors=True)
    with zipfile.ZipFile(wheel) as z:
        members = [m for m in z.namelist() if m.startswith(prefix) and ".." not in m.split("/")]
        if not members:
            raise SystemExit(f"{wheel}: no {prefix} in the wheel")
        z.extractall(tmp, members)
    shutil.rmtree(dest, ignore_errors=True)
    os.rename(tmp, dest)


def check(root, facts_path):
    with open(facts_path, encoding="utf-8") as f:
        facts = json.load(f)
    build = facts["build"]
    out = []
    for name, run in CHECKS:
        try:
            out.append(run(root, facts, build))
        except Exception as e:  # a check that cannot run is reported, the others still run
            last = traceback.extract_tb(e.__traceback__)[-1]
            where = f"{os.path.basename(last.filename)}:{last.lineno}"
            out.append(result(name, [], "", error=f"{type(e).__name__}: {e} (at {where})"))
    json.dump({"build": build, "checks": out}, sys.stdout, indent=1)
    sys.stdout.write("\n")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "extract":
        extract(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
