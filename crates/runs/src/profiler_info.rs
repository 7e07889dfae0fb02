//! `profiler_info[_{rank}].json`: the configuration torch_npu actually recorded.

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use npuprof_schedule::Schedule;

use crate::build::Build;

/// Profiler level from `experimental_config._profiler_level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// `Level_none`.
    None,
    /// `Level0`: minimal kernel columns, no statistics files.
    Level0,
    /// `Level1`.
    Level1,
    /// `Level2`.
    Level2,
}

impl Level {
    /// torch_npu's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "Level_none",
            Level::Level0 => "Level0",
            Level::Level1 => "Level1",
            Level::Level2 => "Level2",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "Level_none" => Some(Level::None),
            "Level0" => Some(Level::Level0),
            "Level1" => Some(Level::Level1),
            "Level2" => Some(Level::Level2),
            _ => None,
        }
    }

    /// Level1 or Level2: statistics files and full kernel columns are expected.
    pub fn is_detailed(self) -> bool {
        self >= Level::Level1
    }
}

/// What `profiler_info` says, each field `None` when absent or unreadable.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProfilerInfo {
    /// `rank_id` (string or integer in the file), else the `_{rank}` of the file name.
    pub rank: Option<u32>,
    /// `torch_npu_version`.
    pub torch_npu_version: Option<String>,
    /// `cann_version`.
    pub cann_version: Option<String>,
    /// Parsed `_profiler_level`.
    pub level: Option<Level>,
    /// The raw `_profiler_level` string (kept when it is not a known level).
    pub level_raw: Option<String>,
    /// `_aic_metrics`, e.g. `ACL_AICORE_PIPE_UTILIZATION`.
    pub aic_metrics: Option<String>,
    /// `_export_type`: `"text"` or a list such as `["text"]`, `["db"]`.
    pub export_type: Option<Vec<String>>,
    /// `activities`, e.g. `ProfilerActivity.NPU`.
    pub activities: Option<Vec<String>>,
    /// The recorded `schedule` (`None` when absent or unreadable).
    pub schedule: Option<RecordedSchedule>,
    /// Why a recorded `schedule` could not be read (keys missing or not integers): the schedule
    /// is then unknown, never filled in with defaults.
    pub schedule_unknown: Option<String>,
    /// `profile_memory`.
    pub profile_memory: Option<bool>,
    /// `experimental_config._l2_cache`.
    pub l2_cache: Option<bool>,
    /// The recorded schedule's keys are the 2023 underscore spelling (`_wait`, `_active`, …).
    pub underscore_schedule: bool,
}

impl ProfilerInfo {
    /// Parses the file's text; `file_rank` is the rank from its name.
    pub fn parse(text: &str, file_rank: Option<u32>) -> Result<Self, serde_json::Error> {
        let v: Value = serde_json::from_str(text)?;
        let common = v.pointer("/config/common_config");
        let exp = v.pointer("/config/experimental_config");
        let string = |val: Option<&Value>| val.and_then(Value::as_str).map(str::to_owned);
        let rank = match v.get("rank_id") {
            Some(Value::String(s)) => s.trim().parse().ok(),
            Some(Value::Number(n)) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
            _ => None,
        }
        .or(file_rank);
        let level_raw = string(exp.and_then(|e| either(e, "profiler_level")));
        let export_type = exp
            .and_then(|e| either(e, "export_type"))
            .and_then(|t| match t {
                Value::String(s) => Some(vec![s.clone()]),
                Value::Array(items) => Some(
                    items
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect(),
                ),
                _ => None,
            });
        let activities = common
            .and_then(|c| c.get("activities"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            });
        let (schedule, schedule_unknown) = match common.and_then(|c| c.get("schedule")) {
            Some(Value::Object(o)) => match read_schedule(o) {
                Ok(s) => (Some(s), None),
                Err(why) => (None, Some(why)),
            },
            Some(Value::Null) => (Some(RecordedSchedule::Absent), None),
            Some(other) => (None, Some(format!("`schedule` is {other}, not an object"))),
            None => (None, None),
        };
        Ok(Self {
            rank,
            torch_npu_version: string(v.get("torch_npu_version")),
            cann_version: string(v.get("cann_version")),
            level: level_raw.as_deref().and_then(Level::parse),
            level_raw,
            aic_metrics: string(exp.and_then(|e| either(e, "aic_metrics"))),
            export_type,
            activities,
            schedule,
            schedule_unknown,
            profile_memory: common
                .and_then(|c| c.get("profile_memory"))
                .and_then(Value::as_bool),
            l2_cache: exp
                .and_then(|e| either(e, "l2_cache"))
                .and_then(Value::as_bool),
            underscore_schedule: common
                .and_then(|c| c.get("schedule"))
                .and_then(Value::as_object)
                .is_some_and(|o| o.keys().any(|k| k.starts_with('_'))),
        })
    }

