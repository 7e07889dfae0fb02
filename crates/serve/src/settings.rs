//! What a serving engine's profiling is, as a value: how it is switched on, what it hard-codes,
//! its HTTP routes, who parses, and how its output is named. The facts are the engine's
//! definition (`npuprof_repository::engine`, any `serving-engine` definition in the catalog); the
//! loop takes them from [`for_engine`].

use std::path::Path;

use serde::{Serialize, Serializer};

use npuprof_repository::engine::{CommandOption, EngineDefinition};
pub use npuprof_repository::engine::{ConfigStyle, ParseMode, ServeSettings};

/// A serving engine collect drives: one `serving-engine` definition of the catalog (compiled in
/// or from `NPUPROF_DEFINITIONS`). It serialises as its id.
#[derive(Debug, Clone, Copy)]
pub struct Engine(&'static EngineDefinition);

impl Engine {
    /// The engine whose definition in use has this id.
    pub fn by_id(id: &str) -> Option<Engine> {
        EngineDefinition::by_id(id).map(Engine)
    }

    /// Its name on the command line and in reports: its definition's id.
    pub fn name(self) -> &'static str {
        &self.0.id
    }

    /// Its definition.
    pub fn definition(self) -> &'static EngineDefinition {
        self.0
    }
}

impl PartialEq for Engine {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Engine {}

impl Serialize for Engine {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// Stands for the profile directory in [`ServeSettings::env`] and `extra_args`.
pub const DIR: &str = "{dir}";

/// The environment for the server process, the profile directory filled in.
pub fn env_for(settings: &ServeSettings, dir: &Path) -> Vec<(String, String)> {
    settings
        .env
        .iter()
        .map(|(k, v)| (k.clone(), fill(v, dir)))
        .collect()
}

/// The arguments appended to the user's command, the profile directory filled in.
pub fn args_for(settings: &ServeSettings, dir: &Path) -> Vec<String> {
    settings.extra_args.iter().map(|a| fill(a, dir)).collect()
}

/// The names the settings set (environment variables) or pass (options; a dotted key
/// `--opt.key=value` counts as `--opt`), to refuse a command or environment that sets them
/// already.
pub fn switches(settings: &ServeSettings) -> Vec<&str> {
    if settings.start_body.is_some() {
        // The start request's body names the directory and switches: the environment only
        // gives defaults it overrides, and the routes are always there.
        return Vec::new();
    }
    let options = settings
        .extra_args
        .iter()
        .filter(|a| a.starts_with("--"))
        .map(|a| a.split(['=', '.']).next().unwrap_or(a));
    let mut names: Vec<&str> = settings
        .env
        .iter()
        .map(|(k, _)| k.as_str())
        .chain(options)
        .collect();
    names.dedup();
    names
}

fn fill(text: &str, dir: &Path) -> String {
    text.replace(DIR, &dir.to_string_lossy())
}

/// The settings of `engine` in the newest version of `style` its definition knows, with
/// [`DIR`] for the profile directory and call stacks off. One rank: a loop with several
/// judges their daemon workers itself.
pub fn for_engine(engine: Engine, style: ConfigStyle) -> ServeSettings {
    engine
        .definition()
        .settings(style, Path::new(DIR), 1, false)
        .unwrap_or_else(|_| unreachable!("the placeholder directory is UTF-8"))
}

/// The settings of the version of `engine` whose source is under `root` (a checkout or a
/// site-packages directory): its config style, level, metrics and asynchronous parse as `route`
/// reads them, with [`DIR`] for the profile directory and call stacks off. An error says why
/// the source proves no version.
pub fn from_source(engine: Engine, root: &Path) -> Result<ServeSettings, String> {
    let definition = engine.definition();
    let detected = npuprof_repository::engine::detect_with(definition, root).ok_or_else(|| {
        format!(
            "no {} package under {} (give its checkout or the site-packages directory that holds it)",
            definition.id,
            root.display()
        )
    })?;
    if let Some(mismatch) = detected.host_mismatch(definition) {
        return Err(mismatch);
    }
    let facts = detected.facts(definition).ok_or_else(|| {
        format!(
            "the {} source under {} shows no config style (no style's evidence is in its profiler files): pass --config-style",
            definition.id,
            root.display()
        )
    })?;
    definition
        .settings_for(&facts, Path::new(DIR), 1, false)
        .map_err(|e| e.to_string())
}

/// Where the settings' version facts came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "from", content = "path")]
pub enum StyleFrom {
    /// `--config-style`.
    Option,
    /// `--engine-source DIR`.
    EngineSource(std::path::PathBuf),
    /// The engine's package as the command's own Python finds it (the directory holding it).
    CommandPython(std::path::PathBuf),
    /// Nothing told: the newest style of the definition is assumed.
    Assumed,
}

/// The interpreter the command `argv` runs: its first word when that is a Python, else the
/// `#!` line of the script it names (found on `PATH` when it has no `/`).
pub fn command_python(argv: &[String]) -> Option<std::path::PathBuf> {
    let first = argv.first()?;
    let is_python = |word: &str| {
        Path::new(word)
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("python"))
    };
    if is_python(first) {
        return Some(first.into());
    }
    let script = if first.contains('/') {
        std::path::PathBuf::from(first)
    } else {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|dir| dir.join(first))
            .find(|p| p.is_file())?
    };
    let mut head = [0u8; 256];
    let read = {
        use std::io::Read as _;
        std::fs::File::open(&script).ok()?.read(&mut head).ok()?
    };
    let line = String::from_utf8_lossy(&head[..read]);
    let line = line.lines().next()?.strip_prefix("#!")?.trim();
    let mut words = line.split_whitespace();
    let program = words.next()?;
    let program = if program.ends_with("/env") {
        words.find(|w| !w.starts_with('-'))?
    } else {
        program
    };
    is_python(program).then(|| program.into())
}

