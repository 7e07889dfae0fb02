//! The semantic layer on the shapes lint, inject and the repository rely on: each case a
//! value that is known, and one that is not, with the reason.

use npuprof_syntax::semantic::resolve::Frame;
use npuprof_syntax::semantic::value::{Evaluator, Module, PathPart, Value};
use npuprof_syntax::semantic::{SemanticModel, table_names};
use npuprof_syntax::{callee, descendants, descendants_in_scope, named_children, parse, text};
use tree_sitter::Node;

const DISPATCH: &str = include_str!("data/dispatch.py");

/// The `n`-th node (0-based) whose text is `wanted` and whose kind is `kind`.
fn find<'t>(root: Node<'t>, source: &str, kind: &str, wanted: &str, n: usize) -> Node<'t> {
    descendants(root)
        .into_iter()
        .filter(|x| x.kind() == kind && text(*x, source) == wanted)
        .nth(n)
        .unwrap_or_else(|| panic!("no {kind} `{wanted}` #{n}"))
}

#[test]
fn module_constants_unpacked_and_multiplied_are_known_with_their_trail() {
    let tree = parse(DISPATCH).expect("tree");
    let model = SemanticModel::new(tree.root_node(), DISPATCH);
    let steps = find(
        tree.root_node(),
        DISPATCH,
        "binary_operator",
        "ACTIVE * 2",
        0,
    );
    let found = model.int(steps, None).expect("known");
    assert_eq!(found.value, 6);
    assert_eq!(found.trail.resolved, ["ACTIVE = 3 (line 10)"]);
}

#[test]
fn a_parameter_takes_the_argument_of_its_one_call_and_argparse_its_default() {
    let tree = parse(DISPATCH).expect("tree");
    let root = tree.root_node();
    let model = SemanticModel::new(root, DISPATCH);
    // `steps` of run_prefill: its one call passes `args.steps`, whose default is "4".
    let steps = find(root, DISPATCH, "identifier", "steps", 1);
    let found = model.int(steps, None).expect("known");
    assert_eq!(found.value, 4);
    assert_eq!(
        found.trail.runtime,
        ["`--steps` from the command line, default 4"]
    );
}

#[test]
fn a_required_option_is_unknown_with_the_reason() {
    let tree = parse(DISPATCH).expect("tree");
    let model = SemanticModel::new(tree.root_node(), DISPATCH);
    let repeat = find(tree.root_node(), DISPATCH, "attribute", "args.repeat", 0);
    assert_eq!(
        model.int(repeat, None).expect_err("unknown"),
        "`--repeat` is required on the command line (no default)"
    );
}

#[test]
fn the_phases_dict_dispatches_to_its_functions_and_its_key_is_unknown() {
    let tree = parse(DISPATCH).expect("tree");
    let root = tree.root_node();
    let model = SemanticModel::new(root, DISPATCH);
    let table = find(root, DISPATCH, "identifier", "PHASES", 1);
    let (value, _) = model.expression(table, None);
    assert_eq!(value.kind(), "dictionary");
    assert_eq!(table_names(value, DISPATCH), ["run_prefill", "run_decode"]);
    // The key is read from the environment at run time (default "decode"): no integer.
    let phase = find(root, DISPATCH, "identifier", "PHASE", 2);
    assert_eq!(
        model.int(phase, None).expect_err("unknown"),
        "`\"decode\"` is not an integer lint can compute"
    );
    // The dispatched functions are entered only through the table: no direct call of decode.
    let decode = model
        .local_function(find(
            root,
            DISPATCH,
            "call",
            "run_prefill(None, None, args.steps)",
            0,
        ))
        .expect("run_prefill is local");
    assert_eq!(model.call_sites(decode).len(), 1);
}

#[test]
fn import_aliases_resolve_to_qualified_paths_and_others_do_not() {
    let tree = parse(DISPATCH).expect("tree");
    let model = SemanticModel::new(tree.root_node(), DISPATCH);
    let imports = model.imports();
    assert_eq!(
        imports.resolve("npu_profile").as_deref(),
        Some("torch_npu.profiler.profile")
    );
    assert_eq!(imports.resolve("osp.join").as_deref(), Some("os.path.join"));
    assert_eq!(imports.resolve("torch.profiler.profile"), None);
}

#[test]
fn a_name_bound_twice_or_imported_is_unknown_with_the_reason() {
    let source = "import torch\nN = 2\nN = 3\nprint(N, torch)\n";
    let tree = parse(source).expect("tree");
    let root = tree.root_node();
    let model = SemanticModel::new(root, source);
    let n = find(root, source, "identifier", "N", 2);
    assert_eq!(
        model.int(n, None).expect_err("twice"),
        "`N` is assigned more than once"
    );
    let torch = find(root, source, "identifier", "torch", 1);
    assert_eq!(
        model.int(torch, None).expect_err("imported"),
        "`torch` is imported"
    );
}

