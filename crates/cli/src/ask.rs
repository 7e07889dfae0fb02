//! Asking first, on a terminal: the collection guide asks the user which phase and how many
//! decode steps before anything changes. Never asked when not on a terminal, with `--json`,
//! `--yes` or `CI` set; the equivalent full command is printed after the answers.

use std::io::{IsTerminal as _, Write as _};

use anyhow::{Context as _, bail};
use npuprof_repository::Target;
use npuprof_repository::python::Phase;

use crate::args::{DEFAULT_DECODE_ACTIVE, PhaseArg, WindowArgs};

/// Whether to ask for the window's missing parts.
pub fn should_ask(window: &WindowArgs, json: bool) -> bool {
    window.undecided()
        && !window.yes
        && !json
        && std::env::var_os("CI").is_none()
        && std::io::stdin().is_terminal()
        && std::io::stderr().is_terminal()
}

/// Asks for what `window` lacks, fills it in, and prints the equivalent full command.
pub fn ask_window(window: &mut WindowArgs, target: &Target) -> anyhow::Result<()> {
    let mut input = std::io::stdin().lock();
    let mut err = std::io::stderr().lock();
    if window.phase.is_none() {
        let answer = question(
            &mut input,
            &mut err,
            "Which phase to profile? [1] both (default)  [2] decode  [3] prefill: ",
        )?;
        window.phase = Some(match answer.as_str() {
            "" | "1" | "both" => PhaseArg::Both,
            "2" | "decode" => PhaseArg::Decode,
            "3" | "prefill" => PhaseArg::Prefill,
            other => bail!("unknown phase `{other}`: answer 1, 2 or 3"),
        });
    }
    if window.phase != Some(PhaseArg::Prefill) && window.decode_active.is_none() {
        let whole = target
            .profiled()
            .and_then(|p| p.whole_run_decode_active(window.decode_skip_first));
        let whole_text = whole.map_or_else(|| "n/a".to_owned(), |n| n.to_string());
        let answer = question(
            &mut input,
            &mut err,
            &format!(
                "How many decode steps to record? [1] 3  [2] 10 (default; ≥ 10 covers steady state)  [3] 30  [4] the whole run ({whole_text})  [5] custom: "
            ),
        )?;
        let steps = match answer.as_str() {
            "" | "2" => DEFAULT_DECODE_ACTIVE,
            "1" => 3,
            "3" => 30,
            "4" => whole.context("the run config's budget leaves no decode step to record")?,
            "5" => question(&mut input, &mut err, "Decode steps: ")?
                .parse()
                .context("expected a number of steps")?,
            other => other
                .parse()
                .with_context(|| format!("unknown answer `{other}`: answer 1 to 5"))?,
        };
        window.decode_active = Some(steps);
    }
    window.window()?;
    writeln!(err, "npuprof: equivalent command: {}", equivalent(window))?;
    Ok(())
}

fn question(
    input: &mut impl std::io::BufRead,
    err: &mut impl std::io::Write,
    prompt: &str,
) -> anyhow::Result<String> {
    write!(err, "{prompt}")?;
    err.flush()?;
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 {
        bail!("no answer (end of input); pass --phase and --decode-active, or --yes");
    }
    Ok(line.trim().to_owned())
}

/// This invocation with the answers as flags.
fn equivalent(window: &WindowArgs) -> String {
    let mut argv: Vec<String> = std::env::args().collect();
    if let Some(first) = argv.first_mut() {
        "npuprof".clone_into(first);
    }
    let phase = window.phases().name();
    if !argv
        .iter()
        .any(|a| a == "--phase" || a.starts_with("--phase="))
    {
        argv.extend(["--phase".to_owned(), phase.to_owned()]);
    }
    if window.phases().includes(Phase::Decode)
        && !argv
            .iter()
            .any(|a| a == "--decode-active" || a.starts_with("--decode-active="))
    {
        argv.extend([
            "--decode-active".to_owned(),
            window.decode_active().to_string(),
        ]);
    }
    npuprof_repository::shell::join(&argv)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_read_per_question_and_end_of_input_is_an_error() {
        let mut err = Vec::new();
        let mut input = std::io::Cursor::new(b"2\n".to_vec());
        assert_eq!(question(&mut input, &mut err, "? ").unwrap(), "2");
        assert!(question(&mut input, &mut err, "? ").is_err());
        assert_eq!(String::from_utf8(err).unwrap(), "? ? ");
    }
}
