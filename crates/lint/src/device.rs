//! Which device a piece of code is written for, as far as the script says so itself: the
//! `if` branches around it (`if npu_available: … else: …`, `if not torch_npu_flag:`,
//! `if device == "cuda":`) and a profile's `activities` (`ProfilerActivity.CUDA`). NPL005
//! (`torch.profiler` instead of torch_npu's) is only about code that runs on the NPU.

use npuprof_syntax::{kwarg, named_children, positional, text};
use tree_sitter::Node;

use crate::profile::FileContext;

/// The device a condition's true branch is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    /// The Ascend NPU (`torch_npu_flag`, `is_npu_available()`, `device == "npu"`).
    Npu,
    /// Another device (`not torch_npu_flag`, `torch.cuda.is_available()`, `device != "npu"`).
    Other,
}

impl Side {
    fn flip(self) -> Self {
        match self {
            Side::Npu => Side::Other,
            Side::Other => Side::Npu,
        }
    }
}

/// The device a condition tests for, when its words say it: `npu` (or `cuda`/`gpu`),
/// negated by `not`, `!=` or `not in`. `None` for anything else (both or neither named).
fn side_of(condition: Node<'_>, source: &str) -> Option<Side> {
    match condition.kind() {
        "not_operator" => {
            return side_of(condition.child_by_field_name("argument")?, source).map(Side::flip);
        }
        "parenthesized_expression" => return side_of(condition.named_child(0)?, source),
        _ => {}
    }
    let words = text(condition, source).to_lowercase();
    // Whole words only (`torch_npu_flag`, `"npu:0"`): `input` is not about the NPU.
    let has = |word: &str| {
        words
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|w| w == word)
    };
    let npu = has("npu");
    let gpu = has("cuda") || has("gpu");
    let side = match (npu, gpu) {
        (true, false) => Side::Npu,
        (false, true) => Side::Other,
        _ => return None,
    };
    let negated = words.contains("!=") || words.contains(" not in ") || words.contains(" is not ");
    Some(if negated { side.flip() } else { side })
}

/// Whether `node` sits in a branch written for another device than the NPU: the true
/// branch of a non-NPU condition, or an `elif`/`else` after an NPU condition.
pub(crate) fn off_npu<'t>(ctx: &FileContext<'t, '_>, node: Node<'t>) -> bool {
    let source = ctx.source;
    let mut child = node;
    while let Some(parent) = ctx.semantic.parent(child) {
        if parent.kind() == "if_statement" && parent.child_by_field_name("condition") != Some(child)
        {
            let mut earlier = vec![parent.child_by_field_name("condition")];
            let mut own = earlier[0];
            let mut in_alternative = false;
            if Some(child) != parent.child_by_field_name("consequence") {
                in_alternative = true;
                own = None;
                for clause in named_children(parent) {
                    if clause == child {
                        if clause.kind() == "elif_clause" {
                            own = clause.child_by_field_name("condition");
                        }
                        break;
                    }
                    if clause.kind() == "elif_clause" {
                        earlier.push(clause.child_by_field_name("condition"));
                    }
                }
            }
            let own_side = own.and_then(|c| side_of(c, source));
            let after_npu = in_alternative
                && earlier
                    .iter()
                    .flatten()
                    .any(|c| side_of(*c, source) == Some(Side::Npu));
            let after_other = in_alternative
                && own.is_none()
                && earlier
                    .iter()
                    .flatten()
                    .any(|c| side_of(*c, source) == Some(Side::Other));
            if own_side == Some(Side::Other) || (after_npu && own_side != Some(Side::Npu)) {
                return true;
            }
            if after_other || own_side == Some(Side::Npu) {
                return false;
            }
        }
        child = parent;
    }
    false
}

/// Whether a profile call's `activities` list `ProfilerActivity.CUDA` (it profiles a GPU).
pub(crate) fn lists_cuda<'t>(ctx: &FileContext<'t, '_>, call: Node<'t>) -> bool {
    let Some(activities) =
        kwarg(call, "activities", ctx.source).or_else(|| positional(call).first().copied())
    else {
        return false;
    };
    let (value, _) = ctx.semantic.expression(activities, None);
    text(value, ctx.source).contains("ProfilerActivity.CUDA")
}
