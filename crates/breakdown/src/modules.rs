//! Exact mode: the `nn.Module` tree of a trace and the device time each node owns.
//!
//! Module calls are nested by time containment on their thread (as msprof-analyze does), a
//! node's path being its ancestors' names (`/DistributedDataParallel_0/AlexNet_0/…`); the
//! calls of every step with the same path are one node. Optimizer calls
//! (`Optimizer.step#SGD.step`) are top-level nodes. A backward operator (the end of a
//! `fwdbwd` flow) belongs to the innermost module whose call holds the forward operator the
//! flow starts at; it becomes a node under `/[BACKWARD]` with that module's path
//! (`/[BACKWARD]/DistributedDataParallel_0/…/Conv2d_0`, `backward: true`).
//!
//! A kernel is linked by its `async_npu` flow to the operator that launched it (the flow's
//! start, on the host thread) and owned by the innermost node holding that launch on that
//! thread. Every kernel's time is either owned by a node or listed in the ledger as not
//! attributed, with the reason ([`Unattributed`]); owned + not attributed = total, in integer
//! picoseconds.

use std::collections::BTreeMap;

use crate::Map;

use serde::Serialize;

use crate::time::{median_p95, ps_to_us};
use crate::trace::{DEVICE_PROCESS, OpRole, Point, Span, Thread, Trace};

/// The path segment under which backward nodes hang.
pub const BACKWARD_ROOT: &str = "[BACKWARD]";

/// Task types that are not kernel time (synchronisation and markers; kernel_details.csv
/// leaves them out too), matched as prefixes of `args["Task Type"]`.
pub const NOT_KERNEL_TIME: [&str; 6] = [
    "EVENT_WAIT",
    "EVENT_RECORD",
    "PLACE_HOLDER",
    "Notify Wait",
    "NOTIFY_WAIT",
    "NOTIFY_RECORD",
];

/// Task types of a collective's device tasks (they have no launch flow).
pub const COMMUNICATION_TASKS: [&str; 4] = ["SDMA", "Write Value", "RDMA", "Reduce Inline"];

/// Why a kernel's time is owned by no node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unattributed {
    /// A collective's device task: communication has no launch flow to a host operator.
    CommunicationUnlinked,
    /// A kernel with no `async_npu` flow (or a flow without its start).
    NoFlow,
    /// Launched by an operator outside every module call, backward operator and optimizer
    /// call.
    OutsideModules,
    /// A collective's device task launched outside every module (a db export links them to
    /// the collective's operator, a DDP hook's all-reduce for one).
    CommunicationOutsideModules,
}

impl Unattributed {
    /// What the reason means, for people.
    pub fn describe(self) -> &'static str {
        match self {
            Unattributed::CommunicationUnlinked => {
                "communication tasks: no launch flow links them to a host operator"
            }
            Unattributed::NoFlow => "kernels without a launch flow",
            Unattributed::OutsideModules => "launched outside every module",
            Unattributed::CommunicationOutsideModules => {
                "communication tasks launched outside every module"
            }
        }
    }
}

/// One line of the ledger of what no node owns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LedgerLine {
    /// Why.
    pub reason: Unattributed,
    /// Kernels.
    pub kernels: u64,
    /// Their device time (µs).
    pub us: f64,
    /// The same in picoseconds (exact; the lines and `owned_ps` add up to `total_ps`).
    pub ps: u64,
}

/// Where every µs of the run's kernel time went.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ledger {
    /// Kernel time of the run (ps): the device tasks of [`DEVICE_PROCESS`] except those that
    /// are not kernel time ([`NOT_KERNEL_TIME`]).
    pub total_ps: u64,
    /// Owned by a node (ps).
    pub owned_ps: u64,
    /// Kernels in the total.
    pub kernels: u64,
    /// What no node owns, by reason.
    pub unattributed: Vec<LedgerLine>,
    /// Device tasks left out of the total as not kernel time (waits, records, markers).
    pub not_kernel_tasks: u64,
    /// Their time (µs).
    pub not_kernel_us: f64,
}

/// A node of the module tree.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Module {
    /// `/DistributedDataParallel_0/AlexNet_0/Sequential_0/Conv2d_0`.
    pub path: String,
    /// The last segment (`Conv2d_0`).
    pub name: String,
    /// Depth in the tree (top-level nodes: 1).
    pub depth: usize,
    /// A backward node (under `/[BACKWARD]`).
    pub backward: bool,
    /// Device time of the kernels owned by this node and its descendants, over the
    /// recorded steps (µs).
    pub total_us: f64,
    /// Device time of the kernels owned by this node itself (µs).
    pub self_us: f64,
    /// Kernels owned by this node and its descendants.
    pub kernels: u64,
    /// `total_us` as a share of the run's kernel time.
    pub share: f64,
    /// Median over the steps of the node's total per step (µs); `None` without steps.
    pub step_median_us: Option<f64>,
    /// 95th percentile (nearest rank) of the same.
    pub step_p95_us: Option<f64>,
}