    /// The torch_npu build that wrote the run.
    pub fn build(&self) -> Build {
        Build::new(
            self.torch_npu_version.as_deref(),
            self.cann_version.as_deref(),
        )
    }

    /// Whether the NPU activity was recorded (`None` when unknown).
    pub fn npu_activity(&self) -> Option<bool> {
        self.activities
            .as_ref()
            .map(|a| a.iter().any(|x| x.ends_with("NPU")))
    }

    /// Whether the CPU activity was recorded (`None` when unknown).
    pub fn cpu_activity(&self) -> Option<bool> {
        self.activities
            .as_ref()
            .map(|a| a.iter().any(|x| x.ends_with("CPU")))
    }

    /// Whether an old writer wrote the run: no `_export_type` (recorded since torch_npu
    /// 2024-03, Ascend/pytorch bc9f579b5) and the underscore schedule keys. Files a newer writer
    /// adds (`api_statistic.csv`, since 2024-05) are not demanded of it.
    pub fn old_writer(&self) -> bool {
        self.export_type.is_none() && self.underscore_schedule
    }

    /// Whether text export was requested (`true` when unknown: torch_npu's default).
    pub fn exports_text(&self) -> bool {
        self.export_type
            .as_ref()
            .is_none_or(|t| t.iter().any(|x| x.eq_ignore_ascii_case("text")))
    }

    /// Whether db export was requested.
    pub fn exports_db(&self) -> bool {
        self.export_type
            .as_ref()
            .is_some_and(|t| t.iter().any(|x| x.eq_ignore_ascii_case("db")))
    }
}

/// What profiler_info records as `schedule`: torch_npu writes `schedule.__dict__`
/// (`profiler_interface.py`, every build 2.1–2.14).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordedSchedule {
    /// A `torch_npu.profiler.schedule(...)` object: its arguments.
    Args(Schedule),
    /// `{}`: a function, whose arguments are not recorded: torch_npu's default schedule (no
    /// `schedule=`: every step until stop() is recorded, and kernel_details has no `Step Id`)
    /// or any callable (`torch.profiler.schedule`, a lambda, a partial: Step Ids are written).
    Function,
    /// `null`: no schedule at all (`_KinetoProfile`).
    Absent,
}

impl RecordedSchedule {
    /// The schedule's arguments, when they were recorded.
    pub fn args(self) -> Option<Schedule> {
        match self {
            Self::Args(s) => Some(s),
            Self::Function | Self::Absent => None,
        }
    }
}

/// A key in either spelling torch_npu has used: `name` or `_name`.
fn either<'a>(obj: &'a Value, name: &str) -> Option<&'a Value> {
    obj.get(name).or_else(|| obj.get(format!("_{name}")))
}

/// The schedule keys every torch_npu release records (`skip_first_wait` is newer and optional).
const SCHEDULE_KEYS: [&str; 5] = ["wait", "warmup", "active", "repeat", "skip_first"];

/// Reads a recorded schedule in either key style (`wait` or the 2023 `_wait`); `{}` is a
/// function. A key that is missing or not an integer makes the schedule unknown.
fn read_schedule(o: &serde_json::Map<String, Value>) -> Result<RecordedSchedule, String> {
    if o.is_empty() {
        return Ok(RecordedSchedule::Function);
    }
    let obj = Value::Object(o.clone());
    let get = |k: &str| either(&obj, k).and_then(Value::as_i64);
    let missing: Vec<&str> = SCHEDULE_KEYS
        .into_iter()
        .filter(|k| get(k).is_none())
        .collect();
    if !missing.is_empty() {
        let keys: Vec<&String> = o.keys().collect();
        return Err(format!(
            "the recorded schedule lacks integer {} (keys present: {keys:?})",
            missing.join(", ")
        ));
    }
    let v = |k: &str| get(k).unwrap_or_default();
    Ok(RecordedSchedule::Args(Schedule::clamped(
        v("wait"),
        v("warmup"),
        v("active"),
        v("repeat"),
        v("skip_first"),
        get("skip_first_wait").unwrap_or(0),
    )))
}

