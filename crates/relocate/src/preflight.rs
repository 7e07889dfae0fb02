//! Pre-flight of an output location: filesystem, owner, free space, symlinks, and a real
//! lock-and-rename probe (the operations torch_npu's parsers depend on).

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use serde::Serialize;

pub use npuprof_journal::probe::ProbeStep;

use npuprof_runs::mounts::{FsClass, MountTable};

/// Free space below which a location is flagged (profiles of large runs reach many GiB).
const LOW_SPACE_BYTES: u64 = 5 << 30;

/// What was found about one location.
#[derive(Debug, Clone, Serialize)]
pub struct LocationReport {
    /// The location asked about.
    pub path: PathBuf,
    /// Whether it exists.
    pub exists: bool,
    /// The existing directory actually examined: the location (canonical) or, when it does
    /// not exist yet, its nearest existing ancestor.
    pub examined: PathBuf,
    /// The filesystem holding `examined`, when the mount table names it.
    pub filesystem: Option<Filesystem>,
    /// Owner uid of `examined`.
    pub owner_uid: Option<u32>,
    /// The effective uid of this process.
    pub your_uid: u32,
    /// Bytes available to unprivileged users on that filesystem.
    pub free_bytes: Option<u64>,
    /// Symlinks on the way to the location.
    pub symlinks: Vec<SymlinkHop>,
    /// Result of the lock-and-rename probe in `examined`.
    pub probe: Probe,
    /// What is wrong or risky here, worst first.
    pub problems: Vec<Problem>,
}

/// A filesystem, from the mount table.
#[derive(Debug, Clone, Serialize)]
pub struct Filesystem {
    /// Type (`ext4`, `nfs4`, ...).
    #[serde(rename = "type")]
    pub fs_type: String,
    /// `local`, `network`, `fuse` or `overlay`.
    pub class: FsClass,
    /// Where it is mounted.
    pub mount_point: PathBuf,
    /// What is mounted.
    pub source: String,
}

/// One symlink on a path.
#[derive(Debug, Clone, Serialize)]
pub struct SymlinkHop {
    /// The symlink.
    pub path: PathBuf,
    /// What it points at.
    pub target: PathBuf,
}

/// The lock-and-rename probe: create a file, lock it exclusively, rename it, remove it.
#[derive(Debug, Clone, Serialize)]
pub struct Probe {
    /// Whether every step worked.
    pub ok: bool,
    /// The first step that failed.
    pub failed_step: Option<ProbeStep>,
    /// The error of that step.
    pub error: Option<String>,
}

/// How serious a problem is (the one definition, npuprof-severity's): an error means output here
/// is expected to fail, a warning is a risk worth knowing; pre-flight reports no `info`.
pub use npuprof_severity::Severity;

/// Stable identifiers of the problems.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemCode {
    /// A network or cluster filesystem.
    NetworkFs,
    /// A FUSE filesystem.
    FuseFs,
    /// An overlay filesystem.
    OverlayFs,
    /// The lock-and-rename probe failed.
    ProbeFailed,
    /// Owned by someone else.
    NotOwner,
    /// Little free space.
    LowSpace,
    /// A symlink on the way.
    SymlinkInPath,
}

/// A finding about a location.
#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    /// How serious it is.
    pub severity: Severity,
    /// Stable identifier.
    pub code: ProblemCode,
    /// What was found.
    pub message: String,
}

impl LocationReport {
    /// Whether any problem is an error.
    pub fn has_errors(&self) -> bool {
        self.problems.iter().any(|p| p.severity == Severity::Error)
    }
}

