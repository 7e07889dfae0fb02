use super::*;

/// A manager-style profiler module in the shape of the shared engine's (our own text).
const MANAGER: &str = r#"import os
import torch_npu


class Stub:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        pass

    @staticmethod
    def step():
        return


def create_profiler(enable_profiler=False, profile_save_path="prof", active=3, repeat=1, skip_first=3):
    if enable_profiler:
        return torch_npu.profiler.profile(
            schedule=torch_npu.profiler.schedule(
                wait=0,
                warmup=0,
                active=active,
                repeat=repeat,
                skip_first=skip_first),
            on_trace_ready=torch_npu.profiler.tensorboard_trace_handler(profile_save_path))
    return Stub()


class Manager:
    def __init__(self, enable, path):
        self.enable = enable
        self.path = path
        self.current_profiler = Stub()

    def set_status(self, is_prefill):
        if is_prefill:
            self.current_profiler = create_profiler(
                enable_profiler=self.enable, profile_save_path=os.path.join(self.path, "prof", "prefill"),
                active=1, repeat=1, skip_first=0)
            self.current_profiler.start()
        else:
            self.current_profiler.stop()
            self.current_profiler = create_profiler(enable_profiler=self.enable,
                profile_save_path=os.path.join(self.path, "prof", "decode"))
            self.current_profiler.start()
"#;

fn facts(source: &str) -> (FileFacts, Vec<Site>) {
    let tree = parse(source).unwrap();
    assert_eq!(syntax_error_line(&tree), None);
    let facts = factories(&tree, source);
    let sites = sites(&tree, source, &facts.factories);
    (facts, sites)
}

fn value(site: &Site, field: WindowField) -> Option<i64> {
    site.source(field).value(field)
}

#[test]
fn the_manager_shape_yields_its_factory_and_two_phase_sites() {
    let (facts, sites) = facts(MANAGER);
    let [factory] = facts.factories.as_slice() else {
        panic!("{facts:?}")
    };
    assert_eq!(factory.name, "create_profiler");
    assert_eq!(factory.disabled.as_deref(), Some("Stub"));
    assert_eq!(factory.enable_parameter.as_deref(), Some("enable_profiler"));
    assert_eq!(factory.save_parameter.as_deref(), Some("profile_save_path"));
    let phases: Vec<Phase> = sites.iter().map(|s| s.phase).collect();
    assert_eq!(phases, [Phase::Prefill, Phase::Decode]);
    let (prefill, decode) = (&sites[0], &sites[1]);
    assert_eq!(
        prefill.assigned_to.as_deref(),
        Some("self.current_profiler")
    );
    assert!(matches!(
        prefill.source(WindowField::Active),
        ValueSource::Argument { .. }
    ));
    assert_eq!(value(prefill, WindowField::SkipFirst), Some(0));
    assert!(matches!(
        decode.source(WindowField::Active),
        ValueSource::Default { .. }
    ));
    assert_eq!(value(decode, WindowField::Active), Some(3));
    assert_eq!(value(decode, WindowField::Wait), Some(0));
    assert!(matches!(
        decode.source(WindowField::Wait),
        ValueSource::Fixed { .. }
    ));
    assert_eq!(decode.path_literals, ["prof", "decode"]);
    assert_eq!(decode.function, "Manager.set_status");
    let tree = parse(MANAGER).unwrap();
    assert_eq!(
        methods_called_on(&tree, MANAGER, "self.current_profiler"),
        ["start", "stop"]
    );
    assert_eq!(
        class_methods(&tree, MANAGER, "Stub").unwrap(),
        ["__enter__", "__exit__", "step"]
    );
}

#[test]
fn names_layout_and_line_endings_do_not_matter() {
    let renamed = MANAGER
        .replace("create_profiler", "build_npu_prof")
        .replace("current_profiler", "p")
        .replace("Manager", "Holder")
        .replace(
            "enable_profiler=False, profile_save_path=\"prof\", active=3",
            "enable_profiler=False, profile_save_path=\"prof\", *, active=3",
        )
        .replace("    ", "\t")
        .replace('\n', "\r\n");
    let (facts, sites) = facts(&renamed);
    assert_eq!(facts.factories[0].name, "build_npu_prof");
    assert!(!facts.factories[0].parameter("active").unwrap().positional);
    assert_eq!(sites.len(), 2);
    assert_eq!(sites[1].assigned_to.as_deref(), Some("self.p"));
    assert_eq!(value(&sites[1], WindowField::SkipFirst), Some(3));
}

