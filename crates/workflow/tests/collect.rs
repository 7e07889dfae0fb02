//! `collect` driven without processes: a fake [`Launcher`] stands in for the model run (it
//! writes a real vendored profile, nothing, or misbehaves) and an observer records the events.
//! Every case checks what became of the repository's bytes.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use npuprof_patch::target::{PatchRequest, TokenBudget};
use npuprof_repository::Target;
use npuprof_schedule::{Phase, PhaseSelection, Window};
use npuprof_workflow::WorkflowError;
use npuprof_workflow::collect::{
    CollectReport, CollectRequest, ErrorKind, Event, Interrupt, Launch, Launcher, Observer,
    Outcome, Restored, RunReport, Stop, StopCode, collect,
};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A private copy of the bundled recipes-mini repository.
fn recipes_mini() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let status = Command::new("cp")
        .arg("-a")
        .arg(workspace().join("examples/recipes-mini/."))
        .arg(dir.path())
        .status()
        .expect("cp");
    assert!(status.success());
    dir
}

/// Every file under `root` except npuprof's journal, with its bytes.
fn files(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("read dir").flatten() {
            let path = entry.path();
            if path.file_name().is_some_and(|n| n == ".npuprof") {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(root).expect("below root").to_path_buf();
                out.insert(rel, fs::read(&path).expect("read"));
            }
        }
    }
    out
}

const MODEL: &str = "deepseek-mini";
const YAML: &str = "decode_mtp.yaml";

/// What the fake run does.
enum Behaviour {
    /// Writes the vendored real two-rank profile as the decode phase's result.
    RealProfile,
    /// Exits 0 and writes nothing.
    Nothing,
    /// Appends a line to the run config (a user's or the model's edit during the run).
    EditsConfig,
    /// Deletes npuprof's journal directory.
    DeletesJournal,
    /// Exits 0, as the recipes `infer.sh` does when every rank failed: the rank's traceback is
    /// only in its `log_0.log`.
    CrashesInRankLog,
    /// Is interrupted (Ctrl-C) while it runs.
    Interrupted,
}

struct FakeLauncher {
    behaviour: Behaviour,
    /// The case directory a real run of the target would write (today's).
    case_dir: PathBuf,
    /// Where it writes the decode phase's profile.
    result: PathBuf,
    launches: Vec<Launch>,
}

impl FakeLauncher {
    fn new(behaviour: Behaviour, target: &Target) -> Self {
        let phase = target
            .results
            .phase_path(Phase::Decode)
            .expect("decode is profiled");
        let case_dir = target
            .repo
            .join(&target.results.res_dir)
            .join(npuprof_journal::now_compact().get(..8).expect("a date"))
            .join(&target.results.case);
        Self {
            behaviour,
            result: case_dir.join(phase),
            case_dir,
            launches: Vec::new(),
        }
    }
}

impl Launcher for FakeLauncher {
    fn launch(&mut self, launch: &Launch, interrupt: &Interrupt) -> Result<RunReport, Stop> {
        self.launches.push(launch.clone());
        let repo = launch.cwd.ancestors().find(|d| d.join("models").is_dir());
        let repo = repo.expect("the launch runs inside the repository");
        let mut report = RunReport::exited(&launch.argv, 0, Duration::from_millis(5));
        match self.behaviour {
            Behaviour::RealProfile => {
                fs::create_dir_all(&self.result).expect("result dir");
                let real =
                    workspace().join("crates/verify/tests/data/runs/msinsight-text-level1/.");
                let status = Command::new("cp")
                    .arg("-a")
                    .arg(real)
                    .arg(&self.result)
                    .status()
                    .expect("cp");
                assert!(status.success());
            }
            Behaviour::Nothing => {}
            Behaviour::EditsConfig => {
                let config = repo.join(format!("models/{MODEL}/config/{YAML}"));
                let mut text = fs::read_to_string(&config).expect("config");
                text.push_str("# edited during the run\n");
                fs::write(config, text).expect("write");
            }
            Behaviour::DeletesJournal => {
                fs::remove_dir_all(repo.join(".npuprof")).expect("journal");
            }
            Behaviour::CrashesInRankLog => {
                fs::create_dir_all(&self.case_dir).expect("case dir");
                fs::write(
                    self.case_dir.join("log_0.log"),
                    "Traceback (most recent call last):\n  File \"infer.py\", line 1, in <module>\n    import torch_npu\nModuleNotFoundError: No module named 'torch_npu'\n",
                )
                .expect("log");
            }
            Behaviour::Interrupted => {
                interrupt.raise();
                report.exit_code = None;
                report.signal = Some(15);
                report.interrupted = true;
            }
        }
        Ok(report)
    }
}

