//! `[[tools]]`, `[[virtual_tools]]` and `[python]`: tools defined in the config file
//! (SPEC §14).
//!
//! Owns the entries' keys and their checks, each problem at the entry's line. What an
//! entry's `type` and `returns` annotations mean is `defined`'s business (the same
//! rules as a Python file's, SPEC §3); this module never parses Python.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::{self, Deserializer};
use serde_json::Value;

use crate::located::{ConfigError, Node, Reader, Style, Tree};
use crate::policy::{self, Declared};

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
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(expecting = "a table")]
pub struct DefinedArg {
    /// The argument's name.
    #[serde(deserialize_with = "identifier")]
    pub name: String,
    /// Its annotation, as text (`"list[str]"`); `None`: any value.
    #[serde(rename = "type", default, deserialize_with = "super::non_empty")]
    pub annotation: Option<String>,
    /// What it means.
    #[serde(default, deserialize_with = "super::non_empty")]
    pub description: Option<String>,
    /// Its default; with one, the argument is optional (`null` too: `None`).
    #[serde(default, deserialize_with = "any")]
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
}

/// A `[[tools]]` or `[[virtual_tools]]` entry as written.
#[derive(Default, Deserialize)]
#[serde(default, expecting = "a table")]
struct ToolTable {
    name: Option<String>,
    #[serde(deserialize_with = "super::non_empty")]
    provider: Option<String>,
    #[serde(deserialize_with = "super::non_empty")]
    description: Option<String>,
    #[serde(deserialize_with = "super::non_empty")]
    module: Option<String>,
    #[serde(deserialize_with = "super::non_empty")]
    function: Option<String>,
    args: Vec<DefinedArg>,
    #[serde(deserialize_with = "super::non_empty")]
    returns: Option<String>,
    grade: Option<policy::Grade>,
    #[serde(deserialize_with = "level")]
    grade_w: Option<u8>,
    #[serde(deserialize_with = "level")]
    effects_ceiling: Option<u8>,
    read_only: Option<bool>,
    destructive: Option<bool>,
    idempotent: Option<bool>,
    open_world: Option<bool>,
    #[serde(deserialize_with = "super::non_empty")]
    docs: Option<String>,
}

/// The keys of a `[[virtual_tools]]` entry: a `[[tools]]` entry's but `provider`,
/// `module` and `function`.
const VIRTUAL_KEYS: [&str; 12] = [
    "name",
    "description",
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

/// `grade_w` or `effects_ceiling`: an integer from 0 to 3.
fn level<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u8>, D::Error> {
    let value = Value::deserialize(deserializer)?;
    match value.as_u64() {
        Some(level @ 0..=3) => Ok(Some(level as u8)),
        _ => Err(de::Error::custom(format!(" is {value}; a grade level is an integer from 0 to 3"))),
    }
}

fn identifier<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let name = String::deserialize(deserializer)?;
    let mut chars = name.trim().chars();
    let valid =
        chars.next().is_some_and(|c| c == '_' || c.is_alphabetic()) && chars.all(|c| c == '_' || c.is_alphanumeric());
    match valid {
        true => Ok(name.trim().to_string()),
        false => Err(de::Error::custom(format!(" `{}` is not a Python identifier", name.trim()))),
    }
}

