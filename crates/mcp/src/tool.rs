//! A tool as the binary describes it (its command's flags, read from the command-line
//! definition), and the two things made from that one description: the tool's JSON Schema and
//! the command line that serves a call.

use serde_json::{Map, Value, json};

/// Whether a tool's command may change files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reads only (the tool is annotated read-only).
    ReadOnly,
    /// May change files (journaled and revertible where it is a repository's).
    Writes,
}

/// One command served as a tool.
#[derive(Debug, Clone)]
pub struct Tool {
    /// The tool's name: the command's (`verify`).
    pub name: String,
    /// What the tool does, for the agent.
    pub description: String,
    /// Whether it may change files.
    pub access: Access,
    /// Whether the command has `--json`: it is then always passed and stdout is the result's
    /// document; otherwise stdout is the result's text.
    pub json: bool,
    /// The arguments, in the order the command line takes them.
    pub params: Vec<Param>,
}

/// One argument of a tool: one flag or positional argument of its command.
#[derive(Debug, Clone)]
pub struct Param {
    /// The property name in the input schema (the flag's long name in snake_case).
    pub name: String,
    /// The flag's help.
    pub help: String,
    /// Its JSON type.
    pub kind: Kind,
    /// Whether it takes several values (an array).
    pub multiple: bool,
    /// Whether the command requires it.
    pub required: bool,
    /// The default the command uses when it is not given, as the command line spells it.
    pub default: Option<String>,
    /// Where it goes on the command line.
    pub place: Place,
}

/// The JSON type of an argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A switch: `true` passes the flag.
    Switch,
    /// A string (a path, a name, a value with its own syntax).
    Text,
    /// A whole number.
    Integer,
    /// One of these values.
    Choice(Vec<String>),
}

/// Where an argument goes on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// `--long=value` (or `--long` for a switch); the flag with its dashes.
    Flag(String),
    /// A positional argument, after `--`.
    Positional,
    /// The arguments after `--` that the command passes on (collect's launch command).
    Trailing,
}

impl Param {
    /// The schema of one value.
    fn value_schema(&self) -> Map<String, Value> {
        let mut schema = Map::new();
        let kind = match &self.kind {
            Kind::Switch => "boolean",
            Kind::Text => "string",
            Kind::Integer => {
                schema.insert("minimum".into(), Value::from(0));
                "integer"
            }
            Kind::Choice(values) => {
                schema.insert("enum".into(), json!(values));
                "string"
            }
        };
        schema.insert("type".into(), Value::from(kind));
        schema
    }

    /// The property's schema: its value's (an array of them when it takes several), its help
    /// and its default.
    fn schema(&self) -> Value {
        let mut object = if self.multiple {
            let mut array = Map::new();
            array.insert("type".into(), Value::from("array"));
            array.insert("items".into(), Value::Object(self.value_schema()));
            array
        } else {
            self.value_schema()
        };
        if !self.help.is_empty() {
            object.insert("description".into(), Value::from(self.help.clone()));
        }
        if let Some(default) = &self.default {
            let value = match self.kind {
                Kind::Integer => default
                    .parse::<u64>()
                    .map_or_else(|_| Value::from(default.clone()), Value::from),
                Kind::Switch => Value::from(default == "true"),
                _ => Value::from(default.clone()),
            };
            object.insert("default".into(), value);
        }
        Value::Object(object)
    }

    /// The command-line words of one JSON value of this argument.
    fn word(&self, value: &Value) -> Result<String, String> {
        let wrong = |expected: &str| {
            Err(format!(
                "argument `{}` must be {expected}, got {value}",
                self.name
            ))
        };
        match (&self.kind, value) {
            (Kind::Integer, Value::Number(n)) if n.is_u64() => Ok(n.to_string()),
            (Kind::Integer, Value::String(s)) if s.parse::<u64>().is_ok() => Ok(s.clone()),
            (Kind::Integer, _) => wrong("a whole number ≥ 0"),
            (Kind::Text, Value::String(s)) => Ok(s.clone()),
            (Kind::Text, Value::Number(n)) => Ok(n.to_string()),
            (Kind::Text, _) => wrong("a string"),
            (Kind::Choice(values), Value::String(s)) if values.contains(s) => Ok(s.clone()),
            (Kind::Choice(values), _) => wrong(&format!("one of {}", values.join(", "))),
            (Kind::Switch, _) => wrong("true or false"),
        }
    }
}

impl Tool {
    /// The tool's input schema: one property per argument, the required ones listed, no others
    /// allowed.
    pub fn input_schema(&self) -> Map<String, Value> {
        let properties: Map<String, Value> = self
            .params
            .iter()
            .map(|param| (param.name.clone(), param.schema()))
            .collect();
        let required: Vec<&str> = self
            .params
            .iter()
            .filter(|param| param.required)
            .map(|param| param.name.as_str())
            .collect();
        let mut schema = Map::new();
        schema.insert("type".into(), Value::from("object"));
        schema.insert("properties".into(), Value::Object(properties));
        if !required.is_empty() {
            schema.insert("required".into(), json!(required));
        }
        schema.insert("additionalProperties".into(), Value::Bool(false));
        schema
    }