/// Records every event by name.
#[derive(Default)]
struct Recorder(Vec<String>);

impl Observer for Recorder {
    fn event(&mut self, event: Event<'_>) {
        self.0.push(
            match event {
                Event::Patched(_) => "patched",
                Event::StructurePatched(_) => "structure-patched",
                Event::Launching { .. } => "launching",
                Event::LaunchFailed(_) => "launch-failed",
                Event::Stragglers(_) => "stragglers",
                Event::JournalReinstated(_) => "journal-reinstated",
                Event::OriginalsKept(_) => "originals-kept",
                Event::Relocating => "relocating",
                Event::Reverting => "reverting",
                Event::NotReverted(_) => "not-reverted",
                Event::RevertFailed(_) => "revert-failed",
                Event::NotRestored { .. } => "not-restored",
            }
            .to_owned(),
        );
    }
}

struct Case {
    repo: tempfile::TempDir,
    /// npuprof's state directory (outside the repository).
    state: tempfile::TempDir,
    before: BTreeMap<PathBuf, Vec<u8>>,
    target: Target,
}

fn case() -> Case {
    let repo = recipes_mini();
    let before = files(repo.path());
    let target = npuprof_repository::resolve(&request(repo.path())).expect("target");
    Case {
        repo,
        state: tempfile::tempdir().expect("state dir"),
        before,
        target,
    }
}

fn request(repo: &Path) -> npuprof_repository::Request<'_> {
    npuprof_repository::Request {
        repo,
        model: MODEL,
        yaml: YAML,
        mode: None,
    }
}

impl Case {
    /// Runs collect of the decode phase with a fake run of `behaviour`.
    fn collect(
        &self,
        behaviour: Behaviour,
        keep_patch: bool,
    ) -> (Result<CollectReport, WorkflowError>, FakeLauncher, Recorder) {
        let canonical = self.repo.path().canonicalize().expect("canonical");
        let mut launcher = FakeLauncher::new(behaviour, &self.target);
        let mut recorder = Recorder::default();
        let request = CollectRequest {
            patch: npuprof_workflow::patch::Request {
                target: request(&canonical),
                window: PatchRequest {
                    phases: PhaseSelection::Decode,
                    window: Window::new(5, None).expect("window"),
                    max_new_tokens: TokenBudget::Auto,
                    modules: false,
                },
            },
            keep_patch,
            breakdown: false,
            timeout: None,
            launch: None,
            state_dir: self.state.path().to_path_buf(),
        };
        let result = collect(
            &request,
            &mut launcher,
            &mut recorder,
            &Interrupt::default(),
        );
        (result, launcher, recorder)
    }

    /// The repository's files are what they were before (the run's results aside).
    fn check_restored(&self) {
        let mut after = files(self.repo.path());
        after.retain(|path, _| !path.starts_with(format!("models/{MODEL}/res")));
        assert_eq!(
            after, self.before,
            "the repository was not restored byte for byte"
        );
        assert!(!self.repo.path().join(".npuprof").exists(), "journal left");
    }
}

#[test]
fn a_real_profile_is_verified_and_the_repository_restored() {
    let case = case();
    let (result, launcher, events) = case.collect(Behaviour::RealProfile, false);
    let report = result.expect("collect");
    assert_eq!(events.0, ["patched", "launching", "reverting"]);
    assert_eq!(report.revert, Restored::Reverted);
    let [verdict] = report.verify.as_slice() else {
        panic!("one verify, got {}", report.verify.len());
    };
    let mut ranks: Vec<_> = verdict.runs.iter().map(|r| r.rank).collect();
    ranks.sort_unstable();
    assert_eq!(
        ranks,
        [Some(0), Some(1)],
        "both ranks of the real run verified"
    );
    assert_eq!(
        report.outcome,
        if verdict.ok {
            Outcome::Clean
        } else {
            Outcome::VerifyErrors
        }
    );
    assert_eq!(
        report.runs[0].result_dir.as_deref().map(Path::new),
        Some(launcher.case_dir.canonicalize().expect("dir")).as_deref(),
        "the run's result directory is the case directory it wrote"
    );
    case.check_restored();
}

