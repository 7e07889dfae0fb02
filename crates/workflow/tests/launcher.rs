//! The process launcher on its own: output reaches the observer line by line, a timeout or an
//! interrupt stops the whole process group, and a command that cannot start is an error.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use npuprof_workflow::collect::{
    HEAD_LINES, Interrupt, Launch, Launcher, MAX_LINE, Output, ProcessLauncher, RunReport, Stop,
    TAIL_LINES,
};

fn launch(script: &str, timeout: Option<Duration>) -> Launch {
    Launch {
        argv: vec!["sh".to_owned(), "-c".to_owned(), script.to_owned()],
        cwd: PathBuf::from("."),
        env: BTreeMap::new(),
        timeout,
        log: None,
    }
}

#[test]
fn the_launch_sets_its_environment() {
    let mut lines = Vec::new();
    ProcessLauncher::new(|output| {
        if let Output::Line(line) = output {
            lines.push(line);
        }
    })
    .launch(
        &Launch {
            env: BTreeMap::from([(
                "NPUPROF_TEST_LAUNCH_ENV".to_owned(),
                "set by the definition".to_owned(),
            )]),
            ..launch("echo \"$NPUPROF_TEST_LAUNCH_ENV\"", None)
        },
        &Interrupt::default(),
    )
    .expect("launch");
    assert_eq!(lines, ["set by the definition"]);
}

/// Every line arrives, also the last ones written just before the command exits (run many
/// times: the lines race the exit).
#[test]
fn output_lines_reach_the_observer_and_the_exit_code_is_kept() {
    for _ in 0..20 {
        let mut lines = Vec::new();
        let mut finished = false;
        let report = ProcessLauncher::new(|output| match output {
            Output::Line(line) => lines.push(line),
            Output::Finished => finished = true,
            Output::Tick(_) => {}
        })
        .launch(
            &launch("echo one; echo two >&2; exit 3", None),
            &Interrupt::default(),
        )
        .expect("launch");
        lines.sort();
        assert_eq!(lines, ["one", "two"]);
        assert!(finished);
        assert_eq!(report.exit_code, Some(3));
        assert!(!report.timed_out && !report.interrupted);
    }
}

/// A child of the launched shell (as the ranks of a launcher are) is stopped with it.
#[test]
fn a_timeout_stops_the_whole_process_group() {
    let started = Instant::now();
    let pid_file = tempfile::NamedTempFile::new().expect("temp file");
    let script = format!("sleep 30 & echo $! > {}; wait", pid_file.path().display());
    let report = ProcessLauncher::new(|_| {})
        .launch(
            &launch(&script, Some(Duration::from_secs(1))),
            &Interrupt::default(),
        )
        .expect("launch");
    assert!(report.timed_out);
    assert!(report.exit_code.is_none(), "killed by a signal: {report:?}");
    assert!(started.elapsed() < Duration::from_secs(20));
    let child: u32 = std::fs::read_to_string(pid_file.path())
        .expect("pid")
        .trim()
        .parse()
        .expect("a pid");
    assert!(
        gone_soon(child),
        "the background child {child} outlived the launch"
    );
}

#[test]
fn an_interrupt_stops_the_launch() {
    let interrupt = Interrupt::default();
    let raiser = interrupt.clone();
    let mut ticks = 0;
    let report = ProcessLauncher::new(|output| {
        if matches!(output, Output::Tick(_)) {
            ticks += 1;
            if ticks == 3 {
                raiser.raise();
            }
        }
    })
    .launch(&launch("sleep 30", None), &interrupt)
    .expect("launch");
    assert!(report.interrupted && !report.timed_out);
    assert!(report.duration_secs < 20.0, "{report:?}");
}

#[test]
fn a_command_that_cannot_start_is_an_error() {
    let missing = Launch {
        argv: vec!["/nonexistent/npuprof-launch".to_owned()],
        cwd: PathBuf::from("."),
        env: BTreeMap::new(),
        timeout: None,
        log: None,
    };
    let err = ProcessLauncher::new(|_| {})
        .launch(&missing, &Interrupt::default())
        .expect_err("cannot start");
    assert!(matches!(err, Stop::Start { .. }), "{err:?}");
    let empty = Launch {
        argv: Vec::new(),
        ..missing
    };
    let err = ProcessLauncher::new(|_| {})
        .launch(&empty, &Interrupt::default())
        .expect_err("empty");
    assert!(matches!(err, Stop::EmptyLaunch), "{err:?}");
}

/// Whether process `pid` is gone (or a zombie waiting to be reaped), waiting up to 5 s: a
/// signal takes a moment to land.
fn gone_soon(pid: u32) -> bool {
    let gone = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map_or(true, |stat| stat.contains(") Z "))
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while !gone() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    gone()
}

