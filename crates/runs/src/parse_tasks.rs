//! torch_npu's parse tasks: their names and the dependency graph that makes one failure a
//! cascade (`analysis/prof_config/_parser_deps_config.py`, the same in every build from 2.5.1
//! to 2.14.0 for the text export; 2.1.0.post10 has a subset of these edges).

/// One parse task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Task {
    /// The class name stdout prints from 2.5.1 on: `Task [KernelViewParser] run failed.`
    pub class: &'static str,
    /// The internal name 2.1.0.post10 prints (`Task kernel has not run successfully.`) and
    /// the 2.7.1+ status table lists.
    pub internal: &'static [&'static str],
    /// The tasks whose output it needs: it never runs, and fails, when one of them failed.
    pub deps: &'static [&'static str],
}

const fn task(
    class: &'static str,
    internal: &'static [&'static str],
    deps: &'static [&'static str],
) -> Task {
    Task {
        class,
        internal,
        deps,
    }
}

/// Every parse task. `CANNTimelineParser` declares no dependency, but it waits for the CSVs
/// `CANNExportParser`'s msprof export writes and is stopped (and fails) when the export failed:
/// the edge is listed here so that the export, not the timeline, is named the root.
pub const TASKS: &[Task] = &[
    task("TorchOpParser", &["torch_op"], &[]),
    task("TaskQueueParser", &["task_queue"], &[]),
    task(
        "TracePreParser",
        &["trace_prepare"],
        &["TorchOpParser", "TaskQueueParser"],
    ),
    task(
        "TreeBuildParser",
        &["build_tree"],
        &["TorchOpParser", "TaskQueueParser"],
    ),
    task("CANNExportParser", &["export"], &[]),
    task("CANNTimelineParser", &["timeline"], &["CANNExportParser"]),
    task(
        "RelationParser",
        &["relation"],
        &["TaskQueueParser", "CANNTimelineParser"],
    ),
    task("CANNAnalyzeParser", &["analyze"], &["CANNTimelineParser"]),
    task(
        "OperatorViewParser",
        &["operator"],
        &[
            "TreeBuildParser",
            "CANNTimelineParser",
            "RelationParser",
            "TorchOpParser",
        ],
    ),
    task(
        "TraceViewParser",
        &["trace"],
        &[
            "TreeBuildParser",
            "TracePreParser",
            "CANNTimelineParser",
            "TaskQueueParser",
            "TorchOpParser",
        ],
    ),
    task(
        "KernelViewParser",
        &["kernel"],
        &["TreeBuildParser", "CANNExportParser", "RelationParser"],
    ),
    task(
        "TraceStepTimeParser",
        &["step_time"],
        &[
            "TreeBuildParser",
            "CANNTimelineParser",
            "RelationParser",
            "TorchOpParser",
        ],
    ),
    task(
        "MemoryViewParser",
        &["memory"],
        &["CANNExportParser", "MemoryPrepareParser"],
    ),
    task("IntegrateParser", &["integrate"], &["CANNExportParser"]),
    task(
        "CommunicationParser",
        &["communication"],
        &["TreeBuildParser", "CANNAnalyzeParser", "RelationParser"],
    ),
    task(
        "StackViewParser",
        &["export_stack"],
        &[
            "TreeBuildParser",
            "CANNTimelineParser",
            "TaskQueueParser",
            "TorchOpParser",
        ],
    ),
    task(
        "MemoryPrepareParser",
        &["memory_prepare"],
        &["TreeBuildParser", "TaskQueueParser", "TorchOpParser"],
    ),
    task(
        "DbPreParser",
        &["db_prepare"],
        &["TorchOpParser", "TaskQueueParser"],
    ),
    task(
        "DbParser",
        &["torch_db", "cann_db"],
        &[
            "CANNExportParser",
            "MemoryPrepareParser",
            "TreeBuildParser",
            "CANNAnalyzeParser",
            "DbPreParser",
        ],
    ),
    task("MemoryTimelineParser", &["memory_timeline"], &[]),
];

/// The task of a class name or an internal name.
pub fn find(name: &str) -> Option<&'static Task> {
    TASKS
        .iter()
        .find(|t| t.class == name || t.internal.contains(&name))
}

/// The class name for a name as a log prints it (unknown names are kept as they are).
pub fn class_name(name: &str) -> String {
    find(name).map_or_else(|| name.to_owned(), |t| t.class.to_owned())
}

/// Whether `task` needs `other`, directly or through other tasks.
pub fn depends_on(task: &str, other: &str) -> bool {
    let mut stack: Vec<&str> = vec![task];
    let mut seen: Vec<&str> = Vec::new();
    while let Some(name) = stack.pop() {
        let Some(t) = find(name) else { continue };
        for dep in t.deps {
            if *dep == other {
                return true;
            }
            if !seen.contains(dep) {
                seen.push(dep);
                stack.push(dep);
            }
        }
    }
    false
}

/// The failed tasks that no other failed task explains: the roots of the cascade, in order.
pub fn roots<'a>(failed: &[&'a str]) -> Vec<&'a str> {
    failed
        .iter()
        .copied()
        .filter(|t| !failed.iter().any(|o| o != t && depends_on(t, o)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_view_fails_after_relation_and_the_timeline() {
        assert!(depends_on("KernelViewParser", "RelationParser"));
        assert!(depends_on("KernelViewParser", "CANNTimelineParser"));
        assert!(depends_on("KernelViewParser", "TreeBuildParser"));
        assert_eq!(
            roots(&["KernelViewParser", "RelationParser", "CANNTimelineParser"]),
            vec!["CANNTimelineParser"]
        );
        assert_eq!(
            roots(&["CANNTimelineParser", "CANNExportParser", "TraceViewParser"]),
            vec!["CANNExportParser"]
        );
    }

    #[test]
    fn internal_names_map_to_classes() {
        assert_eq!(class_name("kernel"), "KernelViewParser");
        assert_eq!(class_name("export"), "CANNExportParser");
        assert_eq!(class_name("cann_db"), "DbParser");
        assert_eq!(class_name("Unheard"), "Unheard");
    }

    #[test]
    fn every_dependency_is_a_task() {
        for t in TASKS {
            for d in t.deps {
                assert!(find(d).is_some(), "{} needs unknown {d}", t.class);
            }
        }
    }
}