    /// The command line (after the program) that serves a call with `arguments`: the command,
    /// its flags as `--flag=value`, `--json` when the command has it, then `--` and the
    /// positional arguments (a command with trailing arguments takes its positional ones
    /// before `--` and the trailing ones after). An argument the schema does not allow is an
    /// error that names it.
    pub fn command_line(&self, arguments: &Map<String, Value>) -> Result<Vec<String>, String> {
        if let Some(unknown) = arguments
            .keys()
            .find(|key| !self.params.iter().any(|param| &param.name == *key))
        {
            let known: Vec<&str> = self.params.iter().map(|p| p.name.as_str()).collect();
            return Err(format!(
                "`{}` has no argument `{unknown}` (its arguments: {})",
                self.name,
                known.join(", ")
            ));
        }
        let mut flags = vec![self.name.clone()];
        let (mut positional, mut trailing) = (Vec::new(), Vec::new());
        for param in &self.params {
            let value = arguments.get(&param.name).filter(|v| !v.is_null());
            let Some(value) = value else {
                if param.required {
                    return Err(format!(
                        "`{}` needs the argument `{}`",
                        self.name, param.name
                    ));
                }
                continue;
            };
            if param.kind == Kind::Switch {
                match (value, &param.place) {
                    (Value::Bool(true), Place::Flag(flag)) => flags.push(flag.clone()),
                    (Value::Bool(_), _) => {}
                    _ => {
                        return Err(format!(
                            "argument `{}` must be true or false, got {value}",
                            param.name
                        ));
                    }
                }
                continue;
            }
            let values = match value {
                Value::Array(items) if param.multiple => items.iter().collect(),
                Value::Array(_) => {
                    return Err(format!("argument `{}` takes one value", param.name));
                }
                one => vec![one],
            };
            for value in values {
                let word = param.word(value)?;
                match &param.place {
                    Place::Flag(flag) => flags.push(format!("{flag}={word}")),
                    Place::Positional => positional.push(word),
                    Place::Trailing => trailing.push(word),
                }
            }
        }
        if self.json {
            flags.push("--json".into());
        }
        let has_trailing = self.params.iter().any(|p| p.place == Place::Trailing);
        if has_trailing {
            if let Some(word) = positional.iter().find(|w| w.starts_with('-')) {
                return Err(format!("`{word}` cannot be given before `--`"));
            }
            flags.extend(positional);
            if !trailing.is_empty() {
                flags.push("--".into());
                flags.extend(trailing);
            }
        } else if !positional.is_empty() {
            flags.push("--".into());
            flags.extend(positional);
        }
        Ok(flags)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param(name: &str, kind: Kind, place: Place) -> Param {
        Param {
            name: name.into(),
            help: String::new(),
            kind,
            multiple: false,
            required: false,
            default: None,
            place,
        }
    }

    /// A `--flag` argument named after its flag.
    fn flag(name: &str, kind: Kind) -> Param {
        param(
            name,
            kind,
            Place::Flag(format!("--{}", name.replace('_', "-"))),
        )
    }

    fn tool(params: Vec<Param>) -> Tool {
        Tool {
            name: "collect".into(),
            description: String::new(),
            access: Access::Writes,
            json: true,
            params,
        }
    }

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn arguments_become_flags_then_the_positional_and_trailing_words() {
        let mut launch = param("launch", Kind::Text, Place::Trailing);
        launch.multiple = true;
        let tool = tool(vec![
            flag("dry_run", Kind::Switch),
            flag("decode_active", Kind::Integer),
            flag("phase", Kind::Choice(vec!["both".into(), "decode".into()])),
            launch,
        ]);
        let line = tool
            .command_line(&args(json!({
                "dry_run": true, "decode_active": 12, "phase": "decode",
                "launch": ["bash", "-c", "--x"]
            })))
            .unwrap();
        assert_eq!(
            line,
            [
                "collect",
                "--dry-run",
                "--decode-active=12",
                "--phase=decode",
                "--json",
                "--",
                "bash",
                "-c",
                "--x"
            ]
        );
        let line = tool
            .command_line(&args(json!({ "dry_run": false })))
            .unwrap();
        assert_eq!(line, ["collect", "--json"]);
    }

    #[test]
    fn a_positional_argument_comes_after_a_double_dash() {
        let mut tool = tool(vec![param("path", Kind::Text, Place::Positional)]);
        tool.name = "verify".into();
        let line = tool.command_line(&args(json!({ "path": "-odd" }))).unwrap();
        assert_eq!(line, ["verify", "--json", "--", "-odd"]);
    }

    #[test]
    fn wrong_arguments_are_named() {
        let mut required = flag("model", Kind::Text);
        required.required = true;
        let tool = tool(vec![
            required,
            flag("decode_active", Kind::Integer),
            flag("phase", Kind::Choice(vec!["decode".into()])),
            flag("dry_run", Kind::Switch),
        ]);
        let error = |value| tool.command_line(&args(value)).unwrap_err();
        assert!(error(json!({ "model": "m", "bogus": 1 })).contains("no argument `bogus`"));
        assert!(error(json!({})).contains("needs the argument `model`"));
        assert!(error(json!({ "model": "m", "decode_active": -1 })).contains("whole number"));
        assert!(error(json!({ "model": "m", "phase": "both" })).contains("one of decode"));
        assert!(error(json!({ "model": "m", "dry_run": "yes" })).contains("true or false"));
        assert!(error(json!({ "model": ["a", "b"] })).contains("takes one value"));
    }

    #[test]
    fn the_schema_lists_every_argument_with_its_type() {
        let mut required = flag("model", Kind::Text);
        required.required = true;
        let mut top = flag("top", Kind::Integer);
        top.default = Some("15".into());
        top.help = "Kernel rows.".into();
        let schema = Value::Object(tool(vec![required, top]).input_schema());
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "model": { "type": "string" },
                    "top": { "type": "integer", "minimum": 0, "description": "Kernel rows.", "default": 15 }
                },
                "required": ["model"],
                "additionalProperties": false
            })
        );
    }
}
