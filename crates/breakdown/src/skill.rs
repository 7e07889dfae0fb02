//! The files of the cann-recipes-infer skill `model-infer-perf-breakdown`, read and validated:
//! its model structure (`structure_spec.json`: phases, layer counts, which components each
//! layer is made of) and its cluster rules (`<network>_spec.json`: per component type, named
//! clusters of kernels matched by type, regex and shape).
//!
//! The schema is the skill's (`SKILL.md` Phase 0a, `references/cluster_dialogue.md`,
//! `scripts/render.py`, `scripts/sample_matching.py` `_expand_schedule`); its semantics are
//! kept: a composition names its layers by `layer_range` (inclusive) or `layer_indices`,
//! 0-based within its phase, and no layer may be in two compositions; a cluster's rules are
//! alternatives, a rule's conditions all hold, the first matching cluster wins; a regex
//! matches anywhere in the text (Python's `re.search`). Stricter than the skill where its
//! leniency hides a mistake: a field it does not know, a rule with no condition (it would
//! match every kernel), a layer in no composition, a cluster after a `catch_all` one (never
//! reached) are errors naming the field.

use std::collections::{BTreeSet, HashSet};
use std::path::Path;

use regex::{Regex, RegexBuilder};
use serde::{Deserialize, Serialize};

/// The largest spec file read.
pub const MAX_FILE_BYTES: u64 = 1 << 20;
/// The most layers a structure may declare (over all phases).
pub const MAX_LAYERS: usize = 100_000;
/// The most phases, component types, clusters per type, rules per cluster, components per
/// composition.
pub const MAX_ITEMS: usize = 256;
/// The longest regex pattern (bytes).
pub const MAX_PATTERN: usize = 4096;
/// The most memory a compiled regex may take (bytes).
pub const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// A spec that cannot be used: which field, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    /// The field at fault (`phases[1].layer_compositions[0].layer_range`), empty for the file.
    pub field: String,
    /// Why.
    pub reason: String,
    /// Whether the file does not exist.
    pub missing: bool,
}

impl std::fmt::Display for SpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}", self.reason)
        } else {
            write!(f, "{}: {}", self.field, self.reason)
        }
    }
}

fn err(field: impl Into<String>, reason: impl Into<String>) -> SpecError {
    SpecError {
        field: field.into(),
        reason: reason.into(),
        missing: false,
    }
}

/// The model's structure (`structure_spec.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Structure {
    /// `model_hint`, as given.
    pub model_hint: Option<String>,
    /// The phases (model parts: `main`, `mtp_head`, …), in the order they run.
    pub phases: Vec<Phase>,
}

/// One phase of a [`Structure`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Phase {
    /// Its name.
    pub name: String,
    /// Per layer (0-based within the phase), the component types it is made of, in order.
    pub layers: Vec<Vec<String>>,
}

/// One layer of the structure in running order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduledLayer<'a> {
    /// Its phase.
    pub phase: &'a str,
    /// Its index over all phases (the skill's `layer_idx`).
    pub layer_idx: usize,
    /// Its component types, in order.
    pub components: &'a [String],
}

impl Structure {
    /// Layers over all phases.
    pub fn layer_count(&self) -> usize {
        self.phases.iter().map(|p| p.layers.len()).sum()
    }