/// The directory holding the engine's package as `python` (with `env` added) finds it, without
/// importing it (`importlib.util.find_spec`).
pub fn package_root(
    engine: Engine,
    python: &Path,
    env: &[(String, String)],
) -> Option<std::path::PathBuf> {
    const FIND: &str = "import importlib.util, sys\n\
        s = importlib.util.find_spec(sys.argv[1])\n\
        print(list(s.submodule_search_locations)[0] if s and s.submodule_search_locations else '')";
    let module = &engine.definition().detect.package_dir;
    let output = std::process::Command::new(python)
        .args(["-c", FIND, module])
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let package = Path::new(text.trim());
    (output.status.success() && package.is_dir())
        .then(|| package.parent().map(Path::to_path_buf))
        .flatten()
}

/// What collect reads from the user's serving command: the served model, where it listens,
/// and how many ranks (run directories per stop) it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandFacts {
    /// The model name requests use (the model-name option, else the model argument).
    pub model: Option<String>,
    /// The host it binds (a wildcard address is reached on the loopback).
    pub host: String,
    /// The port (the definition's default when none is given).
    pub port: u16,
    /// Tensor × pipeline parallel size.
    pub ranks: usize,
    /// The option that makes the server one node of a prefill/decode pair, when given.
    pub pd_option: Option<String>,
}