#[test]
fn the_targets_own_launch_command_runs_from_its_directory() {
    let case = case();
    let (_, launcher, _) = case.collect(Behaviour::Nothing, false);
    let [launch] = launcher.launches.as_slice() else {
        panic!("one launch, got {:?}", launcher.launches);
    };
    assert_eq!(launch.argv, case.target.launch.argv);
    assert_eq!(
        launch.cwd,
        case.repo
            .path()
            .canonicalize()
            .expect("canonical")
            .join(&case.target.launch.cwd)
    );
}

#[test]
fn a_run_without_results_fails_and_reverts() {
    let case = case();
    let (result, _, events) = case.collect(Behaviour::Nothing, false);
    let report = result.expect("collect");
    assert_eq!(report.outcome, Outcome::Failed);
    assert_eq!(report.exit_code, 2);
    let error = report.error.expect("an error");
    assert!(error.contains("wrote no new run directory"), "{error}");
    assert!(report.verify.is_empty());
    assert_eq!(events.0, ["patched", "launching", "reverting"]);
    assert_eq!(report.revert, Restored::Reverted);
    case.check_restored();
}

#[test]
fn a_file_edited_during_the_run_is_not_reverted_over() {
    let case = case();
    let (result, _, events) = case.collect(Behaviour::EditsConfig, false);
    let report = result.expect("collect");
    assert_eq!(report.revert, Restored::Refused);
    assert_eq!(report.outcome, Outcome::Failed);
    assert!(
        events.0.contains(&"not-reverted".to_owned()),
        "{:?}",
        events.0
    );
    let config = case
        .repo
        .path()
        .join(format!("models/{MODEL}/config/{YAML}"));
    let text = fs::read_to_string(config).expect("config");
    assert!(
        text.ends_with("# edited during the run\n"),
        "the edit is kept"
    );
    assert!(
        case.repo.path().join(".npuprof").exists(),
        "the journal stays for revert"
    );
}

