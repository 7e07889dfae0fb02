//! `npuprof route --model M [--yaml F]`: the model's resolved profiling target, each part with
//! its file:line, and the next command. Without `--yaml`, one line per run config of the model.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use npuprof_repository::python::{Site, ValueSource, WindowField};
use npuprof_repository::{ConfigEntry, How, ModelConfigs, Target, config::dotted};
use serde::Serialize;

use crate::args::TargetArgs;
use crate::exit::Exit;
use crate::output::print_json;

/// Version of `route --model --json`.
pub const SCHEMA_VERSION: u32 = 1;

/// `route --model M --yaml F --json`.
#[derive(Debug, Serialize)]
struct TargetReport<'t> {
    schema_version: u32,
    target: &'t Target,
    next: Option<String>,
}

/// One run config of a model, for `route --model M --json`.
#[derive(Debug, Default, Serialize)]
struct ConfigLine {
    yaml: String,
    family: Option<npuprof_repository::Family>,
    switch: Option<bool>,
    max_new_tokens: Option<u64>,
    decode_forwards: Option<u64>,
    rule: Option<String>,
    error: Option<String>,
}

/// Runs the target form of `npuprof route`.
pub fn run(args: &TargetArgs, repo: &Path, model: &str, json: bool) -> anyhow::Result<Exit> {
    if args.yaml.is_none() {
        return list_configs(repo, model, json);
    }
    let target = args.resolve()?;
    let next = next_command(&target);
    if json {
        print_json(&TargetReport {
            schema_version: SCHEMA_VERSION,
            target: &target,
            next,
        })?;
    } else {
        crate::output::stdout().write_all(human(&target, next.as_deref()).as_bytes())?;
    }
    Ok(Exit::Ok)
}

fn next_command(target: &Target) -> Option<String> {
    match &target.how {
        How::Settable(p) if p.never_recorded.len() < 2 => Some(format!(
            "npuprof patch --model {} --yaml {} --dry-run",
            target.model, target.yaml
        )),
        _ => None,
    }
}

fn list_configs(repo: &Path, model: &str, json: bool) -> anyhow::Result<Exit> {
    let entries = match npuprof_repository::model_configs(repo, model) {
        Ok(ModelConfigs::Configs(entries)) => entries,
        Ok(ModelConfigs::Manual {
            manual: m,
            launch,
            results,
            evidence,
        }) => {
            // A standalone recipe without run configs: its real toggle, launch and results path,
            // as the definitions say, with the lines of its files that show them.
            if json {
                print_json(&serde_json::json!({
                    "schema_version": npuprof_route::MODEL_SCHEMA_VERSION,
                    "model": model,
                    "family": m.family,
                    "toggle": m.toggle,
                    "instruction": m.instruction,
                    "launch": launch,
                    "results": results,
                    "evidence": evidence,
                    "notes": m.notes,
                    "configs": [],
                    "next": {
                        "command": null,
                        "argv": null,
                        "note": format!("profile it by hand: {}", m.instruction),
                    },
                }))?;
            } else {
                let mut s = format!(
                    "model {model}: no run configs (family {}, profiled by hand)\nprofiling: {} ({})\n",
                    m.family.letter(),
                    m.instruction,
                    m.toggle.name()
                );
                if let Some(l) = &launch {
                    let _ = writeln!(s, "launch:    {}", l.command_line());
                }
                if let Some(r) = &results {
                    let _ = writeln!(s, "results:   {r}");
                }
                for note in &m.notes {
                    let _ = writeln!(s, "note:      {note}");
                }
                for e in &evidence {
                    let _ = writeln!(s, "evidence:  {}:{} {}", e.path, e.line, e.what);
                }
                crate::output::stdout().write_all(s.as_bytes())?;
            }
            return Ok(Exit::Ok);
        }
        Err(e) => return Err(e.into()),
    };
    let mut lines = Vec::new();
    for ConfigEntry { yaml, view } in entries {
        lines.push(match view {
            Ok(v) if v.config.has_switch_section => ConfigLine {
                family: Some(v.shape.family),
                switch: Some(v.config.switch.is_on()),
                max_new_tokens: Some(v.config.effective_budget),
                decode_forwards: Some(v.budget.guaranteed_forwards(v.config.effective_budget)),
                rule: Some(v.budget.describe()),
                error: None,
                yaml,
            },
            Ok(_) => ConfigLine {
                yaml,
                error: Some("no profiler switch (another pipeline)".to_owned()),
                ..ConfigLine::default()
            },
            Err(e) => ConfigLine {
                yaml,
                error: Some(e.to_string()),
                ..ConfigLine::default()
            },
        });
    }
    // The configs as the repository-level route reads them, with its next step: one document
    // shape for `route` and `route --model`.
    let route = npuprof_route::model_route(repo, model)?;
    if json {
        print_json(&route)?;
        return Ok(Exit::Ok);
    }
    let mut s = String::new();
    let _ = writeln!(s, "model {model}: {} run config(s)", lines.len());
    for l in &lines {
        match &l.error {
            Some(e) => {
                let _ = writeln!(s, "  {}: {e}", l.yaml);
            }
            None => {
                let _ = writeln!(
                    s,
                    "  {}: family {}, profiler {}, max_new_tokens {} -> {} decode forwards",
                    l.yaml,
                    l.family.map_or('?', npuprof_repository::Family::letter),
                    if l.switch == Some(true) { "on" } else { "off" },
                    l.max_new_tokens.unwrap_or(0),
                    l.decode_forwards.unwrap_or(0),
                );
            }
        }
    }
    match &route.next.command {
        Some(command) => {
            let _ = writeln!(s, "next: {command}\n      {}", route.next.note);
        }
        None => {
            let _ = writeln!(s, "next: {}", route.next.note);
        }
    }
    crate::output::stdout().write_all(s.as_bytes())?;
    Ok(Exit::Ok)
}

