//! `[[tools]]`, `[[virtual_tools]]` and `[python]`: tools defined in the config file
//! (SPEC §14).
//!
//! Owns the entries' keys and their checks, each problem at the entry's line. What an
//! entry's `type` and `returns` annotations mean is `defined`'s business (the same
//! rules as a Python file's, SPEC §3); this module never parses Python.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::located::{ConfigError, Located, pointer};
use crate::policy::{self, Declared};

/// The keys of a `[[tools]]` entry.
const KEYS: [&str; 15] = [
    "name",
    "provider",
    "description",
    "module",
    "function",
    "args",
    "returns",
    "grade",
    "grade_w",
    "effects_ceiling",
    "read_only",
    "destructive",
    "idempotent",
    "open_world",
    "docs",
];

/// The keys of one of its `args`.
const ARG_KEYS: [&str; 4] = ["name", "type", "description", "default"];

/// One `[[tools]]` entry: a function of an importable module, described in the file.
#[derive(Debug, Clone, PartialEq)]
pub struct DefinedTool {
    /// The tool's name.
    pub name: String,
    /// What the model is told it does.
    pub description: Option<String>,
    /// The module, as `importlib.import_module` takes it (empty for a virtual tool).
    pub module: String,
    /// The module's function that is the tool (empty for a virtual tool).
    pub function: String,
    /// A `[[virtual_tools]]` entry: the embedding host implements it (SPEC §14).
    pub host_implemented: bool,
    /// Its arguments, in order.
    pub args: Vec<DefinedArg>,
    /// The return annotation, as text.
    pub returns: Option<String>,
    /// What the entry declares (grade, hints, docs; SPEC §12).
    pub declared: Declared,
    /// The entry's line in the file.
    pub line: u32,
}

/// One of a [`DefinedTool`]'s `args`.
#[derive(Debug, Clone, PartialEq)]
pub struct DefinedArg {
    /// The argument's name.
    pub name: String,
    /// Its annotation, as text (`"list[str]"`); `None`: any value.
    pub annotation: Option<String>,
    /// What it means.
    pub description: Option<String>,
    /// Its default; with one, the argument is optional.
    pub default: Option<Value>,
}

/// Which array an entry is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Array {
    /// `[[tools]]`: a module's function.
    Tools,
    /// `[[virtual_tools]]`: a tool the embedding host implements (no module).
    Virtual,
}

impl Array {
    fn key(self) -> &'static str {
        match self {
            Array::Tools => "tools",
            Array::Virtual => "virtual_tools",
        }
    }

    /// Whether an entry may have `key`.
    fn takes(self, key: &str) -> bool {
        KEYS.contains(&key) && !(self == Array::Virtual && ["provider", "module", "function"].contains(&key))
    }
}

/// Reads the `[[tools]]` or `[[virtual_tools]]` array; `base` is the folder `docs` is
/// relative to.
pub(super) fn read(
    array: Array,
    value: &Value,
    at: &Located,
    here: &str,
    base: &Path,
    errors: &mut Vec<ConfigError>,
) -> Vec<DefinedTool> {
    let key = array.key();
    let Value::Array(entries) = value else {
        errors.push(at.error(here, format!("`{key}` must be an array of tables (`[[{key}]]`)")));
        return Vec::new();
    };
    let mut tools: Vec<DefinedTool> = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let place = pointer(here, &i.to_string());
        let Some(tool) = read_entry(array, entry, at, &place, base, errors) else { continue };
        if tools.iter().any(|other| other.name == tool.name) {
            errors.push(at.error(&place, format!("`[[{key}]]` defines `{}` twice", tool.name)));
            continue;
        }
        tools.push(tool);
    }
    tools
}