#[test]
fn the_last_definition_wins_and_the_redefinition_is_reported() {
    let twice = format!(
        "{MANAGER}\n\ndef create_profiler(enable_profiler=False, profile_save_path=\"p\", active=5, repeat=1, skip_first=2):\n    return torch_npu.profiler.profile(schedule=torch_npu.profiler.schedule(active=active, repeat=repeat, skip_first=skip_first), on_trace_ready=torch_npu.profiler.tensorboard_trace_handler(profile_save_path))\n"
    );
    let (facts, sites) = facts(&twice);
    assert_eq!(facts.factories.len(), 1);
    assert_eq!(facts.redefined[0].0, "create_profiler");
    assert_eq!(facts.redefined[0].1.len(), 2);
    assert_eq!(value(&sites[1], WindowField::Active), Some(5));
}

/// A static factory on a runner class, called from model loops in the legacy shape.
const RUNNER: &str = r#"import os
import torch_npu


class Quiet:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    @staticmethod
    def step():
        pass


class Runner:
    @staticmethod
    def define_profiler(enable_profiler=False, profile_save_path="prof", active=10, repeat=1, skip_first=10):
        if enable_profiler:
            prof = torch_npu.profiler.profile(
                schedule=torch_npu.profiler.schedule(wait=0, warmup=0, active=active, repeat=repeat, skip_first=skip_first),
                on_trace_ready=torch_npu.profiler.tensorboard_trace_handler(profile_save_path))
        else:
            prof = Quiet()
        return prof
"#;

const LOOP: &str = r#"import os


class Infer:
    SKIP_ROUNDS = 10
    ACTIVE_ROUNDS = 10

    def _path(self, phase):
        return os.path.join(self.runner.res_path, "prof", phase)

    def generate(self, enable):
        pre = self.runner.define_profiler(enable_profiler=enable,
                    profile_save_path=os.path.join(self.runner.res_path, "prefill", "prof"),
                    active=1, skip_first=5, repeat=1)
        with pre as prof:
            prof.step()
        dec = self.runner.define_profiler(
            enable_profiler=True,
            profile_save_path=self._path("decode"),
            active=self.ACTIVE_ROUNDS,
            skip_first=self.SKIP_ROUNDS,
        )
"#;

#[test]
fn a_static_factory_is_found_and_its_calls_in_another_file_resolve() {
    let (facts, _) = facts(RUNNER);
    let factory = &facts.factories[0];
    assert_eq!(factory.class.as_deref(), Some("Runner"));
    assert_eq!(factory.disabled.as_deref(), Some("Quiet"));
    let tree = parse(LOOP).unwrap();
    let sites = sites(&tree, LOOP, &facts.factories);
    assert_eq!(sites.len(), 2);
    let (pre, dec) = (&sites[0], &sites[1]);
    assert_eq!(pre.phase, Phase::Prefill);
    assert_eq!(pre.path_literals, ["prefill", "prof"]);
    assert_eq!(value(pre, WindowField::SkipFirst), Some(5));
    assert_eq!(dec.phase, Phase::Decode);
    assert_eq!(dec.path_literals, ["prof", "decode"]);
    match dec.source(WindowField::Active) {
        ValueSource::ClassConstant { name, span } => {
            assert_eq!(name, "ACTIVE_ROUNDS");
            assert_eq!(span.int(), Some(10));
        }
        other => panic!("{other:?}"),
    }
    assert!(dec.multiline);
    assert!(matches!(
        dec.source(WindowField::Repeat),
        ValueSource::Default { .. }
    ));
}

#[test]
fn a_call_hiding_its_arguments_in_a_splat_is_not_a_site() {
    let (facts, _) = facts(RUNNER);
    let source = "x = R.define_profiler(**kw)\ny = R.define_profiler(True, 'prof/decode', *a)\n";
    let tree = parse(source).unwrap();
    assert!(sites(&tree, source, &facts.factories).is_empty());
}