/// Any value, `null` too: an argument whose default is `None`.
fn any<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// Reads the `[[tools]]` or `[[virtual_tools]]` array; `base` is the folder `docs` is
/// relative to.
pub(super) fn read(
    array: Array,
    node: &Node,
    file: &Path,
    base: &Path,
    errors: &mut Vec<ConfigError>,
) -> Vec<DefinedTool> {
    let key = array.key();
    let Tree::Array(entries) = &node.tree else {
        errors.push(ConfigError::at_pos(file, node.at, format!("`{key}` must be an array of tables (`[[{key}]]`)")));
        return Vec::new();
    };
    let mut tools: Vec<DefinedTool> = Vec::new();
    for entry in entries {
        let name = match entry.get("name").map(|name| &name.tree) {
            Some(Tree::String(name)) => name.trim().to_string(),
            _ => String::new(),
        };
        let label = if name.is_empty() { format!("`[[{key}]]`") } else { format!("`[[{key}]]` `{name}`") };
        let before = errors.len();
        let mut reader = Reader::new(file, Style::Must, "", errors).prefixed(format!("{label}: "));
        let Some(table) = reader.read::<ToolTable>(entry) else { continue };
        let tool = defined(array, name, table, entry, base, &mut reader);
        if errors.len() > before {
            continue;
        }
        if tools.iter().any(|other| other.name == tool.name) {
            errors.push(ConfigError::at_pos(file, entry.at, format!("`[[{key}]]` defines `{}` twice", tool.name)));
            continue;
        }
        tools.push(tool);
    }
    tools
}

/// The tool an entry defines, its problems told to `reader`.
fn defined(
    array: Array,
    name: String,
    table: ToolTable,
    entry: &Node,
    base: &Path,
    reader: &mut Reader<'_>,
) -> DefinedTool {
    let place = |key: &str| entry.get(key).and_then(|node| node.at).or(entry.at);
    // A `name` given but refused is reported already.
    let refused = table.name.is_none() && entry.get("name").is_some();
    if name.is_empty() && !refused {
        reader.error(place("name"), "needs a `name` (a string)");
    } else if !super::profiles::is_valid_name(&name) {
        reader.error(place("name"), "is not a name every export format takes (ASCII letters, digits, `_` and `-`, starting with a letter or `_`, at most 64 characters)");
    }
    if array == Array::Virtual {
        for key in ["provider", "module", "function"] {
            if let Some(node) = entry.get(key) {
                reader.unknown_key(node.at, key, &VIRTUAL_KEYS);
            }
        }
    }
    match table.provider.as_deref() {
        None | Some("python") => {}
        Some(other) => reader.error(place("provider"), format!("unknown provider `{other}`; the only one is `python`")),
    }
    if array == Array::Tools && entry.get("module").is_none() {
        reader.error(entry.at, "needs `module` (the module to import, as `os.path`)");
    }
    if array == Array::Tools && entry.get("function").is_none() {
        reader.error(entry.at, "needs `function` (the module's function to call)");
    }
    let mut grade = table.grade;
    if table.grade_w.is_some() || table.effects_ceiling.is_some() {
        if grade.is_some() {
            reader.error(place("grade"), "give `grade` or `grade_w`/`effects_ceiling`, not both");
        }
        // A level left out is the highest: an entry never claims less than it says.
        grade = Some(policy::Grade { w: table.grade_w.unwrap_or(3), d: table.effects_ceiling.unwrap_or(3) });
    }
    for (i, arg) in table.args.iter().enumerate() {
        if table.args[..i].iter().any(|other| other.name == arg.name) {
            reader.error(place("args"), format!("the argument `{}` is named twice", arg.name));
        }
    }
    let declared = Declared {
        read_only: table.read_only,
        destructive: table.destructive,
        idempotent: table.idempotent,
        open_world: table.open_world,
        grade,
        docs: table.docs.map(|docs| base.join(docs)),
        ..Declared::default()
    };
    DefinedTool {
        name,
        description: table.description,
        module: table.module.unwrap_or_default(),
        function: table.function.unwrap_or_default(),
        host_implemented: array == Array::Virtual,
        args: table.args,
        returns: table.returns,
        declared,
        line: entry.at.map_or(1, |at| at.line),
    }
}

/// `[python]`: `path`, the folders (relative to the config file) a `[[tools]]`
/// module is imported from, and `venv`, the virtual environment whose packages
/// tools import (relative to the config file).
#[derive(Default, Deserialize)]
#[serde(default, expecting = "a table")]
pub(super) struct PythonTable {
    #[serde(deserialize_with = "super::folders")]
    pub path: Vec<PathBuf>,
    #[serde(deserialize_with = "super::non_empty")]
    pub venv: Option<String>,
}