/// The existing directory the pre-flight of `path` examines (and probes): `path` itself,
/// canonical, or its nearest existing ancestor.
pub fn examined_dir(path: &Path) -> PathBuf {
    path.ancestors()
        .find_map(|p| p.canonicalize().ok().filter(|c| c.is_dir()))
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// Examines `path` (absolute). The probe writes and removes one temp file in the examined
/// directory.
pub fn examine(path: &Path, mounts: &MountTable) -> LocationReport {
    let exists = fs::symlink_metadata(path).is_ok();
    let examined = examined_dir(path);
    let filesystem = mounts.mount_for(&examined).map(|m| Filesystem {
        fs_type: m.fs_type.clone(),
        class: m.class(),
        mount_point: PathBuf::from(&m.mount_point),
        source: m.source.clone(),
    });
    let owner_uid = fs::metadata(&examined).ok().map(|m| m.uid());
    let your_uid = rustix::process::geteuid().as_raw();
    let free_bytes = rustix::fs::statvfs(&examined)
        .ok()
        .map(|s| s.f_bavail.saturating_mul(s.f_frsize));
    let symlinks = symlinks_on(path);
    let probe = run_probe(&examined);
    let mut report = LocationReport {
        path: path.to_path_buf(),
        exists,
        examined,
        filesystem,
        owner_uid,
        your_uid,
        free_bytes,
        symlinks,
        probe,
        problems: Vec::new(),
    };
    report.problems = problems(&report);
    report
}

fn problems(report: &LocationReport) -> Vec<Problem> {
    let mut out = Vec::new();
    let mut push = |severity, code, message: String| {
        out.push(Problem {
            severity,
            code,
            message,
        })
    };
    if let Some(fs) = &report.filesystem {
        match fs.class {
            FsClass::Network => push(
                Severity::Error,
                ProblemCode::NetworkFs,
                format!(
                    "network filesystem `{}` ({} on {}): torch_npu's parsers are known to fail here \
                     (every parser \"run failed\", no CSV, truncated trace_view.json)",
                    fs.fs_type,
                    fs.source,
                    fs.mount_point.display()
                ),
            ),
            FsClass::Fuse => push(
                Severity::Error,
                ProblemCode::FuseFs,
                format!(
                    "FUSE filesystem `{}` ({}): the same risks as network storage",
                    fs.fs_type,
                    fs.mount_point.display()
                ),
            ),
            FsClass::Overlay => push(
                Severity::Warning,
                ProblemCode::OverlayFs,
                format!(
                    "overlay filesystem (a container layer at {}): usually works, but a bind-mounted local disk is safer and faster",
                    fs.mount_point.display()
                ),
            ),
            FsClass::Local => {}
        }
    }
    if !report.probe.ok {
        push(
            Severity::Error,
            ProblemCode::ProbeFailed,
            format!(
                "the lock-and-rename probe failed at `{}`: {}",
                report.probe.failed_step.map_or("?", ProbeStep::as_str),
                report.probe.error.as_deref().unwrap_or("?")
            ),
        );
    }
    if let Some(owner) = report.owner_uid
        && owner != report.your_uid
    {
        push(
            Severity::Warning,
            ProblemCode::NotOwner,
            format!("owned by uid {owner}, you are uid {}", report.your_uid),
        );
    }
    if let Some(free) = report.free_bytes
        && free < LOW_SPACE_BYTES
    {
        push(
            Severity::Warning,
            ProblemCode::LowSpace,
            format!("only {} free", human_bytes(free)),
        );
    }
    for hop in &report.symlinks {
        push(
            Severity::Warning,
            ProblemCode::SymlinkInPath,
            format!(
                "`{}` is a symlink to `{}` (torch_npu's guide says symlinks in profiler paths are unsupported; recent versions only warn)",
                hop.path.display(),
                hop.target.display()
            ),
        );
    }
    out
}

/// Every symlink among the prefixes of `path`.
fn symlinks_on(path: &Path) -> Vec<SymlinkHop> {
    let mut prefix = PathBuf::new();
    let mut hops = Vec::new();
    for component in path.components() {
        prefix.push(component);
        if matches!(component, Component::Normal(_))
            && let Ok(target) = fs::read_link(&prefix)
        {
            hops.push(SymlinkHop {
                path: prefix.clone(),
                target,
            });
        }
    }
    hops
}

fn run_probe(dir: &Path) -> Probe {
    match npuprof_journal::probe::run(dir) {
        Ok(()) => Probe {
            ok: true,
            failed_step: None,
            error: None,
        },
        Err(failure) => Probe {
            ok: false,
            failed_step: Some(failure.step),
            error: Some(failure.error.to_string()),
        },
    }
}

/// `1.5 GiB`-style sizes.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}
