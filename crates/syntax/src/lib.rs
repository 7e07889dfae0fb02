//! npuprof-syntax: small helpers over tree-sitter syntax trees (mostly Python's), shared by npuprof's
//! readers (lint) and refactors (patch, inject). Pure functions of a tree and its source text.
//!
//! - [`parse`]: parsing and locating syntax errors;
//! - [`tree`]: text, children, traversal and positions of any node;
//! - [`call`]: dotted names, callees and the arguments of calls;
//! - [`value`]: the values of expressions (enum members, dicts, branches, joined paths).
//!
//! Every helper takes `(node, source)` in that order. The [`tree`] helpers and
//! [`first_error`] do not depend on the grammar (patch and target also use them on YAML trees).

pub mod call;
#[cfg(test)]
mod fixtures;
pub mod parse;
pub mod tree;
pub mod value;

pub use call::{arguments, callee, dotted, kwarg, positional};
pub use parse::{ParseError, first_error, parse, parse_with};
pub use tree::{
    all_children, children, descendants_in_scope, is_definition, line, named_children, text,
};
