//! The corpus: how public scripts that use `torch_npu.profiler` write their windows, each
//! pattern reproduced in our own words in `tests/corpus/`, with the exact findings lint must
//! give (or their absence). Where the pattern was seen is named in `seen_in`; no code was copied.

use std::path::Path;

use npuprof_lint::{Code, fix_source, lint_source};
use npuprof_schedule::Schedule;

mod support;
use support::render;

/// One pattern and what lint must say about it.
struct Case {
    /// The fixture in `tests/corpus/`, or the name of one derived from another.
    fixture: &'static str,
    /// For a derived fixture: the file it comes from and the named replacements that make it.
    derive: Option<Derive>,
    /// The pattern, in words.
    pattern: &'static str,
    /// Where the pattern was seen (public sources, read with the search tool).
    seen_in: &'static str,
    /// Every finding, as (code, line, fragments its message must contain); empty: none.
    expect: &'static [(Code, usize, &'static [&'static str])],
    /// The findings of `expect` that are false alarms by the corpus's labels (the code is
    /// right; lint still says this). Every other expected finding is a real problem.
    false_alarms: &'static [(Code, usize)],
}

/// A fixture made from another by named text replacements (each must apply).
struct Derive {
    base: &'static str,
    replacements: &'static [(&'static str, &'static str, &'static str)],
}

const OLD_DOCS: &str = "old_docs_max_steps_is_active.py";

/// Guide way A: the loop bound alone is large enough (2 + 30 = 32 close, 33 leave a margin).
const WAY_A: (&str, &str, &str) = (
    "MAX_STEPS = 33",
    "\nMAX_STEPS = ACTIVE\n",
    "\nMAX_STEPS = 33\n",
);
/// Way A with a skipped first step: 33 calls are needed, exactly what the loop makes.
const SKIP_FIRST_1: (&str, &str, &str) = ("skip_first=1", "skip_first=0", "skip_first=1");
/// Guide way B: the loop runs the window, one closing `step()` after it.
const WAY_B_BOUND: (&str, &str, &str) = (
    "MAX_STEPS = WARMUP + ACTIVE",
    "\nMAX_STEPS = ACTIVE\n",
    "\nMAX_STEPS = WARMUP + ACTIVE\n",
);
const WAY_B_CLOSING: (&str, &str, &str) = (
    "closing prof.step()",
    "            prof.step()\n",
    "            prof.step()\n        prof.step()  # closing step: only advances the schedule\n",
);

const RECORD_WARNING: &str = "torch_npu warns \"Incorrect schedule: Stop profiler while current state is RECORD which may result in incomplete parsed data.\"";

