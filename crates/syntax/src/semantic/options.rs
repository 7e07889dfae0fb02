//! Command-line options a script declares: `parser.add_argument("--flag", dest=…,
//! default=…, required=…)`, as argparse reads them (the first long flag names the option; the
//! destination is `dest`, else the flag without dashes, `-` as `_`).

use tree_sitter::Node;

use super::literal::string_literal;
use crate::call::{kwarg, positional};
use crate::tree::text;

/// One `add_argument(...)` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliOption<'t> {
    /// The call.
    pub call: Node<'t>,
    /// The attribute of the parsed namespace it sets.
    pub dest: String,
    /// The flag that names it (the first `--` flag, else the first one).
    pub flag: String,
    /// Its `default=` value.
    pub default: Option<Node<'t>>,
    /// `required=True`.
    pub required: bool,
}

impl<'t> CliOption<'t> {
    /// Reads an `add_argument(...)` call (`None` when it names no flag).
    pub fn read(call: Node<'t>, source: &str) -> Option<Self> {
        let flags: Vec<String> = positional(call)
            .into_iter()
            .filter_map(|a| string_literal(a, source))
            .collect();
        let flag = flags
            .iter()
            .find(|f| f.starts_with("--"))
            .or(flags.first())
            .cloned()?;
        let dest = kwarg(call, "dest", source)
            .and_then(|d| string_literal(d, source))
            .unwrap_or_else(|| flag.trim_start_matches('-').replace('-', "_"));
        Some(Self {
            call,
            dest,
            flag,
            default: kwarg(call, "default", source),
            required: kwarg(call, "required", source).is_some_and(|r| text(r, source) == "True"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::tree;

    /// `(dest, flag, default, required)`.
    type Read = (String, String, Option<String>, bool);

    #[test]
    fn flags_destinations_and_defaults() {
        let source = "p.add_argument('-n', '--prompt-len', type=int, default=16)\np.add_argument('--x', dest='why', required=True)\np.add_argument(name)\n";
        let parsed = tree(source);
        let read: Vec<Option<Read>> = crate::descendants_in_scope(parsed.root_node())
            .into_iter()
            .filter(|n| n.kind() == "call")
            .map(|c| {
                CliOption::read(c, source).map(|o| {
                    (
                        o.dest,
                        o.flag,
                        o.default.map(|d| text(d, source).to_owned()),
                        o.required,
                    )
                })
            })
            .collect();
        assert_eq!(
            read,
            [
                Some((
                    "prompt_len".into(),
                    "--prompt-len".into(),
                    Some("16".into()),
                    false
                )),
                Some(("why".into(), "--x".into(), None, true)),
                None,
            ]
        );
    }
}