    /// The layers in running order, phase after phase (the skill's schedule).
    pub fn schedule(&self) -> Vec<ScheduledLayer<'_>> {
        let mut out = Vec::with_capacity(self.layer_count());
        for phase in &self.phases {
            for components in &phase.layers {
                out.push(ScheduledLayer {
                    phase: &phase.name,
                    layer_idx: out.len(),
                    components,
                });
            }
        }
        out
    }

    /// The component types, sorted.
    pub fn component_types(&self) -> BTreeSet<&str> {
        self.phases
            .iter()
            .flat_map(|p| p.layers.iter().flatten())
            .map(String::as_str)
            .collect()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStructure {
    model_hint: Option<String>,
    phases: Vec<RawPhase>,
    expected_components: Option<Vec<String>>,
    expected_layer_count: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPhase {
    name: String,
    layers: u64,
    layer_compositions: Vec<RawComposition>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawComposition {
    layer_range: Option<(u64, u64)>,
    layer_indices: Option<Vec<u64>>,
    components: Vec<String>,
}

/// Reads a spec file through the probe (a regular file, at most [`MAX_FILE_BYTES`]).
pub fn read_file(path: &Path) -> Result<String, SpecError> {
    let bytes = match npuprof_runs::probe::read_capped(path, MAX_FILE_BYTES) {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(size)) => {
            return Err(err(
                "",
                format!("{size} bytes: larger than the {MAX_FILE_BYTES} bytes a spec may have"),
            ));
        }
        Err(problem) => {
            return Err(SpecError {
                missing: problem == npuprof_runs::probe::FileProblem::Missing,
                ..err("", problem.describe())
            });
        }
    };
    String::from_utf8(bytes).map_err(|_| err("", "not UTF-8 text"))
}

fn parse_json<'a, T: Deserialize<'a>>(text: &'a str) -> Result<T, SpecError> {
    serde_json::from_str(text).map_err(|e| err("", format!("not the skill's schema: {e}")))
}

fn count(field: &str, n: usize) -> Result<(), SpecError> {
    match n {
        0 => Err(err(field, "empty")),
        n if n > MAX_ITEMS => Err(err(field, format!("{n} items, more than {MAX_ITEMS}"))),
        _ => Ok(()),
    }
}

fn name(field: &str, text: &str) -> Result<(), SpecError> {
    if text.trim().is_empty() {
        return Err(err(field, "empty name"));
    }
    if text.len() > 256 || text.chars().any(char::is_control) {
        return Err(err(
            field,
            "a name of at most 256 characters, no control characters",
        ));
    }
    Ok(())
}

/// Parses and validates a `structure_spec.json`.
pub fn parse_structure(text: &str) -> Result<Structure, SpecError> {
    let raw: RawStructure = parse_json(text)?;
    count("phases", raw.phases.len())?;
    let mut phases = Vec::with_capacity(raw.phases.len());
    let mut total = 0usize;
    let mut names = HashSet::new();
    for (p, phase) in raw.phases.iter().enumerate() {
        let at = format!("phases[{p}]");
        name(&format!("{at}.name"), &phase.name)?;
        if !names.insert(phase.name.as_str()) {
            return Err(err(format!("{at}.name"), format!("`{}` twice", phase.name)));
        }
        if phase.layers == 0 {
            return Err(err(
                format!("{at}.layers"),
                "0: a phase has at least one layer",
            ));
        }
        total = total.saturating_add(usize::try_from(phase.layers).unwrap_or(usize::MAX));
        if total > MAX_LAYERS {
            return Err(err(
                format!("{at}.layers"),
                format!("more than {MAX_LAYERS} layers over the phases"),
            ));
        }
        let layers = phase.layers as usize;
        count(
            &format!("{at}.layer_compositions"),
            phase.layer_compositions.len(),
        )?;
        let mut per_layer: Vec<Option<Vec<String>>> = vec![None; layers];
        for (c, comp) in phase.layer_compositions.iter().enumerate() {
            let at = format!("{at}.layer_compositions[{c}]");
            count(&format!("{at}.components"), comp.components.len())?;
            for (k, component) in comp.components.iter().enumerate() {
                name(&format!("{at}.components[{k}]"), component)?;
            }
            let indices: Vec<u64> = match (comp.layer_range, &comp.layer_indices) {
                (Some(_), Some(_)) => {
                    return Err(err(at, "both layer_range and layer_indices: give one"));
                }
                (None, None) => {
                    return Err(err(at, "neither layer_range nor layer_indices: give one"));
                }
                (Some((lo, hi)), None) => {
                    if lo > hi {
                        return Err(err(
                            format!("{at}.layer_range"),
                            format!("[{lo}, {hi}]: the first layer after the last"),
                        ));
                    }
                    if hi >= phase.layers {
                        return Err(err(
                            format!("{at}.layer_range"),
                            format!("[{lo}, {hi}]: past the phase's {} layers", phase.layers),
                        ));
                    }
                    (lo..=hi).collect()
                }
                (None, Some(list)) => {
                    if list.is_empty() {
                        return Err(err(format!("{at}.layer_indices"), "empty"));
                    }
                    if let Some(i) = list.iter().find(|&&i| i >= phase.layers) {
                        return Err(err(
                            format!("{at}.layer_indices"),
                            format!("layer {i} is past the phase's {} layers", phase.layers),
                        ));
                    }
                    list.clone()
                }
            };
            for i in indices {
                let slot = &mut per_layer[i as usize];
                if let Some(before) = slot {
                    return Err(err(
                        at,
                        format!(
                            "layer {i} is already in a composition ({}): the skill refuses \
                             overlapping compositions (list alternating layers with \
                             layer_indices)",
                            before.join(", ")
                        ),
                    ));
                }
                *slot = Some(comp.components.clone());
            }
        }
        let missing: Vec<String> = per_layer
            .iter()
            .enumerate()
            .filter(|(_, l)| l.is_none())
            .map(|(i, _)| i.to_string())
            .take(8)
            .collect();
        if !missing.is_empty() {
            return Err(err(
                format!("{at}.layer_compositions"),
                format!("layer(s) {} in no composition", missing.join(", ")),
            ));
        }
        phases.push(Phase {
            name: phase.name.clone(),
            layers: per_layer.into_iter().flatten().collect(),
        });
    }
    let structure = Structure {
        model_hint: raw.model_hint,
        phases,
    };
    if let Some(n) = raw.expected_layer_count
        && n != structure.layer_count() as u64
    {
        return Err(err(
            "expected_layer_count",
            format!(
                "{n}, but the phases have {} layers",
                structure.layer_count()
            ),
        ));
    }
    if let Some(expected) = &raw.expected_components {
        let used = structure.component_types();
        let named: BTreeSet<&str> = expected.iter().map(String::as_str).collect();
        if named != used {
            return Err(err(
                "expected_components",
                format!(
                    "[{}], but the compositions use [{}]",
                    named.into_iter().collect::<Vec<_>>().join(", "),
                    used.into_iter().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
    }
    Ok(structure)
}

/// How outliers are told (the rules' `outlier`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutlierMethod {
    /// Outside `[Q1 − k·IQR, Q3 + k·IQR]`.
    Iqr,
    /// More than `k` standard deviations from the mean.
    Z,
}

/// The rules' `outlier` (default IQR, k = 1.5).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outlier {
    /// The method.
    pub method: OutlierMethod,
    /// Its factor.
    pub k: f64,
}

impl Default for Outlier {
    fn default() -> Self {
        Self {
            method: OutlierMethod::Iqr,
            k: 1.5,
        }
    }
}

/// The cluster rules (`<network>_spec.json`).
#[derive(Debug, Clone)]
pub struct Rules {
    /// `model_name` (the skill's default: `model`).
    pub model_name: String,
    /// How outliers are told.
    pub outlier: Outlier,
    /// Per component type, its clusters, in the file's order.
    pub components: Vec<ComponentRules>,
}

/// The clusters of one component type.
#[derive(Debug, Clone)]
pub struct ComponentRules {
    /// The component type.
    pub component: String,
    /// Its clusters, in order (the first matching one takes a kernel).
    pub clusters: Vec<Cluster>,
}

/// A named group of kernels within a component.
#[derive(Debug, Clone)]
pub struct Cluster {
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its rules: a kernel in the cluster matches any of them.
    pub rules: Vec<Rule>,
}

/// One rule: every condition given holds.
#[derive(Debug, Clone)]
pub struct Rule {
    op_name: Option<String>,
    op_name_regex: Option<Regex>,
    input_shapes_contains: Option<String>,
    input_shapes_regex: Option<Regex>,
    output_shapes_contains: Option<String>,
    output_shapes_regex: Option<Regex>,
    catch_all: bool,
}

/// What a rule looks at of a kernel.
#[derive(Debug, Clone, Copy)]
pub struct Op<'a> {
    /// Its `Type` (the skill's `normalized_name`).
    pub name: &'a str,
    /// Its `Input Shapes`.
    pub input_shapes: &'a str,
    /// Its `Output Shapes`.
    pub output_shapes: &'a str,
}

impl Rule {
    /// Whether `op` meets every condition.
    pub fn matches(&self, op: &Op<'_>) -> bool {
        if self.catch_all {
            return true;
        }
        let eq = |want: &Option<String>, have: &str| want.as_ref().is_none_or(|w| w == have);
        let has = |want: &Option<String>, have: &str| {
            want.as_ref().is_none_or(|w| have.contains(w.as_str()))
        };
        let re = |want: &Option<Regex>, have: &str| want.as_ref().is_none_or(|r| r.is_match(have));
        eq(&self.op_name, op.name)
            && re(&self.op_name_regex, op.name)
            && has(&self.input_shapes_contains, op.input_shapes)
            && re(&self.input_shapes_regex, op.input_shapes)
            && has(&self.output_shapes_contains, op.output_shapes)
            && re(&self.output_shapes_regex, op.output_shapes)
    }

    /// Whether the rule is `catch_all` (matches anything, tells nothing about a kernel).
    pub fn is_catch_all(&self) -> bool {
        self.catch_all
    }
}

impl Cluster {
    /// Whether `op` matches one of the rules.
    pub fn matches(&self, op: &Op<'_>) -> bool {
        self.rules.iter().any(|r| r.matches(op))
    }

    /// Whether `op` matches one of the rules that is not `catch_all`.
    pub fn matches_specifically(&self, op: &Op<'_>) -> bool {
        self.rules
            .iter()
            .any(|r| !r.is_catch_all() && r.matches(op))
    }
}

impl ComponentRules {
    /// The index of the first cluster `op` matches.
    pub fn classify(&self, op: &Op<'_>) -> Option<usize> {
        self.clusters.iter().position(|c| c.matches(op))
    }

    /// Whether one of the clusters names `op` by a rule that is not `catch_all`.
    pub fn claims(&self, op: &Op<'_>) -> bool {
        self.clusters.iter().any(|c| c.matches_specifically(op))
    }

    /// Whether any rule is not `catch_all`.
    pub fn has_specific_rules(&self) -> bool {
        self.clusters
            .iter()
            .flat_map(|c| &c.rules)
            .any(|r| !r.is_catch_all())
    }
}

impl Rules {
    /// The clusters of `component`, when the rules have them.
    pub fn of(&self, component: &str) -> Option<&ComponentRules> {
        self.components.iter().find(|c| c.component == component)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRules {
    model_name: Option<String>,
    outlier: Option<Outlier>,
    component_clusters: Ordered<Vec<RawCluster>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCluster {
    cluster: String,
    description: Option<String>,
    rules: Vec<RawRule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    op_name: Option<String>,
    op_name_regex: Option<String>,
    input_shapes_contains: Option<String>,
    input_shapes_regex: Option<String>,
    output_shapes_contains: Option<String>,
    output_shapes_regex: Option<String>,
    catch_all: Option<bool>,
}

/// A JSON object's entries in the file's order (the skill reports component types in the
/// order its rules file names them); a key given twice is refused.
struct Ordered<T>(Vec<(String, T)>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Ordered<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Visit<T> {
            type Value = Ordered<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let mut out: Vec<(String, T)> = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, T>()? {
                    if out.iter().any(|(k, _)| *k == key) {
                        return Err(serde::de::Error::custom(format!("key `{key}` twice")));
                    }
                    out.push((key, value));
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(Visit(std::marker::PhantomData))
    }
}

fn regex(field: &str, pattern: &Option<String>) -> Result<Option<Regex>, SpecError> {
    let Some(pattern) = pattern else {
        return Ok(None);
    };
    if pattern.len() > MAX_PATTERN {
        return Err(err(
            field,
            format!("{} bytes, longer than {MAX_PATTERN}", pattern.len()),
        ));
    }
    RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map(Some)
        .map_err(|e| {
            let e = e.to_string();
            let hint = if pattern.contains("(?=")
                || pattern.contains("(?!")
                || pattern.contains("(?<=")
                || pattern.contains("(?<!")
            {
                " (look-around is Python-only: not supported)"
            } else {
                ""
            };
            err(
                field,
                format!(
                    "not a usable regex{hint}: {}",
                    e.lines().last().unwrap_or(&e)
                ),
            )
        })
}

fn text_condition(field: &str, text: &Option<String>) -> Result<Option<String>, SpecError> {
    if let Some(t) = text
        && t.len() > MAX_PATTERN
    {
        return Err(err(
            field,
            format!("{} bytes, longer than {MAX_PATTERN}", t.len()),
        ));
    }
    Ok(text.clone())
}

fn rule(at: &str, raw: &RawRule) -> Result<Rule, SpecError> {
    let catch_all = match raw.catch_all {
        Some(true) => true,
        Some(false) | None => false,
    };
    let rule = Rule {
        op_name: text_condition(&format!("{at}.op_name"), &raw.op_name)?,
        op_name_regex: regex(&format!("{at}.op_name_regex"), &raw.op_name_regex)?,
        input_shapes_contains: text_condition(
            &format!("{at}.input_shapes_contains"),
            &raw.input_shapes_contains,
        )?,
        input_shapes_regex: regex(&format!("{at}.input_shapes_regex"), &raw.input_shapes_regex)?,
        output_shapes_contains: text_condition(
            &format!("{at}.output_shapes_contains"),
            &raw.output_shapes_contains,
        )?,
        output_shapes_regex: regex(
            &format!("{at}.output_shapes_regex"),
            &raw.output_shapes_regex,
        )?,
        catch_all,
    };
    let conditions = [
        rule.op_name.is_some(),
        rule.op_name_regex.is_some(),
        rule.input_shapes_contains.is_some(),
        rule.input_shapes_regex.is_some(),
        rule.output_shapes_contains.is_some(),
        rule.output_shapes_regex.is_some(),
    ]
    .into_iter()
    .filter(|c| *c)
    .count();
    if catch_all && conditions > 0 {
        return Err(err(
            at,
            "catch_all with conditions: the conditions would be ignored",
        ));
    }
    if !catch_all && conditions == 0 {
        return Err(err(
            at,
            "no condition: it would match every kernel (write \"catch_all\": true)",
        ));
    }
    Ok(rule)
}

/// Parses and validates a `<network>_spec.json`.
pub fn parse_rules(text: &str) -> Result<Rules, SpecError> {
    let raw: RawRules = parse_json(text)?;
    let outlier = raw.outlier.unwrap_or_default();
    if !(outlier.k.is_finite() && outlier.k > 0.0 && outlier.k <= 1000.0) {
        return Err(err(
            "outlier.k",
            format!("{}: a factor in (0, 1000]", outlier.k),
        ));
    }
    if let Some(model) = &raw.model_name {
        name("model_name", model)?;
    }
    count("component_clusters", raw.component_clusters.0.len())?;
    let mut components = Vec::new();
    for (component, clusters) in &raw.component_clusters.0 {
        let at = format!("component_clusters.{component}");
        name(&at, component)?;
        count(&at, clusters.len())?;
        let mut out: Vec<Cluster> = Vec::with_capacity(clusters.len());
        for (c, cluster) in clusters.iter().enumerate() {
            let at = format!("{at}[{c}]");
            name(&format!("{at}.cluster"), &cluster.cluster)?;
            if let Some(open) = out.iter().find(|o| o.rules.iter().any(Rule::is_catch_all)) {
                return Err(err(
                    at,
                    format!(
                        "after the catch_all cluster `{}`: never reached (catch_all goes last)",
                        open.name
                    ),
                ));
            }
            if out.iter().any(|o| o.name == cluster.cluster) {
                return Err(err(
                    format!("{at}.cluster"),
                    format!("`{}` twice in the component", cluster.cluster),
                ));
            }
            count(&format!("{at}.rules"), cluster.rules.len())?;
            let rules = cluster
                .rules
                .iter()
                .enumerate()
                .map(|(r, raw)| rule(&format!("{at}.rules[{r}]"), raw))
                .collect::<Result<Vec<_>, _>>()?;
            out.push(Cluster {
                name: cluster.cluster.clone(),
                description: cluster.description.clone().unwrap_or_default(),
                rules,
            });
        }
        components.push(ComponentRules {
            component: component.clone(),
            clusters: out,
        });
    }
    Ok(Rules {
        model_name: raw.model_name.unwrap_or_else(|| "model".to_owned()),
        outlier,
        components,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op<'a>(name: &'a str, shapes: &'a str) -> Op<'a> {
        Op {
            name,
            input_shapes: shapes,
            output_shapes: "",
        }
    }

    #[test]
    fn a_rule_is_every_condition_and_a_regex_searches() {
        let rules = parse_rules(
            r#"{"component_clusters": {"mla": [
                {"cluster": "q", "rules": [{"op_name": "MatMulV3", "input_shapes_contains": "7168"}]},
                {"cluster": "norm", "rules": [{"op_name_regex": "RmsNorm"}]},
                {"cluster": "other", "rules": [{"catch_all": true}]}]}}"#,
        )
        .unwrap();
        let mla = rules.of("mla").unwrap();
        assert_eq!(mla.classify(&op("MatMulV3", "1,7168;7168,1536")), Some(0));
        assert_eq!(mla.classify(&op("MatMulV3", "1,512")), Some(2));
        assert_eq!(mla.classify(&op("AddRmsNormCast", "")), Some(1));
        assert!(mla.claims(&op("AddRmsNormCast", "")));
        assert!(!mla.claims(&op("Cast", "")));
        assert_eq!(rules.outlier, Outlier::default());
        assert_eq!(rules.model_name, "model");
    }

    #[test]
    fn component_types_keep_the_files_order() {
        let rules = parse_rules(
            r#"{"component_clusters": {"moe": [{"cluster": "a", "rules": [{"catch_all": true}]}],
                "attn": [{"cluster": "a", "rules": [{"catch_all": true}]}]}}"#,
        )
        .unwrap();
        let order: Vec<&str> = rules
            .components
            .iter()
            .map(|c| c.component.as_str())
            .collect();
        assert_eq!(order, ["moe", "attn"]);
    }
}