/// The table: pattern → expected finding.
const CASES: &[Case] = &[
    Case {
        fixture: "guide_a_max_steps_enough.py",
        derive: Some(Derive {
            base: OLD_DOCS,
            replacements: &[WAY_A],
        }),
        false_alarms: &[],
        pattern: "collection guide A: `WARMUP, ACTIVE = 2, 30`, `MAX_STEPS = 33`, `range(MAX_STEPS)`",
        seen_in: "cann-recipes-infer profiling skill (way A)",
        expect: &[],
    },
    Case {
        fixture: "guide_a_with_skip_first.py",
        derive: Some(Derive {
            base: OLD_DOCS,
            replacements: &[WAY_A, SKIP_FIRST_1],
        }),
        false_alarms: &[],
        pattern: "guide A with `skip_first=1`: 33 calls for a 33-call window",
        seen_in: "cann-recipes-infer profiling skill (way A) with the skip_first the torch_npu docs recommend",
        expect: &[(
            Code::WindowClosesWithoutMargin,
            16,
            &["33 calls", "MAX_STEPS = 33 (line 6)", "WARMUP = 2 (line 5)"],
        )],
    },
    Case {
        fixture: "guide_b_closing_step.py",
        derive: Some(Derive {
            base: OLD_DOCS,
            replacements: &[WAY_B_BOUND, WAY_B_CLOSING],
        }),
        false_alarms: &[],
        pattern: "collection guide B: `range(WARMUP + ACTIVE)` and a closing `prof.step()`",
        seen_in: "cann-recipes-infer profiling skill (way B, recommended)",
        expect: &[],
    },
    Case {
        fixture: "old_docs_max_steps_is_active.py",
        derive: None,
        false_alarms: &[],
        pattern: "the old-docs mistake `MAX_STEPS = ACTIVE`",
        seen_in: "cann-recipes-infer profiling skill (the warning about old docs)",
        expect: &[(
            Code::WindowNotClosed,
            16,
            &[
                "calls `step()` 30 time(s)",
                "needs 32 to close",
                "it stops in RECORD",
                RECORD_WARNING,
                "MAX_STEPS = 30 (line 6)",
                "ACTIVE = 30 (line 5)",
            ],
        )],
    },
    Case {
        fixture: "argparse_defaults_short.py",
        derive: None,
        false_alarms: &[],
        pattern: "window sizes from `add_argument(..., type=int, default=N)` read as `args.x`",
        seen_in: "training/benchmark scripts with `--profiling_steps`-style options (e.g. argparse helpers for profiling)",
        expect: &[(
            Code::WindowNotClosed,
            24,
            &[
                "needs 32 to close",
                "`--active` from the command line, default 30",
                "`--decode-steps` from the command line, default 30",
                "(checked with the default)",
            ],
        )],
    },
    Case {
        fixture: "argparse_defaults_enough.py",
        derive: None,
        false_alarms: &[],
        pattern: "`dest=` options, a string default, bound `warmup + active + 1`",
        seen_in: "training/benchmark scripts with profiling options",
        expect: &[],
    },
    Case {
        fixture: "function_defaults.py",
        derive: None,
        false_alarms: &[],
        pattern: "window sizes as parameter defaults of the function that profiles, one call each",
        seen_in: "profiling helpers with `wait=1, warmup=1, active=3` defaults (wrappers, Watcher-style classes)",
        expect: &[(
            Code::WindowNotClosed,
            12,
            &[
                "needs 9 to close",
                "steps = 8 (the default, at the call on line 36)",
            ],
        )],
    },
    Case {
        fixture: "factory_function.py",
        derive: None,
        false_alarms: &[],
        pattern: "`with create_profiler(path, warmup=0, active=N) as prof:` — a local factory",
        seen_in: "cann-recipes-infer profiling skill template (create_profiler)",
        expect: &[(
            Code::WindowClosesWithoutMargin,
            28,
            &[
                "1 calls",
                "active = 1 (the default, at the call on line 28)",
            ],
        )],
    },
    Case {
        fixture: "instance_attributes.py",
        derive: None,
        false_alarms: &[],
        pattern: "`self.warmup = 2`, `self.active = 5` in `__init__`, the profiler in `self.prof`",
        seen_in: "Profiler wrapper classes in RL/LLM frameworks on Ascend",
        expect: &[(
            Code::WindowNotClosed,
            20,
            &[
                "needs 7 to close",
                "self.warmup = 2 (line 7)",
                RECORD_WARNING,
            ],
        )],
    },
    Case {
        fixture: "constructor_parameters.py",
        derive: None,
        false_alarms: &[],
        pattern: "`self.active = active` from the constructor, one construction `Capture(active=6)`",
        seen_in: "Profiler classes taking wait/warmup/active/repeat/skip_first(_wait) in __init__",
        expect: &[(
            Code::WindowNotClosed,
            12,
            &[
                "needs 7 to close",
                "active = 6 (at the call on line 25)",
                "RECORD_AND_SAVE",
            ],
        )],
    },
    Case {
        fixture: "schedule_object_repeat.py",
        derive: None,
        false_alarms: &[],
        pattern: "a `schedule(...)` bound to a name, passed by name; `repeat=2`",
        seen_in: "torch.profiler/torch_npu tutorials and training loops with `repeat=2`",
        expect: &[(
            Code::WindowNotClosed,
            24,
            &["needs 10 to close", "2·(1 + 1 + 3)", RECORD_WARNING],
        )],
    },
    Case {
        fixture: "counted_while.py",
        derive: None,
        false_alarms: &[],
        pattern: "`i = 0; while i < N: ...; i += 1` (and `<=`)",
        seen_in: "decode loops driven by a counter",
        expect: &[(
            Code::WindowNotClosed,
            28,
            &["calls `step()` 5 time(s)", "`i <= ACTIVE`: 5 iteration(s)"],
        )],
    },
    Case {
        fixture: "helper_steps.py",
        derive: None,
        false_alarms: &[],
        pattern: "`prof.step()` inside a helper that receives the profiler",
        seen_in: "train/infer step functions that take the profiler as an argument",
        expect: &[(
            Code::WindowClosesWithoutMargin,
            15,
            &["`next_token()` calls `profiler.step()` 1 time(s)"],
        )],
    },
    Case {
        fixture: "skip_first_wait.py",
        derive: None,
        false_alarms: &[],
        pattern: "`skip_first_wait=1` (torch_npu 26.1+)",
        seen_in: "Profiler classes passing skip_first_wait",
        expect: &[],
    },
    Case {
        fixture: "environment_default.py",
        derive: None,
        false_alarms: &[],
        pattern: "`int(os.getenv(\"PROFILE_STEPS\", \"8\"))`",
        seen_in: "inference scripts configured by environment variables",
        expect: &[(
            Code::WindowNotClosed,
            11,
            &["environment variable `PROFILE_STEPS`, default 8"],
        )],
    },
    Case {
        fixture: "prefetched_batches.py",
        derive: None,
        false_alarms: &[],
        pattern: "a list filled by `append` in a `range` loop before the window, then iterated",
        seen_in: "hicann/cann-recipes-infer models/hstu inference (prefetched batches, skip_first + active = batches)",
        expect: &[(
            Code::WindowClosesWithoutMargin,
            16,
            &["`ready`: 12 item(s), one appended per iteration of `range(count)` (line 13)"],
        )],
    },
    Case {
        fixture: "repeat_cycles_short.py",
        derive: None,
        false_alarms: &[],
        pattern: "`repeat=2` with a step budget added up without the repeat factor",
        seen_in: "an Ascend operator library's profiling benchmark (comment `skip_first + (wait + warmup + active) * repeat`, value short by one cycle)",
        expect: &[(
            Code::WindowNotClosed,
            13,
            &[
                "needs 14 to close",
                "only 1 of 2 cycle(s) are saved (steps 8, 9), and torch_npu prints no warning",
            ],
        )],
    },
    Case {
        fixture: "start_stop_two_loops.py",
        derive: None,
        false_alarms: &[],
        pattern: "`start()`/`stop()` around a warm-up loop and a measured loop, sizes passed from argparse",
        seen_in: "fused-attention operator benchmarks (`run_perf(args.iters, args.warmup)`)",
        expect: &[(
            Code::WindowClosesWithoutMargin,
            17,
            &[
                "13 calls",
                "iters = 10 (at the call on line 33)",
                "`--warmup` from the command line, default 3",
            ],
        )],
    },
    Case {
        fixture: "unresolvable.py",
        derive: None,
        false_alarms: &[],
        pattern: "a data loader, a reassigned constant, a config object, `while True` with `break`",
        seen_in: "training loops over `enumerate(train_loader)`, config-object driven profilers",
        expect: &[
            (
                Code::WindowUnresolved,
                13,
                &["the loop runs over `loader`, whose length is known only at run time"],
            ),
            (
                Code::WindowUnresolved,
                25,
                &["`STEPS` is assigned more than once"],
            ),
            (
                Code::WindowUnresolved,
                37,
                &[
                    "could not resolve the schedule",
                    "`cfg.active` is an attribute lint cannot follow",
                ],
            ),
            (
                Code::WindowUnresolved,
                49,
                &["can end early (`break` on line 56)"],
            ),
        ],
    },
    Case {
        fixture: "weak_config.py",
        derive: None,
        false_alarms: &[],
        pattern: "Level0 through a name; no experimental config and no trace handler",
        seen_in: "Ascend op-plugin docs examples (no experimental_config), quick scripts",
        expect: &[
            (Code::ProfilerLevel0, 5, &["Level0"]),
            (Code::MissingExperimentalConfig, 22, &["Level0"]),
            (Code::MissingOnTraceReady, 22, &["neither saved nor parsed"]),
        ],
    },
    Case {
        fixture: "window_content.py",
        derive: None,
        false_alarms: &[],
        pattern: "`torch.compile` on the first recorded step; a loop that never steps; a whole loop recorded as one step on purpose (no finding)",
        seen_in: "torchair/torch.compile inference scripts; profilers wrapped around generate loops; numerics checks that record all kernels as one step",
        expect: &[
            (
                Code::CompileInWindow,
                19,
                &["compile time lands in the recorded steps"],
            ),
            (Code::LoopWithoutStep, 32, &["never calls `step()`"]),
        ],
    },
    Case {
        fixture: "guide_template_dispatch.py",
        derive: None,
        false_alarms: &[],
        pattern: "mode functions each with a window, `main()` warms up (prefill, a decode helper of another name) then dispatches `MODES[MODE](...)`; `if CLOSING_STEP:` closing steps",
        seen_in: "hicann/cann-recipes-infer profiling skill, scripts/profile_template.py (PHASES dict, warm_one_decode, EXTRA_STEP_AT_END)",
        expect: &[],
    },
    Case {
        fixture: "warmup_callers.py",
        derive: None,
        false_alarms: &[],
        pattern: "warm-up by a helper of any name that runs the same model, before a list dispatch; a cold dict dispatch; a cold loop over a tuple of functions; a function not called in the file",
        seen_in: "inference scripts that dispatch phases through tables of functions (cann-recipes-infer profiling template, benchmark drivers)",
        expect: &[
            (
                Code::NoWarmupBeforeWindow,
                29,
                &[
                    "not in `measure_cold()` before the window, nor in `cold_main()` before the call on line 50, nor in the module before the call on line 55",
                ],
            ),
            (
                Code::NoWarmupBeforeWindow,
                63,
                &["nor in `sweep()` before the call on line 69"],
            ),
        ],
    },
    Case {
        fixture: "contextmanager_bare_yield.py",
        derive: None,
        false_alarms: &[],
        pattern: "a scheduled profile around a bare `yield` in a `@contextmanager`, never bound; one yielded to the caller; one whose window steps another object",
        seen_in: "vllm-project/vllm-ascend `profiling_this` (utils), MindSpeed-MM's copy of it",
        expect: &[
            (
                Code::WindowNotClosed,
                19,
                &[
                    "no `step()` reachable",
                    "never bound to a name",
                    "needs 1 to close",
                ],
            ),
            (
                Code::WindowUnresolved,
                30,
                &["`prof` is yielded (line 35): its `step()` may come from elsewhere"],
            ),
            (
                Code::WindowNotClosed,
                39,
                &[
                    "no `step()` reachable",
                    "`engine.step()` on line 45 steps another object",
                ],
            ),
        ],
    },
    Case {
        fixture: "decorator_steps_elsewhere.py",
        derive: None,
        false_alarms: &[],
        pattern: "the profiler kept on a shared object by one decorator, stepped by another (`state.prof.step()`); `with self.prof as prof:` stepped in another method (silent); an attribute profiler no code of the file steps",
        seen_in: "MindSpeed `train_decorator` / `train_step_decorator` (`args_.prof = prof`, `args_.prof.step()`)",
        expect: &[
            (
                Code::WindowUnresolved,
                32,
                &[
                    "`prof` is stored in `state.prof` (line 37): its `step()` may come from elsewhere",
                ],
            ),
            (
                Code::WindowUnresolved,
                90,
                &[
                    "`self.capture.step()` is never called in this file: the step may come from elsewhere",
                ],
            ),
        ],
    },
    Case {
        fixture: "device_branches.py",
        derive: None,
        false_alarms: &[],
        pattern: "`torch.profiler` in the `else:` of an NPU test, under `if not torch_npu_flag:`, in an `elif` for another device, with CUDA activities (all silent); under an NPU test, after `if inputs is None:` (NPL005)",
        seen_in: "triton-ascend / fla kernel benchmarks (`if not torch_npu_flag:` with CUDA activities, torch_npu in the `else:`)",
        expect: &[
            (
                Code::TorchProfilerOnNpu,
                64,
                &["does not collect Ascend NPU kernels"],
            ),
            (
                Code::TorchProfilerOnNpu,
                76,
                &["does not collect Ascend NPU kernels"],
            ),
        ],
    },
];