/// Exact mode's result for one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModuleTree {
    /// The nodes, depth first (children in order of their first call).
    pub modules: Vec<Module>,
    /// Where the kernel time went.
    pub ledger: Ledger,
    /// The `ProfilerStep#N` numbers found, in order.
    pub steps: Vec<u64>,
}

/// A node while it is built.
struct Node {
    path: String,
    name: String,
    parent: Option<usize>,
    backward: bool,
    first: u64,
    self_ps: u64,
    self_kernels: u64,
    per_step: Vec<u64>,
}

/// The nodes by path.
struct Nodes {
    nodes: Vec<Node>,
    by_path: Map<String, usize>,
    steps: usize,
}

impl Nodes {
    /// The node of `path` (made, with its ancestors, when new).
    fn node(&mut self, path: &str, backward: bool, first: u64) -> usize {
        if let Some(&i) = self.by_path.get(path) {
            let node = &mut self.nodes[i];
            node.first = node.first.min(first);
            return i;
        }
        let (parent_path, name) = path.rsplit_once('/').unwrap_or(("", path));
        let parent = (!parent_path.is_empty()).then(|| self.node(parent_path, backward, first));
        let i = self.nodes.len();
        self.nodes.push(Node {
            path: path.to_owned(),
            name: name.to_owned(),
            parent,
            backward,
            first,
            self_ps: 0,
            self_kernels: 0,
            per_step: vec![0; self.steps],
        });
        self.by_path.insert(path.to_owned(), i);
        i
    }
}

/// An interval that owns the launches it holds.
struct Owner {
    span: Span,
    node: usize,
}

impl Ledger {
    /// Of the kernel time outside communication, the share owned by a node.
    pub fn compute_coverage(&self) -> f64 {
        let comm: u64 = self
            .unattributed
            .iter()
            .filter(|l| {
                matches!(
                    l.reason,
                    Unattributed::CommunicationUnlinked | Unattributed::CommunicationOutsideModules
                )
            })
            .map(|l| l.ps)
            .sum();
        let compute = self.total_ps - comm;
        if compute == 0 {
            0.0
        } else {
            self.owned_ps as f64 / compute as f64
        }
    }
}

/// Whether the trace holds module calls to break down by.
pub fn has_modules(trace: &Trace) -> bool {
    !trace.modules.is_empty()
}

/// The innermost owner holding each point, by a sweep over one thread's owners (sorted by
/// start, longest first) and points (sorted by time); inclusive ends.
fn innermost(owners: &[&Owner], points: &[(u64, usize)], out: &mut [Option<usize>]) {
    let mut stack: Vec<&Owner> = Vec::new();
    let mut next = 0;
    for &(ts, slot) in points {
        while next < owners.len() && owners[next].span.start <= ts {
            let owner = owners[next];
            while stack
                .last()
                .is_some_and(|top| top.span.end < owner.span.start)
            {
                stack.pop();
            }
            stack.push(owner);
            next += 1;
        }
        while stack.last().is_some_and(|top| top.span.end < ts) {
            stack.pop();
        }
        out[slot] = stack.last().map(|o| o.node);
    }
}

/// The forward module paths: calls nested by containment per thread. Returns each call's
/// path, in the order of `trace.modules`.
fn module_paths(trace: &Trace) -> Vec<String> {
    let mut order: Vec<usize> = (0..trace.modules.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&trace.modules[a].span, &trace.modules[b].span);
        x.thread
            .cmp(&y.thread)
            .then(x.start.cmp(&y.start))
            .then(y.end.cmp(&x.end))
    });
    let mut paths = vec![String::new(); trace.modules.len()];
    let mut stack: Vec<usize> = Vec::new();
    for i in order {
        let span = &trace.modules[i].span;
        while let Some(&top) = stack.last() {
            let t = &trace.modules[top].span;
            if t.thread == span.thread && t.start <= span.start && span.end <= t.end {
                break;
            }
            stack.pop();
        }
        let parent = stack.last().map_or("", |&p| paths[p].as_str());
        paths[i] = format!("{parent}/{}", trace.modules[i].name);
        stack.push(i);
    }
    paths
}

