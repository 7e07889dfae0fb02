//! npuprof-syntax: small helpers over tree-sitter syntax trees (mostly Python's), shared by npuprof's
//! readers (lint) and refactors (patch, inject). Pure functions of a tree and its source text.
//!
//! - [`parse`]: parsing and locating syntax errors;
//! - [`tree`]: text, children, traversal and positions of any node;
//! - [`call`]: dotted names, callees and the arguments of calls;
//! - [`semantic`]: the Python semantic layer — one [`SemanticModel`] per file (bindings,
//!   scopes, call sites, imports, options) and the one value resolver (names, constants,
//!   parameters through their calls, branches, enum members, dicts, joined paths, f-strings).
//!
//! Every helper takes `(node, source)` in that order. The [`tree`] helpers and
//! [`first_error`] do not depend on the grammar (patch and target also use them on YAML trees).

pub mod call;
#[cfg(test)]
mod fixtures;
pub mod parse;
pub mod semantic;
pub mod tree;

pub use call::{arguments, callee, dotted, has_splat, kwarg, positional};
pub use parse::{ParseError, first_error, parse, parse_with};
pub use semantic::SemanticModel;
pub use tree::{
    all_children, children, descendants, descendants_in_scope, is_definition, line, named_children,
    scope_of, text,
};