#[test]
fn a_frame_binds_parameters_to_its_call() {
    let source = "def make(active=1):\n    return active\nmake(active=5)\nmake(active=7)\n";
    let tree = parse(source).expect("tree");
    let root = tree.root_node();
    let model = SemanticModel::new(root, source);
    let def = named_children(root)[0];
    let active = find(root, source, "identifier", "active", 1);
    // Two calls disagree: unknown without a frame.
    assert!(model.int(active, None).is_err());
    let call = find(root, source, "call", "make(active=7)", 0);
    let found = model.int(active, Some(Frame { def, call })).expect("known");
    assert_eq!(found.value, 7);
}

/// Evaluates the expression of the last statement of `source` with the module's constants.
fn value_of(source: &str) -> Value {
    let tree = parse(source).expect("tree");
    let root = tree.root_node();
    let module = Module::read(root, source);
    let last = named_children(root).last().copied().expect("a statement");
    let expression = last.named_child(0).expect("an expression");
    Evaluator::new(&module, source).eval(expression, &Vec::new())
}

#[test]
fn f_strings_of_known_parts_are_strings_and_others_unknown() {
    assert_eq!(
        value_of("BASE = 'prof'\nN = 2\nf\"{BASE}/decode_{N}\"\n"),
        Value::Str("prof/decode_2".into())
    );
    assert_eq!(
        value_of("f\"{BASE}/x\"\n"),
        Value::Unknown("`BASE` is neither a local nor a module constant here".into())
    );
    assert_eq!(
        value_of("BASE = 'prof'\nf\"{BASE!r}\"\n"),
        Value::Unknown("`{BASE!r}` formats with a conversion or format spec".into())
    );
    assert_eq!(
        value_of("BASE = 'prof'\nf\"{BASE:>8}\"\n"),
        Value::Unknown("`{BASE:>8}` formats with a conversion or format spec".into())
    );
    assert_eq!(
        value_of("f\"{(1, 2)}\"\n"),
        Value::Unknown("`(1, 2)` in an f-string is not a string or an integer".into())
    );
}

#[test]
fn os_path_join_keeps_known_parts_and_names_the_unknown_ones() {
    assert_eq!(
        value_of("ROOT = 'res'\nos.path.join(ROOT, 'prof', f'{ROOT}_x')\n"),
        Value::Path(vec![
            PathPart::Known("res".into()),
            PathPart::Known("prof".into()),
            PathPart::Known("res_x".into())
        ])
    );
    assert_eq!(
        value_of("os.path.join(base, 'prof')\n"),
        Value::Path(vec![
            PathPart::Unknown("base".into()),
            PathPart::Known("prof".into())
        ])
    );
}

#[test]
fn a_value_read_from_the_loaded_run_config_follows_the_config() {
    let source = "def main():\n    cfg = yaml.safe_load(stream)\n    steps = cfg.get('steps', 3)\n    run(steps)\n";
    let tree = parse(source).expect("tree");
    let root = tree.root_node();
    let module = Module::read(root, source);
    let function = named_children(root)[0];
    let call = descendants_in_scope(function.child_by_field_name("body").expect("body"))
        .into_iter()
        .find(|n| n.kind() == "call" && callee(*n, source).as_deref() == Some("run"))
        .expect("run(...)");
    let loaders = ["yaml.safe_load".to_owned()];
    let steps = |config: Option<&Value>| {
        let ev = Evaluator {
            run_config: config,
            loaders: &loaders,
            ..Evaluator::new(&module, source)
        };
        let locals = ev.bindings_at(function, call, Vec::new()).expect("reached");
        locals
            .iter()
            .rev()
            .find(|(n, _)| n == "steps")
            .expect("steps")
            .1
            .clone()
    };
    let config = Value::Dict(vec![("steps".into(), Value::Int { value: 9, at: 0..1 })]);
    assert!(matches!(steps(Some(&config)), Value::Int { value: 9, .. }));
    assert!(matches!(
        steps(Some(&Value::Dict(Vec::new()))),
        Value::Int { value: 3, .. }
    ));
    // Without the run config the value is not known.
    assert_eq!(
        steps(None),
        Value::Unknown("`cfg.get('steps', 3)` is a call, known only at run time".into())
    );
}

#[test]
fn constants_that_refer_to_each_other_are_unknown_not_endless() {
    assert_eq!(
        value_of("A = B\nB = A\nA\n"),
        Value::Unknown("`A` chains too many names".into())
    );
    assert_eq!(
        value_of("A = 1\nB = A\nB\n"),
        Value::Int { value: 1, at: 4..5 }
    );
    assert_eq!(
        value_of("g(1)\n"),
        Value::Unknown("`g(1)` is a call, known only at run time".into())
    );
}