fn corpus(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(name);
    std::fs::read_to_string(path).expect("corpus fixture exists")
}

/// The text of a case's fixture: read, or derived by its named replacements.
fn source_of(case: &Case) -> String {
    let Some(derive) = &case.derive else {
        return corpus(case.fixture);
    };
    let mut text = corpus(derive.base);
    for (name, from, to) in derive.replacements {
        assert!(
            text.contains(from),
            "{}: `{name}` does not apply",
            case.fixture
        );
        text = text.replacen(from, to, 1);
    }
    text
}

fn case(fixture: &str) -> &'static Case {
    CASES
        .iter()
        .find(|c| c.fixture == fixture)
        .expect("a case of the table")
}

/// Lints one case and checks its findings exactly: codes and lines, and the message fragments.
fn check_case(case: &Case) {
    let findings = lint_source(case.fixture, &source_of(case));
    let rendered = render(&findings);
    let got: Vec<(Code, usize)> = findings.iter().map(|f| (f.code, f.line)).collect();
    let want: Vec<(Code, usize)> = case.expect.iter().map(|(c, l, _)| (*c, *l)).collect();
    assert_eq!(
        got, want,
        "{} ({}):\n{rendered}",
        case.fixture, case.pattern
    );
    for (finding, (_, _, fragments)) in findings.iter().zip(case.expect) {
        for fragment in *fragments {
            assert!(
                finding.message.contains(fragment),
                "{}: `{fragment}` missing from:\n{}",
                case.fixture,
                finding.message
            );
        }
    }
    insta::assert_snapshot!(case.fixture, rendered);
}

