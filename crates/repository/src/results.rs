//! Where a run's results land: `<base>/<results>/<DATE>/<case>[/<role prefix><i>]` (for
//! cann-recipes-infer `res/<DATE>/<model_name>_<yaml stem>`, the layout's `case`), each phase
//! under its own sub-path, each rank in a `*_ascend_pt` directory. Named the way the launcher
//! names them (the YAML's sub-folder is dropped; `model_name` is not the directory).

use std::path::{Path, PathBuf};

use npuprof_schedule::Phase;
use serde::Serialize;

/// Where one target's results land.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Results {
    /// The directory holding `<DATE>/` directories, relative to the repository (`models/<m>/res`).
    pub res_dir: String,
    /// The case name: `<model_name>_<yaml stem>`.
    pub case: String,
    /// The PD sub-directory prefix (`prefill_node`, `decode_node`) of an online run.
    pub role_prefix: Option<String>,
    /// Each profiled phase's sub-path of a result directory (`prof/decode`, `decode/prof`).
    pub phases: Vec<(Phase, String)>,
}

impl Results {
    /// The newest result directory of this case (`<res_dir>/<DATE>/<case>`, newest date first;
    /// with a role, the newest `<role>_node<i>` below it), as a path under `repo`.
    pub fn newest(&self, repo: &Path) -> Option<PathBuf> {
        let res = repo.join(&self.res_dir);
        let mut dates: Vec<String> = std::fs::read_dir(&res)
            .ok()?
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir() || t.is_symlink()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|d| d.len() == 8 && d.bytes().all(|b| b.is_ascii_digit()))
            .collect();
        dates.sort_unstable_by(|a, b| b.cmp(a));
        dates.into_iter().find_map(|date| {
            let case = res.join(date).join(&self.case);
            if !case.is_dir() {
                return None;
            }
            match &self.role_prefix {
                None => Some(case),
                Some(prefix) => newest_child(&case, prefix),
            }
        })
    }

    /// The sub-path of `phase`, when it is profiled.
    pub fn phase_path(&self, phase: Phase) -> Option<&str> {
        self.phases
            .iter()
            .find(|(p, _)| *p == phase)
            .map(|(_, s)| s.as_str())
    }
}

fn newest_child(dir: &Path, prefix: &str) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .max()
        .map(|(_, p)| p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_case_drops_the_sub_folder_and_the_extension() {
        let layout = &crate::Definitions::builtin().layout;
        assert_eq!(
            layout.case_name("GLM-5.2", "ci_a3/x_mtp.yaml"),
            "GLM-5.2_x_mtp"
        );
        assert_eq!(layout.case_name("None", "a.b.yml"), "None_a.b");
    }

    #[test]
    fn the_newest_date_holding_the_case_wins() {
        let dir = tempfile::tempdir().unwrap();
        let res = dir.path().join("models/m/res");
        for d in [
            "20260101/M_a",
            "20260301/M_b",
            "20260201/M_a",
            "notadate/M_a",
        ] {
            std::fs::create_dir_all(res.join(d)).unwrap();
        }
        let results = Results {
            res_dir: "models/m/res".to_owned(),
            case: "M_a".to_owned(),
            role_prefix: None,
            phases: Vec::new(),
        };
        assert_eq!(results.newest(dir.path()), Some(res.join("20260201/M_a")));
    }
}