/// Issue 32.3: the launch removes `.npuprof/` (as `git clean -fdx` does): collect puts the
/// journal back from its copy outside the repository and restores every file.
#[test]
fn a_run_that_deletes_the_journal_is_restored_from_the_copy_outside() {
    let case = case();
    let (result, _, events) = case.collect(Behaviour::DeletesJournal, false);
    let report = result.expect("collect");
    assert_eq!(report.revert, Restored::Reverted, "{:?}", events.0);
    assert!(
        events.0.contains(&"journal-reinstated".to_owned()),
        "{:?}",
        events.0
    );
    case.check_restored();
    // The copy is gone; the launch's log stays.
    let private: Vec<PathBuf> = fs::read_dir(case.state.path().join("collect"))
        .expect("collect's private directories")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(private.len(), 1, "{private:?}");
    let left: Vec<String> = fs::read_dir(&private[0])
        .expect("private dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert!(left.iter().all(|n| !n.starts_with("originals")), "{left:?}");
}

/// A launch that exits 0 while its rank crashed is a failed launch, named with the rank log's
/// error line, not a missing result.
#[test]
fn a_crash_only_in_a_rank_log_is_a_failed_launch() {
    let case = case();
    let (result, _, events) = case.collect(Behaviour::CrashesInRankLog, false);
    let report = result.expect("collect");
    assert_eq!(report.outcome, Outcome::Failed);
    assert_eq!(report.error_code, Some(StopCode::LaunchFailed));
    let error = report.error.expect("an error");
    assert!(
        error.contains("ModuleNotFoundError: No module named 'torch_npu' (in log_0.log)"),
        "{error}"
    );
    assert_eq!(report.runs[0].launch_errors.len(), 1);
    assert_eq!(report.runs[0].launch_errors[0].kind, ErrorKind::Traceback);
    assert!(events.0.contains(&"launch-failed".to_owned()));
    assert_eq!(report.revert, Restored::Reverted);
    case.check_restored();
}

#[test]
fn an_interrupted_run_stops_and_reverts() {
    let case = case();
    let (result, _, _) = case.collect(Behaviour::Interrupted, false);
    let report = result.expect("collect");
    assert_eq!(report.outcome, Outcome::Failed);
    assert!(report.runs[0].interrupted);
    let error = report.error.expect("an error");
    assert!(error.starts_with("interrupted"), "{error}");
    assert_eq!(report.revert, Restored::Reverted);
    case.check_restored();
}

#[test]
fn keep_patch_leaves_the_journal_and_the_patch() {
    let case = case();
    let (result, _, events) = case.collect(Behaviour::RealProfile, true);
    let report = result.expect("collect");
    assert_eq!(report.revert, Restored::Kept);
    assert!(!events.0.contains(&"reverting".to_owned()));
    let status = npuprof_journal::status(case.repo.path()).expect("status");
    assert!(status.is_some_and(|entries| !entries.is_empty()));
}

#[test]
fn existing_changes_are_refused_before_anything_runs() {
    let case = case();
    let (first, _, _) = case.collect(Behaviour::Nothing, true);
    assert_eq!(first.expect("collect").revert, Restored::Kept);
    let (second, launcher, events) = case.collect(Behaviour::RealProfile, false);
    assert!(
        matches!(second, Err(WorkflowError::Collect(Stop::AlreadyChanged(_)))),
        "{second:?}"
    );
    assert!(launcher.launches.is_empty() && events.0.is_empty());
}

/// Runs collect of `patch` with a launcher that does nothing (for requests refused before the
/// launch); returns the report and the launcher.
fn collect_unlaunched(
    patch: npuprof_workflow::patch::Request<'_>,
    state_dir: &Path,
) -> (CollectReport, FakeLauncher) {
    let mut launcher = FakeLauncher {
        behaviour: Behaviour::Nothing,
        case_dir: PathBuf::new(),
        result: PathBuf::new(),
        launches: Vec::new(),
    };
    let request = CollectRequest {
        patch,
        keep_patch: false,
        breakdown: false,
        timeout: None,
        launch: None,
        state_dir: state_dir.to_path_buf(),
    };
    let report = collect(
        &request,
        &mut launcher,
        &mut Recorder::default(),
        &Interrupt::default(),
    )
    .expect("collect");
    (report, launcher)
}

#[test]
fn a_repository_without_a_profiler_is_refused_unchanged() {
    let repo = tempfile::tempdir().expect("temp dir");
    let config = repo.path().join("models/m/config");
    fs::create_dir_all(&config).expect("dirs");
    fs::write(config.join("run.yaml"), "a: 1\n").expect("config");
    fs::write(repo.path().join("infer.py"), "print('hi')\n").expect("entry");
    let before = files(repo.path());
    let (report, launcher) = collect_unlaunched(
        npuprof_workflow::patch::Request {
            target: npuprof_repository::Request {
                repo: repo.path(),
                model: "m",
                yaml: "run.yaml",
                mode: None,
            },
            window: PatchRequest {
                phases: PhaseSelection::Both,
                window: Window::new(3, None).expect("window"),
                max_new_tokens: TokenBudget::Auto,
                modules: false,
            },
        },
        &repo.path().join("state"),
    );
    assert_eq!(report.outcome, Outcome::Failed);
    assert_eq!(report.revert, Restored::Nothing, "{:?}", report.error);
    let error = report.error.expect("an error");
    assert!(error.contains("collect automates path A only"), "{error}");
    assert!(launcher.launches.is_empty());
    assert_eq!(files(repo.path()), before);
}

/// An error of the shared patch pipeline keeps its own code in the report: a run config that
/// is not there is `not_found`, as `npuprof patch` says, not collect's generic `failed`.
#[test]
fn a_missing_run_config_is_not_found_in_the_report() {
    let repo = recipes_mini();
    let canonical = repo.path().canonicalize().expect("canonical");
    let state = tempfile::tempdir().expect("state dir");
    let before = files(repo.path());
    let (report, launcher) = collect_unlaunched(
        npuprof_workflow::patch::Request {
            target: npuprof_repository::Request {
                repo: &canonical,
                model: MODEL,
                yaml: "no-such.yaml",
                mode: None,
            },
            window: PatchRequest {
                phases: PhaseSelection::Decode,
                window: Window::new(5, None).expect("window"),
                max_new_tokens: TokenBudget::Auto,
                modules: false,
            },
        },
        state.path(),
    );
    assert_eq!(report.outcome, Outcome::Failed);
    assert_eq!(
        report.error_code,
        Some(StopCode::Error(npuprof_severity::ErrorCode::NotFound)),
        "{:?}",
        report.error
    );
    assert_eq!(report.revert, Restored::Nothing);
    assert!(launcher.launches.is_empty());
    assert_eq!(files(repo.path()), before);
}