#[test]
fn every_pattern_gives_exactly_its_findings() {
    for case in CASES {
        assert!(!case.seen_in.is_empty() && !case.pattern.is_empty());
        check_case(case);
    }
}

/// Findings per rule over the whole corpus, split by the labels: printed as the corpus's
/// precision figure (`cargo test -p npuprof-lint --test corpus -- --nocapture`).
#[test]
#[allow(
    clippy::print_stderr,
    reason = "the precision table is the corpus's reported figure"
)]
fn precision_per_rule_over_the_corpus() {
    let mut per_rule: std::collections::BTreeMap<Code, (usize, usize)> = Default::default();
    for case in CASES {
        for finding in lint_source(case.fixture, &source_of(case)) {
            let entry = per_rule.entry(finding.code).or_default();
            if case.false_alarms.contains(&(finding.code, finding.line)) {
                entry.1 += 1;
            } else {
                entry.0 += 1;
            }
        }
        for alarm in case.false_alarms {
            assert!(
                case.expect.iter().any(|(c, l, _)| (*c, *l) == *alarm),
                "{}: a false alarm that is not an expected finding",
                case.fixture
            );
        }
    }
    let (real, false_alarms) = per_rule
        .values()
        .fold((0, 0), |(r, f), (tp, fp)| (r + tp, f + fp));
    let mut table = format!(
        "lint corpus: {} cases, {} findings: {real} real problems, {false_alarms} false alarms\nrule    real  false  precision\n",
        CASES.len(),
        real + false_alarms
    );
    for (code, (tp, fp)) in &per_rule {
        table.push_str(&format!(
            "{}  {tp:>4}  {fp:>5}  {:>8.0}%\n",
            code.as_str(),
            100.0 * *tp as f64 / (*tp + *fp) as f64
        ));
    }
    eprintln!("{table}");
    assert!(
        real + false_alarms > 0,
        "the corpus has findings to measure"
    );
}