/// Where a rank sits in the whole run, from `profiler_metadata.json`: `parallel_group_info`,
/// the HCCL groups the rank belongs to, each with its `global_ranks` (written when
/// torch.distributed is initialised with HCCL), and `distributed_args`, the job's parallel sizes
/// (written by the framework through torch_npu's `add_metadata_json`: Megatron and MindSpeed
/// do, plain PyTorch does not).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ParallelGroups {
    /// The rank in the default group (`group_name` `default_group`), else `distributed_args`'
    /// `rank`: the global rank.
    pub rank: Option<u32>,
    /// One more than the highest global rank of any group: the number of ranks of the run
    /// (`distributed_args`' `world_size` is not taken for it: verify names missing ranks by
    /// what HCCL recorded).
    pub world_size: Option<u32>,
    /// The parallel sizes of `distributed_args`, when written.
    pub sizes: Option<ParallelSizes>,
    /// Every group of `parallel_group_info`, in the file's order.
    pub groups: Vec<ParallelGroup>,
}

/// `distributed_args`' sizes (each `None` when absent).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ParallelSizes {
    /// `tensor_model_parallel_size`.
    pub tp: Option<u32>,
    /// `pipeline_model_parallel_size`.
    pub pp: Option<u32>,
    /// `data_parallel_size`.
    pub dp: Option<u32>,
    /// `context_parallel_size`.
    pub cp: Option<u32>,
    /// `expert_model_parallel_size`.
    pub ep: Option<u32>,
}

/// One HCCL group of `parallel_group_info`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ParallelGroup {
    /// `group_name`: `default_group`, `dp`, `dp_cp`, `pp`, `tp`, `mp`, `embd`, … (the
    /// framework's names; empty when absent).
    pub kind: String,
    /// `group_rank`: this rank's place in the group.
    pub group_rank: Option<u32>,
    /// `global_ranks`.
    pub ranks: Vec<u32>,
}

impl ParallelGroups {
    /// Reads `parallel_group_info` and `distributed_args` from profiler_metadata.json's text
    /// (`None` when it has neither).
    pub fn parse(text: &str) -> Option<Self> {
        let v: Value = serde_json::from_str(text).ok()?;
        let info = v.get("parallel_group_info").and_then(Value::as_object);
        let args = v.get("distributed_args").and_then(Value::as_object);
        if info.is_none() && args.is_none() {
            return None;
        }
        let num = |v: &Value| match v {
            Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        };
        let mut highest: Option<u32> = None;
        let mut rank = None;
        let mut groups = Vec::new();
        for group in info.into_iter().flat_map(|g| g.values()) {
            let ranks: Vec<u32> = group
                .get("global_ranks")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(num).collect())
                .unwrap_or_default();
            highest = ranks.iter().copied().chain(highest).max();
            let kind = group
                .get("group_name")
                .and_then(Value::as_str)
                .unwrap_or("");
            let group_rank = group.get("group_rank").and_then(num);
            if kind == "default_group" {
                rank = group_rank;
            }
            groups.push(ParallelGroup {
                kind: kind.to_owned(),
                group_rank,
                ranks,
            });
        }
        let arg = |name: &str| args.and_then(|a| a.get(name)).and_then(num);
        let sizes = args.map(|_| ParallelSizes {
            tp: arg("tensor_model_parallel_size"),
            pp: arg("pipeline_model_parallel_size"),
            dp: arg("data_parallel_size"),
            cp: arg("context_parallel_size"),
            ep: arg("expert_model_parallel_size"),
        });
        // Beyond MAX_RANKS it is no real run's size: unknown.
        let world_size = highest
            .and_then(|h| h.checked_add(1))
            .filter(|n| (1..=crate::MAX_RANKS).contains(n));
        Some(Self {
            rank: rank.or(arg("rank")),
            world_size,
            sizes,
            groups,
        })
    }

    /// The first group of the first of `kinds` that this rank belongs to (by its kind name).
    pub fn group(&self, kinds: &[&str]) -> Option<&ParallelGroup> {
        kinds
            .iter()
            .find_map(|kind| self.groups.iter().find(|g| g.kind == *kind))
    }

    /// The pipeline stage of this rank (its place in its `pp` group) and the number of stages,
    /// when the run has more than one stage.
    pub fn stage(&self) -> Option<(u32, u32)> {
        let pp = self.group(&["pp"])?;
        let stages = u32::try_from(pp.ranks.len()).ok()?;
        (stages > 1).then_some((pp.group_rank?, stages))
    }
}