/// Checks what was kept of each stream is within the bounds, and the log holds every byte.
fn check_bounded(report: &RunReport, log: &Path) {
    for stream in [&report.output.stdout, &report.output.stderr] {
        assert!(stream.head.len() <= HEAD_LINES, "{}", stream.head.len());
        assert!(stream.tail.len() <= TAIL_LINES, "{}", stream.tail.len());
        for line in stream.head.iter().chain(&stream.tail) {
            assert!(line.len() <= MAX_LINE + " [...]".len(), "{}", line.len());
        }
    }
    let total = report.output.stdout.bytes + report.output.stderr.bytes;
    assert_eq!(
        std::fs::metadata(log).expect("the log").len(),
        total,
        "the log holds the whole output"
    );
    assert_eq!(report.output.log.as_deref(), log.to_str());
}

/// Issue 32.8: a launch that writes as fast as it can (and one endless line) is stopped by the
/// timeout in a few seconds; memory stays bounded (the kept head and tail), the log gets all.
#[test]
fn a_fast_writer_is_stopped_by_the_timeout_and_its_capture_stays_bounded() {
    for script in ["yes", "tr '\\0' x < /dev/zero", "yes >&2"] {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = dir.path().join("launch.log");
        let mut shown = 0_u64;
        let started = Instant::now();
        let report = ProcessLauncher::new(|output| {
            if matches!(output, Output::Line(_)) {
                shown += 1;
            }
        })
        .launch(
            &Launch {
                log: Some(log.clone()),
                ..launch(script, Some(Duration::from_secs(2)))
            },
            &Interrupt::default(),
        )
        .expect("launch");
        assert!(report.timed_out, "{script}");
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{script}: the timeout took {:?}",
            started.elapsed()
        );
        let written = report.output.stdout.bytes + report.output.stderr.bytes;
        assert!(written > 1 << 20, "{script}: only {written} bytes written");
        check_bounded(&report, &log);
        assert!(shown < 1_000_000, "{script}: {shown} lines shown");
    }
}

/// An interrupt under heavy output stops the launch at once.
#[test]
fn an_interrupt_stops_a_fast_writer() {
    let interrupt = Interrupt::default();
    let raiser = interrupt.clone();
    let mut ticks = 0;
    let started = Instant::now();
    let report = ProcessLauncher::new(|output| {
        if matches!(output, Output::Tick(_)) {
            ticks += 1;
            if ticks == 10 {
                raiser.raise();
            }
        }
    })
    .launch(&launch("yes", None), &interrupt)
    .expect("launch");
    assert!(report.interrupted);
    assert!(started.elapsed() < Duration::from_secs(15), "{report:?}");
}

/// Issue 32.11: what the launch leaves running in its group (`nohup … &`) is stopped when it
/// returns, and named; one that ignores SIGTERM is killed.
///
/// The script returns only once both children have exec'd their `sleep` (the stubborn one after
/// its trap), so what is named is the same on a slow machine: before, the launch could return
/// while they were still `nohup` and `sh -c`.
#[test]
fn processes_left_behind_are_stopped_and_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (polite, stubborn) = (dir.path().join("polite"), dir.path().join("stubborn"));
    let script = format!(
        "nohup sleep 1000 >/dev/null 2>&1 & p=$!; echo $p > {}; \
         (trap '' TERM; exec sleep 1001) >/dev/null 2>&1 & s=$!; echo $s > {}; \
         execs() {{ tr '\\0' ' ' < /proc/$1/cmdline | grep -q \"^sleep $2\"; }}; \
         i=0; until execs $p 1000 && execs $s 1001 || [ $i -ge 500 ]; do \
         sleep 0.01; i=$((i+1)); done; exit 0",
        polite.display(),
        stubborn.display()
    );
    let report = ProcessLauncher::new(|_| {})
        .launch(&launch(&script, None), &Interrupt::default())
        .expect("launch");
    assert_eq!(report.exit_code, Some(0));
    let pid = |file: &Path| -> u32 {
        std::fs::read_to_string(file)
            .expect("pid")
            .trim()
            .parse()
            .expect("a pid")
    };
    let (polite, stubborn) = (pid(&polite), pid(&stubborn));
    assert!(gone_soon(polite), "the nohup'ed child {polite} survived");
    assert!(
        gone_soon(stubborn),
        "the TERM-ignoring child {stubborn} survived"
    );
    let named: Vec<(u32, bool)> = report
        .stragglers
        .iter()
        .map(|s| (u32::try_from(s.pid).expect("pid"), s.killed))
        .collect();
    assert!(named.contains(&(polite, false)), "{:?}", report.stragglers);
    assert!(named.contains(&(stubborn, true)), "{:?}", report.stragglers);
    assert!(
        report
            .stragglers
            .iter()
            .any(|s| s.command.contains("sleep 1000")),
        "{:?}",
        report.stragglers
    );
}