#[test]
fn every_corpus_fixture_is_in_the_table() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut on_disk: Vec<String> = std::fs::read_dir(dir)
        .expect("corpus directory")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = CASES
        .iter()
        .filter(|c| c.derive.is_none())
        .map(|c| c.fixture.to_owned())
        .collect();
    listed.sort();
    assert_eq!(on_disk, listed);
}

#[test]
fn the_guide_examples_agree_with_the_schedule_arithmetic() {
    // wait 0, warmup 2, active 30, repeat 1: 32 calls close the window.
    let guide = Schedule::clamped(0, 2, 30, 1, 0, 0);
    assert_eq!(guide.closing_step_calls(), Some(32));
    assert!(guide.run(33).closes_cleanly, "way A: MAX_STEPS = 33");
    assert!(
        guide.run(32 + 1).closes_cleanly,
        "way B: 32 + the closing step"
    );
    let old_docs = guide.run(30);
    assert_eq!(old_docs.stop_state, npuprof_schedule::Action::Record);
    assert_eq!(old_docs.warnings, [npuprof_schedule::STOP_IN_RECORD]);
    // With skip_first = 1 the same 33 calls close exactly on the last one.
    assert_eq!(
        Schedule::clamped(0, 2, 30, 1, 1, 0).closing_step_calls(),
        Some(33)
    );
    // skip_first_wait drops the first wait: 1 + 6 - 2 = 5 (7 without it).
    assert_eq!(
        Schedule::clamped(2, 1, 3, 1, 1, 1).closing_step_calls(),
        Some(5)
    );
    assert_eq!(
        Schedule::clamped(2, 1, 3, 1, 1, 0).closing_step_calls(),
        Some(7)
    );
}