fn read_entry(
    array: Array,
    entry: &Value,
    at: &Located,
    place: &str,
    base: &Path,
    errors: &mut Vec<ConfigError>,
) -> Option<DefinedTool> {
    let before = errors.len();
    let array_key = array.key();
    let Some(table) = entry.as_object() else {
        errors.push(at.error(place, format!("a `[[{array_key}]]` entry must be a table")));
        return None;
    };
    let name = table.get("name").and_then(Value::as_str).map(str::trim).unwrap_or_default().to_string();
    let label = if name.is_empty() { format!("`[[{array_key}]]`") } else { format!("`[[{array_key}]]` `{name}`") };
    let mut fail =
        |key: &str, message: String| errors.push(at.error(&pointer(place, key), format!("{label}: {message}")));
    if name.is_empty() {
        fail("name", "needs a `name` (a string)".to_string());
    } else if !super::profiles::is_valid_name(&name) {
        fail("name", "is not a name every export format takes (ASCII letters, digits, `_` and `-`, starting with a letter or `_`, at most 64 characters)".to_string());
    }
    let text = |key: &str, fail: &mut dyn FnMut(&str, String)| match table.get(key) {
        None => None,
        Some(Value::String(text)) if !text.trim().is_empty() => Some(text.trim().to_string()),
        Some(other) => {
            fail(key, format!("`{key}` must be a non-empty string, not {other}"));
            None
        }
    };
    match text("provider", &mut fail).as_deref() {
        None | Some("python") => {}
        Some(other) => fail("provider", format!("unknown provider `{other}`; the only one is `python`")),
    }
    let description = text("description", &mut fail);
    let module = text("module", &mut fail);
    let function = text("function", &mut fail);
    let returns = text("returns", &mut fail);
    if array == Array::Tools && module.is_none() && !table.contains_key("module") {
        fail("module", "needs `module` (the module to import, as `os.path`)".to_string());
    }
    if array == Array::Tools && function.is_none() && !table.contains_key("function") {
        fail("function", "needs `function` (the module's function to call)".to_string());
    }
    let mut declared = Declared::default();
    let mut grade = [None, None];
    for (key, value) in table {
        match key.as_str() {
            "grade_w" | "effects_ceiling" => match value.as_u64() {
                Some(level @ 0..=3) => grade[usize::from(key == "effects_ceiling")] = Some(level as u8),
                _ => fail(key, format!("`{key}` is {value}; a grade level is an integer from 0 to 3")),
            },
            "grade" | "read_only" | "destructive" | "idempotent" | "open_world" | "docs" => {
                if let Err(problem) = declared.set(key, value, base) {
                    fail(key, problem.to_string());
                }
            }
            _ if array.takes(key) => {}
            other => {
                let known: Vec<&str> = KEYS.iter().copied().filter(|key| array.takes(key)).collect();
                fail(other, format!("unknown key `{other}`; expected one of {}", known.join(", ")))
            }
        }
    }
    if grade.iter().any(Option::is_some) {
        if declared.grade.is_some() {
            fail("grade", "give `grade` or `grade_w`/`effects_ceiling`, not both".to_string());
        }
        // A level left out is the highest: an entry never claims less than it says.
        declared.grade = Some(policy::Grade { w: grade[0].unwrap_or(3), d: grade[1].unwrap_or(3) });
    }
    let args = match table.get("args") {
        None => Vec::new(),
        Some(Value::Array(args)) => {
            args.iter().enumerate().filter_map(|(i, arg)| read_arg(arg, &format!("args[{i}]"), &mut fail)).collect()
        }
        Some(other) => {
            fail("args", format!("`args` must be an array of tables, not {other}"));
            Vec::new()
        }
    };
    for (i, arg) in args.iter().enumerate() {
        if args[..i].iter().any(|other| other.name == arg.name) {
            fail("args", format!("the argument `{}` is named twice", arg.name));
        }
    }
    if errors.len() > before {
        return None;
    }
    let line = at.line(place).unwrap_or(1);
    Some(DefinedTool {
        name,
        description,
        module: module.unwrap_or_default(),
        function: function.unwrap_or_default(),
        host_implemented: array == Array::Virtual,
        args,
        returns,
        declared,
        line,
    })
}

/// One of `args`; its problems are placed at the entry's `args`.
fn read_arg(arg: &Value, label: &str, fail: &mut dyn FnMut(&str, String)) -> Option<DefinedArg> {
    let Some(table) = arg.as_object() else {
        fail("args", format!("`{label}` must be a table, not {arg}"));
        return None;
    };
    let mut ok = true;
    for other in table.keys().filter(|k| !ARG_KEYS.contains(&k.as_str())) {
        fail("args", format!("`{label}` has an unknown key `{other}`; expected one of {}", ARG_KEYS.join(", ")));
        ok = false;
    }
    let name = match table.get("name").and_then(Value::as_str).map(str::trim) {
        Some(name) if is_identifier(name) => name.to_string(),
        Some(name) => {
            fail("args", format!("`{label}.name` `{name}` is not a Python identifier"));
            return None;
        }
        None => {
            fail("args", format!("`{label}` needs a `name` (a string)"));
            return None;
        }
    };
    let mut string = |field: &str| match table.get(field) {
        None => None,
        Some(Value::String(text)) if !text.trim().is_empty() => Some(text.trim().to_string()),
        Some(other) => {
            fail("args", format!("`{label}.{field}` must be a non-empty string, not {other}"));
            ok = false;
            None
        }
    };
    let annotation = string("type");
    let description = string("description");
    ok.then(|| DefinedArg { name, annotation, description, default: table.get("default").cloned() })
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_alphabetic()) && chars.all(|c| c == '_' || c.is_alphanumeric())
}

/// Reads `[python]`: `path`, the folders (relative to the config file) a
/// `[[tools]]` module is imported from, and `venv`, the virtual environment whose
/// packages tools import (relative to the config file).
pub(super) fn read_python(
    value: &Value,
    at: &Located,
    here: &str,
    base: &Path,
    errors: &mut Vec<ConfigError>,
) -> (Vec<PathBuf>, Option<PathBuf>) {
    let Some(table) = value.as_object() else {
        errors.push(at.error(here, "`python` must be a table"));
        return (Vec::new(), None);
    };
    let mut path = Vec::new();
    let mut venv = None;
    for (key, value) in table {
        let place = pointer(here, key);
        match (key.as_str(), value) {
            ("path", Value::Array(entries)) => {
                for entry in entries {
                    match entry.as_str() {
                        Some(folder) if !folder.trim().is_empty() => path.push(base.join(folder)),
                        _ => errors.push(
                            at.error(&place, format!("`python.path` entries are folders (strings), not {entry}")),
                        ),
                    }
                }
            }
            ("path", other) => {
                errors.push(at.error(&place, format!("`python.path` must be an array of folders, not {other}")))
            }
            ("venv", Value::String(folder)) if !folder.trim().is_empty() => venv = Some(base.join(folder.trim())),
            ("venv", other) => {
                errors.push(at.error(&place, format!("`python.venv` must be a folder (a string), not {other}")))
            }
            (other, _) => {
                errors.push(at.error(&place, format!("`python`: unknown key `{other}`; expected path or venv")))
            }
        }
    }
    (path, venv)
}