/// The environment variables torch_npu recorded with a run: `ENV_VARIABLES`, a fixed set of
/// names (`ASCEND_LAUNCH_BLOCKING`, `ASCEND_GLOBAL_LOG_LEVEL`, the HCCL and cache settings), each
/// with its value or an empty string when unset. The text export writes it into
/// profiler_metadata.json from the profiled process; the db export into its `META_DATA` table
/// from the process that parsed the run (for an offline parse, not the profiled one).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordedEnv(Vec<(String, String)>);

impl RecordedEnv {
    /// Reads `ENV_VARIABLES` from profiler_metadata.json's text (`None` when absent).
    pub fn from_metadata(text: &str) -> Option<Self> {
        let v: Value = serde_json::from_str(text).ok()?;
        Self::from_value(v.get("ENV_VARIABLES")?)
    }

    /// Reads the `ENV_VARIABLES` object itself (a db export's `META_DATA` value).
    pub fn from_object(text: &str) -> Option<Self> {
        Self::from_value(&serde_json::from_str(text).ok()?)
    }

    fn from_value(v: &Value) -> Option<Self> {
        let vars = v.as_object()?;
        Some(Self(
            vars.iter()
                .filter_map(|(name, value)| {
                    let value = match value {
                        Value::String(s) => s.clone(),
                        Value::Number(n) => n.to_string(),
                        _ => return None,
                    };
                    Some((name.clone(), value))
                })
                .collect(),
        ))
    }

    /// The value of `name` when it was set (not empty).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, v)| n == name && !v.trim().is_empty())
            .map(|(_, v)| v.trim())
    }
}