/// `--fix` on a fixture: the edits are applied, the result parses, the window closes with
/// its margin, and the diff is the snapshot.
fn check_fix(fixture: &str, fixed_codes: &[Code]) {
    let source = source_of(case(fixture));
    let fixed = fix_source(fixture, &source).expect("the fix is accepted");
    let applied: Vec<Code> = fixed.applied.iter().map(|f| f.code).collect();
    assert_eq!(applied, fixed_codes, "{fixture}");
    let tree = npuprof_syntax::parse(&fixed.text).expect("a tree");
    assert!(!tree.root_node().has_error(), "{}", fixed.text);
    assert!(
        fixed.remaining.iter().all(|f| !matches!(
            f.code,
            Code::WindowNotClosed | Code::WindowClosesWithoutMargin
        )),
        "{fixture} still has:\n{}",
        render(&fixed.remaining)
    );
    let again = fix_source(fixture, &fixed.text).expect("fixing again");
    assert!(again.applied.is_empty(), "fixing twice changes nothing");
    insta::assert_snapshot!(
        format!("fix_{fixture}"),
        npuprof_patch::diff::unified_diff(fixture, &source, &fixed.text)
    );
}

#[test]
fn fix_raises_the_bound_and_adds_the_closing_step() {
    check_fix("old_docs_max_steps_is_active.py", &[Code::WindowNotClosed]);
    check_fix("instance_attributes.py", &[Code::WindowNotClosed]);
    check_fix("schedule_object_repeat.py", &[Code::WindowNotClosed]);
    check_fix("repeat_cycles_short.py", &[Code::WindowNotClosed]);
}

#[test]
fn fix_adds_only_the_closing_step_when_one_is_missing() {
    check_fix(
        "guide_a_with_skip_first.py",
        &[Code::WindowClosesWithoutMargin],
    );
    check_fix("helper_steps.py", &[Code::WindowClosesWithoutMargin]);
    check_fix("prefetched_batches.py", &[Code::WindowClosesWithoutMargin]);
    check_fix(
        "start_stop_two_loops.py",
        &[Code::WindowClosesWithoutMargin],
    );
}

#[test]
fn values_decided_at_run_time_and_while_loops_are_not_fixed_mechanically() {
    for fixture in [
        "argparse_defaults_short.py",
        "environment_default.py",
        "counted_while.py",
    ] {
        let source = source_of(case(fixture));
        let fixed = fix_source(fixture, &source).expect("fix runs");
        assert!(fixed.applied.is_empty(), "{fixture}");
        assert_eq!(fixed.text, source);
        assert!(
            fixed
                .remaining
                .iter()
                .any(|f| f.code == Code::WindowNotClosed),
            "{fixture}: the finding stays"
        );
    }
}

#[test]
fn fix_keeps_crlf_line_endings() {
    let source = source_of(case(OLD_DOCS)).replace('\n', "\r\n");
    let fixed = fix_source(OLD_DOCS, &source).expect("the fix is accepted");
    assert_eq!(fixed.applied.len(), 1);
    assert!(
        !fixed.text.replace("\r\n", "").contains('\n'),
        "a bare LF was written:\n{:?}",
        fixed.text
    );
    assert!(
        fixed
            .text
            .contains("        prof.step()  # closing step(): ends the last schedule cycle\r\n")
    );
    assert!(fixed.remaining.is_empty(), "{}", render(&fixed.remaining));
}

#[test]
fn fix_adds_the_closing_step_at_the_end_of_a_file_without_a_final_newline() {
    let source = source_of(case(OLD_DOCS));
    let source = source.trim_end_matches('\n');
    let fixed = fix_source(OLD_DOCS, source).expect("the fix is accepted");
    assert!(
        fixed
            .text
            .ends_with("            prof.step()\n        prof.step()  # closing step(): ends the last schedule cycle\n"),
        "{}",
        fixed.text
    );
    assert!(fixed.remaining.is_empty(), "{}", render(&fixed.remaining));
}
