//! The process launcher on its own: output reaches the observer line by line, a timeout or an
//! interrupt stops the whole process group, and a command that cannot start is an error.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use npuprof_workflow::collect::{Interrupt, Launch, Launcher, Output, ProcessLauncher, Stop};

fn launch(script: &str, timeout: Option<Duration>) -> Launch {
    Launch {
        argv: vec!["sh".to_owned(), "-c".to_owned(), script.to_owned()],
        cwd: PathBuf::from("."),
        timeout,
        log: None,
    }
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
    // Gone, or a zombie waiting to be reaped; a signal takes a moment to land.
    let gone = || {
        std::fs::read_to_string(format!("/proc/{child}/stat"))
            .map_or(true, |stat| stat.contains(") Z "))
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while !gone() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(gone(), "the background child {child} outlived the launch");
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