/// The step index holding `ts` (steps sorted by start).
fn step_of(steps: &[(u64, Span)], ts: u64) -> Option<usize> {
    let i = steps.partition_point(|(_, s)| s.start <= ts);
    (i > 0 && steps[i - 1].1.end >= ts).then(|| i - 1)
}

/// Breaks a trace down by its module calls.
pub fn breakdown(trace: &Trace) -> ModuleTree {
    let mut steps: Vec<(u64, Span)> = trace
        .ops
        .iter()
        .filter_map(|op| match op.role {
            OpRole::Step(n) => Some((n, op.span.clone())),
            _ => None,
        })
        .collect();
    steps.sort_by_key(|(_, s)| s.start);
    let mut nodes = Nodes {
        nodes: Vec::new(),
        by_path: Map::default(),
        steps: steps.len(),
    };
    let mut owners: Vec<Owner> = Vec::new();
    // Forward module calls.
    let paths = module_paths(trace);
    let mut forward: Map<Thread, Vec<(Span, usize)>> = Map::default();
    for (call, path) in trace.modules.iter().zip(&paths) {
        let node = nodes.node(path, false, call.span.start);
        forward
            .entry(call.span.thread)
            .or_default()
            .push((call.span.clone(), node));
        owners.push(Owner {
            span: call.span.clone(),
            node,
        });
    }
    // Optimizer calls.
    for op in &trace.ops {
        if let OpRole::Optimizer(name) = &op.role {
            let node = nodes.node(&format!("/{name}"), false, op.span.start);
            owners.push(Owner {
                span: op.span.clone(),
                node,
            });
        }
    }
    // Backward operators: the end of a fwdbwd flow whose start lies in a forward module call.
    let mut ops_at: Map<Point, &Span> = Map::default();
    for op in &trace.ops {
        let at = Point {
            thread: op.span.thread,
            ts: op.span.start,
        };
        // Several operators starting together: the outermost.
        let keep = ops_at.get(&at).is_none_or(|s| s.end < op.span.end);
        if keep {
            ops_at.insert(at, &op.span);
        }
    }
    for thread_calls in forward.values_mut() {
        thread_calls.sort_by(|a, b| a.0.start.cmp(&b.0.start).then(b.0.end.cmp(&a.0.end)));
    }
    let mut flows: Vec<(&u64, &Point)> = trace.backward.starts.iter().collect();
    flows.sort_by_key(|(id, _)| **id);
    for (id, start) in flows {
        let Some(end) = trace.backward.ends.get(id) else {
            continue;
        };
        let Some(op) = ops_at.get(end) else { continue };
        let Some(calls) = forward.get(&start.thread) else {
            continue;
        };
        // Innermost call strictly holding the forward operator's start.
        let holder = calls
            .iter()
            .filter(|(s, _)| s.start < start.ts && start.ts < s.end)
            .min_by_key(|(s, _)| s.end - s.start);
        let Some(&(_, fwd)) = holder else { continue };
        let path = format!("/{BACKWARD_ROOT}{}", nodes.nodes[fwd].path);
        let node = nodes.node(&path, true, op.start);
        owners.push(Owner {
            span: (*op).clone(),
            node,
        });
    }
    // Kernels: device tasks of the device process.
    let device: Vec<u64> = trace
        .processes
        .iter()
        .filter(|(_, name)| name.as_str() == DEVICE_PROCESS)
        .map(|(pid, _)| *pid)
        .collect();
    let mut landing: Map<Point, u64> = Map::default();
    for (id, end) in &trace.launches.ends {
        landing.insert(*end, *id);
    }
    let mut ledger: BTreeMap<Unattributed, (u64, u64)> = BTreeMap::new();
    let (mut total_ps, mut kernels, mut skipped, mut skipped_ps) = (0u64, 0u64, 0u64, 0u64);
    // Launch points per thread: (ts, kernel slot).
    let mut launched: Map<Thread, Vec<(u64, usize)>> = Map::default();
    let mut kept: Vec<(u64, Option<usize>, bool)> = Vec::new(); // (dur, step, communication)
    for task in trace
        .tasks
        .iter()
        .filter(|t| device.contains(&t.at.thread.0))
    {
        let task_type = if task.task_type == u32::MAX {
            ""
        } else {
            trace.name(task.task_type)
        };
        if NOT_KERNEL_TIME.iter().any(|p| task_type.starts_with(p)) {
            skipped += 1;
            skipped_ps += task.dur_ps;
            continue;
        }
        total_ps += task.dur_ps;
        kernels += 1;
        let launch = landing
            .get(&task.at)
            .and_then(|id| trace.launches.starts.get(id));
        let comm = task.communication
            || COMMUNICATION_TASKS.contains(&task_type)
            || trace.name(task.name).starts_with("hcom");
        match launch {
            Some(start) => {
                let slot = kept.len();
                kept.push((task.dur_ps, step_of(&steps, start.ts), comm));
                launched
                    .entry(start.thread)
                    .or_default()
                    .push((start.ts, slot));
            }
            None => {
                let reason = if comm {
                    Unattributed::CommunicationUnlinked
                } else {
                    Unattributed::NoFlow
                };
                let line = ledger.entry(reason).or_default();
                line.0 += 1;
                line.1 += task.dur_ps;
            }
        }
    }
    let mut owner_of: Vec<Option<usize>> = vec![None; kept.len()];
    let mut by_thread: Map<Thread, Vec<&Owner>> = Map::default();
    for owner in &owners {
        by_thread.entry(owner.span.thread).or_default().push(owner);
    }
    for list in by_thread.values_mut() {
        list.sort_by(|a, b| {
            a.span
                .start
                .cmp(&b.span.start)
                .then(b.span.end.cmp(&a.span.end))
        });
    }
    for (thread, points) in &mut launched {
        points.sort_unstable();
        if let Some(list) = by_thread.get(thread) {
            innermost(list, points, &mut owner_of);
        }
    }
    let mut owned_ps = 0u64;
    for (slot, &(dur, step, comm)) in kept.iter().enumerate() {
        match owner_of[slot] {
            Some(node) => {
                owned_ps += dur;
                let n = &mut nodes.nodes[node];
                n.self_ps += dur;
                n.self_kernels += 1;
                if let Some(s) = step {
                    n.per_step[s] += dur;
                }
            }
            None => {
                let reason = if comm {
                    Unattributed::CommunicationOutsideModules
                } else {
                    Unattributed::OutsideModules
                };
                let line = ledger.entry(reason).or_default();
                line.0 += 1;
                line.1 += dur;
            }
        }
    }
    ModuleTree {
        modules: finish(nodes, total_ps),
        ledger: Ledger {
            total_ps,
            owned_ps,
            kernels,
            unattributed: ledger
                .into_iter()
                .map(|(reason, (kernels, ps))| LedgerLine {
                    reason,
                    kernels,
                    us: ps_to_us(ps),
                    ps,
                })
                .collect(),
            not_kernel_tasks: skipped,
            not_kernel_us: ps_to_us(skipped_ps),
        },
        steps: steps.iter().map(|(n, _)| *n).collect(),
    }
}

