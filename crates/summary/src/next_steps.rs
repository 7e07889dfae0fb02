//! What to open next: the viewers and analysers that go deeper than the summary, with the exact
//! command (or, for the MindStudio Insight GUI, the directory to import) for this run.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::ranks::PhaseRanks;
use crate::run::RunSummary;

/// A tool to open next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tool {
    /// MindStudio Insight (GUI): timeline, operators, communication, memory.
    MindstudioInsight,
    /// TensorBoard with the Ascend profiler plugin (`torch-tb-profiler-ascend`).
    Tensorboard,
    /// `msprof-analyze advisor`: expert advice on one run directory.
    MsprofAnalyzeAdvisor,
    /// `msprof-analyze cluster`: slow ranks and links across the ranks of a phase.
    MsprofAnalyzeCluster,
}

/// One thing to open next.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NextStep {
    /// The tool.
    pub tool: Tool,
    /// The phase it is about, when it is about one.
    pub phase: Option<String>,
    /// The command line to run (for MindStudio Insight: what to import).
    pub action: String,
    /// What it shows.
    pub what: String,
}

/// The next steps for the summarised `root` and its runs.
pub fn next_steps(root: &Path, runs: &[RunSummary], ranks: &[PhaseRanks]) -> Vec<NextStep> {
    let mut out = vec![NextStep {
        tool: Tool::MindstudioInsight,
        phase: None,
        action: format!(
            "import {} in MindStudio Insight (File > Import Data)",
            quote(root)
        ),
        what: "timeline, operator, communication and memory views of every run below it".to_owned(),
    }];
    for phase_ranks in ranks {
        let phase = &phase_ranks.phase;
        let dirs: Vec<&Path> = runs
            .iter()
            .filter(|r| &r.phase == phase)
            .map(|r| r.path.as_path())
            .collect();
        let parent = common_parent(&dirs).unwrap_or_else(|| root.to_path_buf());
        out.push(NextStep {
            tool: Tool::Tensorboard,
            phase: phase.clone(),
            action: format!("tensorboard --logdir {}", quote(&parent)),
            what: "the PyTorch profiler views (needs `pip install torch-tb-profiler-ascend`)"
                .to_owned(),
        });
        let slowest = runs
            .iter()
            .filter(|r| &r.phase == phase)
            .find(|r| r.rank.is_some() && r.rank == phase_ranks.slowest_rank)
            .or_else(|| runs.iter().find(|r| &r.phase == phase));
        if let Some(run) = slowest {
            out.push(NextStep {
                tool: Tool::MsprofAnalyzeAdvisor,
                phase: phase.clone(),
                action: format!("msprof-analyze advisor all -d {}", quote(&run.path)),
                what: match run.rank {
                    Some(rank) if dirs.len() > 1 => {
                        format!("expert advice (HTML) on the slowest rank, {rank}")
                    }
                    _ => "expert advice (HTML) on this run".to_owned(),
                },
            });
        }
        if dirs.len() > 1 {
            out.push(NextStep {
                tool: Tool::MsprofAnalyzeCluster,
                phase: phase.clone(),
                action: format!("msprof-analyze cluster -m all -d {}", quote(&parent)),
                what: "slow ranks, slow links and the communication matrix across ranks".to_owned(),
            });
        }
    }
    out
}

/// The parent directory all `dirs` share, when they share one.
fn common_parent(dirs: &[&Path]) -> Option<PathBuf> {
    let first = dirs.first()?.parent()?;
    dirs.iter()
        .all(|d| d.parent() == Some(first))
        .then(|| first.to_path_buf())
}

/// `path` quoted for a POSIX shell when it needs it.
fn quote(path: &Path) -> String {
    // An empty path is the current directory: no command gets an empty argument (`''`).
    let text = match path.display().to_string() {
        t if t.is_empty() => ".".to_owned(),
        t => t,
    };
    let safe = |c: char| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c);
    if !text.is_empty() && text.chars().all(safe) {
        text
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_only_when_needed() {
        assert_eq!(quote(Path::new("res/prof/decode")), "res/prof/decode");
        // The current directory, never an empty argument (`tensorboard --logdir ''`).
        assert_eq!(quote(Path::new("")), ".");
        assert_eq!(quote(Path::new("my run/it's")), r"'my run/it'\''s'");
    }

    #[test]
    fn common_parent_of_siblings() {
        let (a, b) = (Path::new("p/a_ascend_pt"), Path::new("p/b_ascend_pt"));
        assert_eq!(common_parent(&[a, b]), Some(PathBuf::from("p")));
        assert_eq!(common_parent(&[a, Path::new("q/c")]), None);
    }
}