/// Reads `argv` (`<program> <subcommand> MODEL [options]`) as `engine`'s command line does,
/// by its definition's `command`, with its defaults (the default port, one rank). An option's
/// value that is not a number is refused.
pub fn read_command(engine: Engine, argv: &[String]) -> Result<CommandFacts, String> {
    let command = &engine.definition().command;
    let mut facts = CommandFacts {
        model: None,
        host: "127.0.0.1".to_owned(),
        port: command.default_port,
        ranks: 1,
        pd_option: None,
    };
    let pd = engine.definition().pd.as_ref();
    let pd_options = pd.map_or(&[][..], |pd| pd.options.as_slice());
    let pd_whole = pd.map_or(&[][..], |pd| pd.whole.as_slice());
    // The model option's value, when the served name does not override it.
    let mut model_path = None;
    let (mut tp, mut pp) = (1usize, 1usize);
    let serve = argv.iter().position(|a| *a == command.subcommand);
    if let Some(model) = serve
        .and_then(|i| argv.get(i + 1))
        .filter(|a| !a.starts_with('-') && command.model.is_empty())
    {
        facts.model = Some(model.clone());
    }
    let mut words = argv.iter().skip(serve.map_or(0, |i| i + 1));
    while let Some(word) = words.next() {
        let (name, inline) = match word.split_once('=') {
            Some((name, value)) => (name, Some(value.to_owned())),
            None => (word.as_str(), None),
        };
        if pd_options.iter().any(|o| o == name) {
            facts.pd_option = Some(name.to_owned());
            if !pd_whole.is_empty() {
                // An option with values, some of which leave the server whole; the last one
                // given wins, as with argparse.
                let value = inline.clone().or_else(|| words.next().cloned());
                if value.is_some_and(|v| pd_whole.contains(&v)) {
                    facts.pd_option = None;
                }
                continue;
            }
        }
        let Some(option) = command.option(name) else {
            continue;
        };
        let Some(value) = inline.or_else(|| words.next().cloned()) else {
            return Err(format!("{name} has no value"));
        };
        let number = || {
            value
                .parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("{name} {value:?} is not a positive number"))
        };
        match option {
            CommandOption::Host => {
                facts.host = match value.as_str() {
                    "0.0.0.0" | "" => "127.0.0.1".to_owned(),
                    "::" => "::1".to_owned(),
                    _ => value.clone(),
                }
            }
            CommandOption::Port => {
                facts.port = u16::try_from(number()?)
                    .map_err(|_| format!("{name} {value} is out of range"))?;
            }
            CommandOption::ModelName => facts.model = Some(value.clone()),
            CommandOption::Model => model_path = Some(value.clone()),
            CommandOption::TensorParallel => tp = number()?,
            CommandOption::PipelineParallel => pp = number()?,
        }
    }
    facts.ranks = tp.saturating_mul(pp);
    if facts.model.is_none() {
        facts.model = model_path;
    }
    Ok(facts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vllm_ascend() -> Engine {
        Engine(EngineDefinition::vllm_ascend())
    }

    #[test]
    fn the_profile_directory_is_filled_in_for_both_styles() {
        let dir = Path::new("/p/a \"b\"\\c");
        let env = env_for(&for_engine(vllm_ascend(), ConfigStyle::Env), dir);
        assert!(
            env.iter().any(|(_, v)| v == &dir.display().to_string()),
            "{env:?}"
        );
        let config = for_engine(vllm_ascend(), ConfigStyle::ProfilerConfig);
        let args = args_for(&config, dir);
        assert!(
            args.iter()
                .any(|a| a.ends_with(&format!("={}", dir.display()))),
            "{args:?}"
        );
        assert!(
            args.iter().any(|a| a.ends_with("=false")),
            "stacks off: {args:?}"
        );
    }

    #[test]
    fn an_engine_is_found_by_its_definition_id() {
        let engine = Engine::by_id(&EngineDefinition::vllm_ascend().id).expect("compiled in");
        assert_eq!(engine.definition().id, engine.name());
        assert_eq!(engine, vllm_ascend());
        assert!(Engine::by_id("no-such-engine").is_none());
        assert_eq!(
            serde_json::to_string(&engine).unwrap(),
            format!("\"{}\"", engine.name())
        );
    }

    #[test]
    fn the_command_is_read_by_the_definition_s_option_names() {
        let fork = npuprof_repository::catalog::BUILTIN[1]
            .1
            .replace("id: vllm-ascend", "id: fork")
            .replace("port: [--port]", "port: [--listen-port]")
            .replace("subcommand: serve", "subcommand: launch")
            .replace("[vllm, serve, MODEL]", "[fork, launch, MODEL]")
            .replace("[--tensor-parallel-size, -tp]", "[--tp-size]");
        let catalog = npuprof_repository::Catalog::load([("fork.yaml", fork.as_str())]).unwrap();
        let engine = Engine(Box::leak(Box::new(catalog.engines()[0].clone())));
        let argv: Vec<String> = "fork launch m2 --port 1 --listen-port 9001 --tp-size 3 -tp 5"
            .split(' ')
            .map(str::to_owned)
            .collect();
        let facts = read_command(engine, &argv).expect("reads");
        assert_eq!(facts.model.as_deref(), Some("m2"));
        assert_eq!((facts.port, facts.ranks), (9001, 3));
        let default = read_command(engine, &["fork".to_owned()]).expect("reads");
        assert_eq!(
            (default.port, default.ranks, default.model),
            (8000, 1, None)
        );
    }

    #[test]
    fn the_command_gives_model_address_and_ranks() {
        let argv: Vec<String> =
            "vllm serve Qwen/Q --port=8123 -tp 2 --pipeline-parallel-size 2 --host 0.0.0.0"
                .split(' ')
                .map(str::to_owned)
                .collect();
        let facts = read_command(vllm_ascend(), &argv).expect("reads");
        assert_eq!(facts.model.as_deref(), Some("Qwen/Q"));
        assert_eq!(
            (facts.host.as_str(), facts.port, facts.ranks),
            ("127.0.0.1", 8123, 4)
        );
        let bad: Vec<String> = ["vllm", "serve", "m", "-tp", "x"]
            .map(str::to_owned)
            .to_vec();
        assert!(read_command(vllm_ascend(), &bad).is_err());
    }

    #[test]
    fn a_launch_module_command_gives_the_model_option_and_a_pd_node() {
        let sglang = Engine::by_id("sglang").expect("compiled in");
        let argv: Vec<String> = "python -m sglang.launch_server --model-path /m/Q --tp-size 4 --disaggregation-mode decode"
            .split(' ')
            .map(str::to_owned)
            .collect();
        let facts = read_command(sglang, &argv).expect("reads");
        assert_eq!(facts.model.as_deref(), Some("/m/Q"));
        assert_eq!((facts.port, facts.ranks), (30000, 4));
        assert_eq!(facts.pd_option.as_deref(), Some("--disaggregation-mode"));
        // "null", SGLang's default, is a whole server; the last value given wins.
        let pd_of = |tail: &str| {
            let argv: Vec<String> = format!("python -m sglang.launch_server --model-path m {tail}")
                .split(' ')
                .map(str::to_owned)
                .collect();
            read_command(sglang, &argv).expect("reads").pd_option
        };
        assert_eq!(pd_of("--disaggregation-mode null --tp-size 2"), None);
        assert_eq!(pd_of("--disaggregation-mode=null"), None);
        assert_eq!(
            pd_of("--disaggregation-mode=prefill").as_deref(),
            Some("--disaggregation-mode")
        );
        assert_eq!(
            pd_of("--disaggregation-mode decode --disaggregation-mode null"),
            None
        );
        assert_eq!(
            pd_of("--disaggregation-mode null --disaggregation-mode decode").as_deref(),
            Some("--disaggregation-mode")
        );
        let named = [argv, vec!["--served-model-name".to_owned(), "q".to_owned()]].concat();
        assert_eq!(
            read_command(sglang, &named).unwrap().model.as_deref(),
            Some("q")
        );
        // Its start request names the directory: nothing in the environment is refused.
        assert!(switches(&for_engine(sglang, ConfigStyle::Request)).is_empty());
    }

    #[test]
    fn the_command_s_python_is_its_first_word_or_its_script_s_interpreter() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("serve");
        std::fs::write(&script, "#!/usr/bin/env -S python3 -u\nprint(1)\n").unwrap();
        let argv = |first: &str| vec![first.to_owned(), "serve".to_owned()];
        assert_eq!(
            command_python(&argv("python3.11")),
            Some("python3.11".into())
        );
        assert_eq!(
            command_python(&argv(script.to_str().unwrap())),
            Some("python3".into())
        );
        std::fs::write(&script, "#!/bin/sh\n").unwrap();
        assert_eq!(command_python(&argv(script.to_str().unwrap())), None);
    }

    #[test]
    fn switches_name_the_variables_and_options() {
        assert_eq!(
            switches(&for_engine(vllm_ascend(), ConfigStyle::Env)),
            ["VLLM_TORCH_PROFILER_DIR", "VLLM_TORCH_PROFILER_WITH_STACK"]
        );
        assert_eq!(
            switches(&for_engine(vllm_ascend(), ConfigStyle::ProfilerConfig)),
            ["--profiler-config"]
        );
    }
}