/// Totals rolled up the tree, nodes depth first.
fn finish(nodes: Nodes, total_ps: u64) -> Vec<Module> {
    let Nodes { nodes, steps, .. } = nodes;
    let n = nodes.len();
    let mut total = vec![0u64; n];
    let mut count = vec![0u64; n];
    let mut per_step = vec![vec![0u64; steps]; n];
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut roots = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        match node.parent {
            Some(p) => children[p].push(i),
            None => roots.push(i),
        }
        let mut at = Some(i);
        while let Some(j) = at {
            total[j] += node.self_ps;
            count[j] += node.self_kernels;
            for (s, v) in node.per_step.iter().enumerate() {
                per_step[j][s] += v;
            }
            at = nodes[j].parent;
        }
    }
    let order = |list: &mut Vec<usize>| {
        list.sort_by(|&a, &b| {
            (nodes[a].backward, nodes[a].first, &nodes[a].path).cmp(&(
                nodes[b].backward,
                nodes[b].first,
                &nodes[b].path,
            ))
        });
    };
    order(&mut roots);
    for list in &mut children {
        order(list);
    }
    let mut out = Vec::with_capacity(n);
    let mut stack: Vec<(usize, usize)> = roots.iter().rev().map(|&r| (r, 1)).collect();
    while let Some((i, depth)) = stack.pop() {
        let node = &nodes[i];
        let steps_us: Vec<f64> = per_step[i].iter().map(|&p| ps_to_us(p)).collect();
        let stats = median_p95(&steps_us);
        out.push(Module {
            path: node.path.clone(),
            name: node.name.clone(),
            depth,
            backward: node.backward,
            total_us: ps_to_us(total[i]),
            self_us: ps_to_us(node.self_ps),
            kernels: count[i],
            share: if total_ps == 0 {
                0.0
            } else {
                total[i] as f64 / total_ps as f64
            },
            step_median_us: stats.map(|s| s.0),
            step_p95_us: stats.map(|s| s.1),
        });
        stack.extend(children[i].iter().rev().map(|&c| (c, depth + 1)));
    }
    out
}
