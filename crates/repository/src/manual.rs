//! Models profiled by hand (families C and D): their launch line, results path and evidence,
//! from the definitions, with `{stem}` filled in and each evidence line found by its text.

use crate::definition::Manual;
use crate::resolve::{Evidence, Launch};

/// `text` with `{stem}` replaced by the run config's file name without `.yaml`.
fn fill(text: &str, stem: &str) -> String {
    text.replace("{stem}", stem)
}

/// The stem of a run config path (`sub/base.yaml` -> `base`).
pub(crate) fn stem(yaml: &str) -> &str {
    let name = yaml.rsplit('/').next().unwrap_or(yaml);
    name.strip_suffix(".yaml")
        .or_else(|| name.strip_suffix(".yml"))
        .unwrap_or(name)
}

/// The launch of `manual` for the run config `yaml` (none when the definitions name none).
pub fn launch(manual: &Manual, yaml: &str) -> Option<Launch> {
    let stem = stem(yaml);
    manual.launch.as_ref().map(|l| Launch {
        cwd: fill(&l.cwd, stem),
        argv: l.argv.iter().map(|a| fill(a, stem)).collect(),
        env: std::collections::BTreeMap::new(),
    })
}

/// Where `manual`'s profiler writes for `yaml`, relative to the repository.
pub fn results(manual: &Manual, yaml: &str) -> Option<String> {
    manual.results.as_deref().map(|r| fill(r, stem(yaml)))
}

/// The evidence lines of `manual` that its files really hold (`read` gives a file's text);
/// a file or text that is not there is left out, never cited at a made-up line.
pub fn evidence(manual: &Manual, read: impl Fn(&str) -> Option<String>) -> Vec<Evidence> {
    manual
        .evidence
        .iter()
        .filter_map(|e| {
            let text = read(&e.file)?;
            let index = text.lines().position(|l| l.contains(e.find.as_str()))?;
            Some(Evidence {
                what: e.what.clone(),
                path: e.file.clone(),
                line: index + 1,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Definitions;

    #[test]
    fn every_run_config_model_of_family_c_has_a_launch_and_the_stem_is_filled() {
        let defs = Definitions::builtin();
        let davinci = defs.manual("davinci-magihuman").expect("defined");
        let launch = launch(davinci, "distill.yaml").expect("a launch");
        assert_eq!(
            launch.command_line(),
            "cd models/davinci-magihuman && ENABLE_PROFILER=1 bash infer.sh distill"
        );
        assert_eq!(
            results(davinci, "distill.yaml").as_deref(),
            Some("models/davinci-magihuman/prof/distill_prof/")
        );
        for m in defs
            .manual
            .iter()
            .filter(|m| m.family == crate::Family::Multimedia)
        {
            assert!(m.launch.is_some(), "{}", m.model);
        }
    }

    #[test]
    fn evidence_cites_the_line_holding_the_text_and_skips_what_is_absent() {
        let defs = Definitions::builtin();
        let hstu = defs.manual("hstu").expect("defined");
        let found = evidence(hstu, |file| {
            file.ends_with("inference_gr_ranking.py").then(|| {
                "a\nb\n    parser.add_argument(\"--enable_profiler\", action=\"store_true\")\n"
                    .to_owned()
            })
        });
        assert!(
            found
                .iter()
                .any(|e| e.line == 3 && e.path.ends_with("inference_gr_ranking.py")),
            "{found:?}"
        );
        assert!(found.iter().all(|e| e.line > 0), "{found:?}");
        assert!(evidence(hstu, |_| None).is_empty());
    }
}