/// The rank in a `profiler_info_{rank}.json` file name.
pub fn rank_from_file_name(path: &Path) -> Option<u32> {
    let name = path.file_name()?.to_str()?;
    let rest = name.strip_prefix("profiler_info_")?.strip_suffix(".json")?;
    rest.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recorded_environment_is_read_from_the_metadata_and_from_a_db_value() {
        let text = r#"{"ENV_VARIABLES": {"ASCEND_GLOBAL_LOG_LEVEL": "", "ASCEND_LAUNCH_BLOCKING": " 1 ", "X": 3},
            "parallel_group_info": {}}"#;
        let env = RecordedEnv::from_metadata(text).expect("ENV_VARIABLES");
        assert_eq!(env.get("ASCEND_LAUNCH_BLOCKING"), Some("1"));
        assert_eq!(env.get("X"), Some("3"));
        // Recorded but unset, and not recorded at all.
        assert_eq!(env.get("ASCEND_GLOBAL_LOG_LEVEL"), None);
        assert_eq!(env.get("HCCL_ALGO"), None);
        assert_eq!(
            RecordedEnv::from_metadata(r#"{"parallel_group_info": {}}"#),
            None
        );
        let db = RecordedEnv::from_object(r#"{"ASCEND_GLOBAL_LOG_LEVEL": "0"}"#).expect("object");
        assert_eq!(db.get("ASCEND_GLOBAL_LOG_LEVEL"), Some("0"));
        assert_eq!(RecordedEnv::from_object("not json"), None);
    }

    #[test]
    fn reads_string_and_integer_rank() {
        let a = ProfilerInfo::parse(r#"{"rank_id": "3"}"#, None).unwrap_or_default();
        assert_eq!(a.rank, Some(3));
        let b = ProfilerInfo::parse(r#"{"rank_id": 5}"#, Some(1)).unwrap_or_default();
        assert_eq!(b.rank, Some(5));
        let c = ProfilerInfo::parse(r#"{}"#, Some(1)).unwrap_or_default();
        assert_eq!(c.rank, Some(1));
    }

    #[test]
    fn an_empty_schedule_is_a_function_and_null_is_none() {
        let info = ProfilerInfo::parse(
            r#"{"config": {"common_config": {"schedule": {}}, "experimental_config": {"_export_type": "text"}}}"#,
            None,
        )
        .unwrap_or_default();
        assert_eq!(info.schedule, Some(RecordedSchedule::Function));
        let kineto =
            ProfilerInfo::parse(r#"{"config": {"common_config": {"schedule": null}}}"#, None)
                .unwrap_or_default();
        assert_eq!(kineto.schedule, Some(RecordedSchedule::Absent));
        assert_eq!(kineto.schedule_unknown, None);
        assert_eq!(info.export_type, Some(vec!["text".to_owned()]));
    }

    #[test]
    fn old_underscore_keys_are_read_and_partial_schedules_are_unknown() {
        let old = ProfilerInfo::parse(
            r#"{"config": {"common_config": {"schedule": {"_wait": 1, "_warmup": 0, "_active": 1, "_repeat": 1, "_skip_first": 1}}, "experimental_config": {"_profiler_level": "Level1", "_aic_metrics": "ACL_AICORE_L0B_AND_WIDTH"}}}"#,
            None,
        )
        .unwrap_or_default();
        assert_eq!(
            old.schedule,
            Some(RecordedSchedule::Args(Schedule::clamped(1, 0, 1, 1, 1, 0)))
        );
        assert_eq!(old.level, Some(Level::Level1));
        assert!(old.old_writer(), "no _export_type and underscore keys");
        assert_eq!(old.aic_metrics.as_deref(), Some("ACL_AICORE_L0B_AND_WIDTH"));
        let partial = ProfilerInfo::parse(
            r#"{"config": {"common_config": {"schedule": {"wait": 0, "warmup": 1}}}}"#,
            None,
        )
        .unwrap_or_default();
        assert_eq!(partial.schedule, None);
        assert!(
            partial
                .schedule_unknown
                .is_some_and(|w| w.contains("active, repeat, skip_first"))
        );
    }

    #[test]
    fn parallel_group_info_rank_and_world_size() {
        let g = ParallelGroups::parse(
            r#"{"ENV_VARIABLES": {}, "parallel_group_info": {
                "11.0.0.1%enp_60000_0_1": {"group_name": "tp", "group_rank": 1, "global_ranks": [2, 3]},
                "11.0.0.1%enp_60000_0_2": {"group_name": "default_group", "group_rank": 3, "global_ranks": [0, 1, 2, 3, 4, 5, 6, 7]}
            }, "trace_id": "x"}"#,
        );
        assert_eq!(
            g.as_ref().map(|g| (g.rank, g.world_size)),
            Some((Some(3), Some(8)))
        );
        let tp = g.as_ref().and_then(|g| g.group(&["dp", "tp"]));
        assert_eq!(
            tp.map(|t| (t.kind.as_str(), t.group_rank, t.ranks.clone())),
            Some(("tp", Some(1), vec![2, 3]))
        );
        assert_eq!(g.as_ref().and_then(ParallelGroups::stage), None);
        // distributed_args alone (what a framework adds): its rank and sizes.
        let args = ParallelGroups::parse(
            r#"{"distributed_args": {"backend": "hccl", "rank": 3, "world_size": 16, "pipeline_model_parallel_size": 2}}"#,
        );
        assert_eq!(
            args.as_ref().map(|g| (g.rank, g.world_size)),
            Some((Some(3), None))
        );
        assert_eq!(args.and_then(|g| g.sizes).and_then(|s| s.pp), Some(2));
        assert_eq!(ParallelGroups::parse(r#"{"ENV_VARIABLES": {}}"#), None);
    }

    #[test]
    fn a_world_size_beyond_max_ranks_is_unknown() {
        let groups = |highest: u32| {
            ParallelGroups::parse(&format!(
                r#"{{"parallel_group_info": {{"g": {{"group_name": "default_group", "group_rank": 0, "global_ranks": [0, {highest}]}}}}}}"#
            ))
            .unwrap_or_default()
        };
        assert_eq!(groups(999_999_999).world_size, None);
        assert_eq!(groups(65_535).world_size, Some(65_536));
    }

    #[test]
    fn file_name_rank() {
        assert_eq!(
            rank_from_file_name(Path::new("a/profiler_info_12.json")),
            Some(12)
        );
        assert_eq!(rank_from_file_name(Path::new("profiler_info.json")), None);
    }
}
