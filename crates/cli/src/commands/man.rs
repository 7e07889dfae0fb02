//! `npuprof man [COMMAND]`: the manual page `npuprof(1)`, or `npuprof-COMMAND(1)`, as roff on
//! stdout (clap_mangen for the sections it knows, the examples as an EXAMPLES section).

use std::io::{self, Write as _};

use crate::examples::{Example, examples};
use crate::exit::Exit;
use crate::failure::{ErrorCode, Failure};
use crate::output;

/// Arguments of `npuprof man`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A command whose own page (`npuprof-COMMAND(1)`) to print instead of `npuprof(1)`.
    #[arg(value_name = "COMMAND")]
    pub command: Option<String>,
}

/// Runs `npuprof man`.
pub fn run(args: Args) -> anyhow::Result<Exit> {
    // The `help` subcommand has no page of its own.
    let mut root = crate::cli().disable_help_subcommand(true);
    root.build();
    let page = match &args.command {
        None => render(&root, examples(None))?,
        Some(name) => {
            let sub = root
                .find_subcommand(name)
                .ok_or_else(|| unknown_command(&root, name))?;
            render(sub, examples(Some(name)))?
        }
    };
    output::stdout().write_all(&page)?;
    Ok(Exit::Ok)
}

fn unknown_command(root: &clap::Command, name: &str) -> Failure {
    let names: Vec<&str> = root
        .get_subcommands()
        .map(clap::Command::get_name)
        .collect();
    Failure::new(ErrorCode::Usage, format!("no command `{name}`"))
        .with_hint(format!("one of: {}", names.join(", ")))
}

/// The page of `command`: clap_mangen's sections, then EXAMPLES, then VERSION.
fn render(command: &clap::Command, examples: &[Example]) -> io::Result<Vec<u8>> {
    let source = format!("npuprof {}", env!("CARGO_PKG_VERSION"));
    let man = clap_mangen::Man::new(command.clone()).source(source);
    let mut page = Vec::new();
    man.render_title(&mut page)?;
    man.render_name_section(&mut page)?;
    man.render_synopsis_section(&mut page)?;
    man.render_description_section(&mut page)?;
    if command.get_arguments().any(|arg| !arg.is_hide_set()) {
        man.render_options_section(&mut page)?;
    }
    if command.has_subcommands() {
        man.render_subcommands_section(&mut page)?;
    }
    page.extend_from_slice(examples_section(examples).as_bytes());
    if command.get_version().is_some() {
        man.render_version_section(&mut page)?;
    }
    Ok(page)
}

/// `.SH EXAMPLES`: each example's description, then its command as an indented literal line.
fn examples_section(examples: &[Example]) -> String {
    let mut roff = String::from(".SH EXAMPLES\n");
    for example in examples {
        roff.push_str(&format!(
            ".PP\n{}\n.RS 4\n.nf\n{}\n.fi\n.RE\n",
            escape(example.what),
            escape(example.command).replace('-', "\\-")
        ));
    }
    roff
}

/// Text safe on a roff text line: backslashes escaped, no leading control character.
fn escape(text: &str) -> String {
    let text = text.replace('\\', "\\e");
    if text.starts_with(['.', '\'']) {
        format!("\\&{text}")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::{escape, examples_section};
    use crate::examples::Example;

    #[test]
    fn examples_are_literal_lines_with_real_minus_signs() {
        let section = examples_section(&[Example {
            what: ".hidden \\ text",
            command: "npuprof route --json",
        }]);
        assert_eq!(
            section,
            ".SH EXAMPLES\n.PP\n\\&.hidden \\e text\n.RS 4\n.nf\nnpuprof route \\-\\-json\n.fi\n.RE\n"
        );
        assert_eq!(escape("plain"), "plain");
    }
}