fn source(site: &Site, field: WindowField, factory: &str, factory_path: &str) -> String {
    let value = |s: &ValueSource| {
        s.value(field)
            .map_or_else(|| "?".to_owned(), |v| v.to_string())
    };
    let src = site.source(field);
    let place = match src {
        ValueSource::Argument { span } => format!("passed at the call, line {}", span.line),
        ValueSource::ClassConstant { name, span } => {
            format!("class constant {name}, line {}", span.line)
        }
        ValueSource::Default { span } => {
            format!("{factory} default, {factory_path}:{}", span.line)
        }
        ValueSource::Fixed { span } => format!("fixed in {factory}, line {}", span.line),
        ValueSource::Unresolved { text } => format!("`{text}`, not evaluated"),
        ValueSource::TorchDefault => "torch_npu's default".to_owned(),
    };
    format!("{}={} ({place})", field.name(), value(src))
}

fn human(target: &Target, next: Option<&str>) -> String {
    let mut s = String::new();
    let family = match target.family {
        npuprof_repository::Family::SharedEngine => "A, the shared engine's profiler manager",
        npuprof_repository::Family::LegacyRunner => {
            "B, the legacy runner's factory in the model's loop"
        }
        npuprof_repository::Family::Multimedia => "C, a multimedia pipeline",
        npuprof_repository::Family::Standalone => "D, a standalone recipe",
    };
    let _ = writeln!(
        s,
        "model {} with {}: family {family}",
        target.model, target.config_path
    );
    let _ = writeln!(s, "launch:  {}", target.launch.command_line());
    match &target.how {
        How::Manual(m) => {
            let _ = writeln!(
                s,
                "profile: by hand ({}): {}",
                m.toggle.name(),
                m.instruction
            );
        }
        How::Settable(p) => {
            let keys = &p.shape.config;
            let _ = writeln!(
                s,
                "switch:  {} = {}",
                dotted(&keys.switch),
                match p.config.switch {
                    npuprof_repository::config::Switch::Missing => "absent".to_owned(),
                    npuprof_repository::config::Switch::Bool(b) =>
                        if b { "True" } else { "False" }.to_owned(),
                    npuprof_repository::config::Switch::Other { truthy } => format!(
                        "not a boolean (Python reads it as {})",
                        if truthy { "on" } else { "off" }
                    ),
                }
            );
            let _ = writeln!(
                s,
                "budget:  {} = {}{} -> {} decode forwards ({})",
                dotted(&keys.budget),
                p.config.effective_budget,
                if p.config.budget.is_none() {
                    " (absent: the default)"
                } else {
                    ""
                },
                p.budget.guaranteed_forwards(p.config.effective_budget),
                p.budget.describe()
            );
            let factory = match &p.factory.class {
                Some(c) => format!("{c}.{}", p.factory.name),
                None => p.factory.name.clone(),
            };
            let _ = writeln!(
                s,
                "factory: {factory} ({}:{})",
                p.factory_path, p.factory.line
            );
            for phase in &p.phases {
                let fields: Vec<String> = [
                    WindowField::Active,
                    WindowField::SkipFirst,
                    WindowField::Repeat,
                ]
                .into_iter()
                .map(|f| source(&phase.site, f, &factory, &p.factory_path))
                .collect();
                let _ = writeln!(
                    s,
                    "{:8} {}:{} in {}: {}",
                    format!("{}:", phase.phase.name()),
                    phase.path,
                    phase.site.call.line,
                    phase.site.function,
                    fields.join(", ")
                );
            }
            let shared = p.phases.iter().find_map(|ph| ph.site.selector.as_ref());
            let off = match p.shape.phase_off {
                npuprof_repository::PhaseOff::ReplaceCallWithDisabled if shared.is_some() => {
                    format!(
                        "one call serves every phase: a guard on {} before it keeps {}() for that phase",
                        shared.map_or("the phase", |s| s.parameter.as_str()),
                        p.factory
                            .disabled
                            .as_deref()
                            .unwrap_or("a disabled stand-in")
                    )
                }
                npuprof_repository::PhaseOff::ReplaceCallWithDisabled => format!(
                    "the phase's call becomes {}()",
                    p.factory
                        .disabled
                        .as_deref()
                        .unwrap_or("a disabled stand-in")
                ),
                npuprof_repository::PhaseOff::DisableArgument => format!(
                    "the phase's call gets {}=False",
                    p.factory.enable_parameter.as_deref().unwrap_or("enable")
                ),
            };
            let _ = writeln!(s, "off:     {off}");
            for n in &p.never_recorded {
                let _ = writeln!(s, "never:   {}: {}", n.phase.name(), n.why);
            }
        }
    }
    let manual_results = match &target.how {
        How::Manual(m) => Some(
            m.results
                .as_deref()
                .unwrap_or("not known (no profiler writes)"),
        ),
        How::Settable(_) => None,
    };
    let phases: Vec<&str> = target
        .results
        .phases
        .iter()
        .map(|(_, p)| p.as_str())
        .collect();
    if let Some(r) = manual_results {
        let _ = writeln!(s, "results: {r}");
    } else {
        let _ = writeln!(
            s,
            "results: {}/<YYYYMMDD>/{}{}{}",
            target.results.res_dir,
            target.results.case,
            target
                .results
                .role_prefix
                .as_ref()
                .map_or_else(String::new, |r| format!("/{r}<i>")),
            if phases.is_empty() {
                String::new()
            } else {
                format!("/{{{}}}", phases.join(", "))
            }
        );
    }
    for note in &target.notes {
        let _ = writeln!(s, "note:    {note}");
    }
    let _ = writeln!(s, "evidence:");
    for e in &target.evidence {
        let _ = writeln!(s, "  {}:{} {}", e.path, e.line, e.what);
    }
    match next {
        Some(n) => {
            let _ = writeln!(s, "next:    {n}");
        }
        None => {
            let _ = writeln!(s, "next:    nothing npuprof can patch for this config");
        }
    }
    s
}
