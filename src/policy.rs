//! What a tool declares about its effects, its grade, and the host's rules (SPEC §12).
//!
//! Owns the declaration keys (`read_only`, `destructive`, `idempotent`, `open_world`,
//! `grade`, `docs`, `mcp_headers`, `task`), read from a library's `TOOL_POLICY` / `TOOL_POLICIES` literals and
//! from the config file's `[tool_policies.NAME]` tables; the MCP annotations they give; grades
//! and their element-wise maximum; and the host's `[policy]` rules with the check of
//! one tool against them. It never runs Python and never guesses: what is not declared
//! claims nothing, and counts as the highest grade.

use std::path::{Path, PathBuf};

use ruff_python_ast::Expr;
use ruff_text_size::{Ranged, TextRange};
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::located::{self, Style};

/// The keys a declaration may have.
pub const KEYS: [&str; 8] =
    ["read_only", "destructive", "idempotent", "open_world", "grade", "docs", "mcp_headers", "task"];

/// What a tool declares; `None` is undeclared (unknown). Read from a table of
/// [`KEYS`] (`docs` as written: [`Declared::based`] takes it from the file's folder).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, expecting = "a table of declarations")]
pub struct Declared {
    /// The tool only reads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// The tool may destroy or overwrite data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// Calling it again with the same arguments does nothing more.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// It reaches beyond the host (the network, other systems).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
    /// Its grade.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grade: Option<Grade>,
    /// Documentation of the tool: a path, resolved against the file that declared it.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::path_json::serialize_option",
        deserialize_with = "docs"
    )]
    pub docs: Option<PathBuf>,
    /// Arguments that travel in an HTTP header too (SPEC §16): parameter → the
    /// header's name after `Mcp-Param-` (`{"region": "Mcp-Param-Region"}` is
    /// `region` → `Region`), published as the property's `x-mcp-header`.
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "mcp_headers")]
    pub mcp_headers: Option<std::collections::BTreeMap<String, String>>,
    /// Whether a call may run as an MCP task (SPEC §16): published as the tool's
    /// `execution.taskSupport`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskSupport>,
}

/// How a tool runs as an MCP task (the `io.modelcontextprotocol/tasks` extension).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// Never: every call is answered when it ends.
    Forbidden,
    /// A client that takes tasks gets one; any other is answered when the call ends.
    Optional,
    /// Only as a task: a client that does not take tasks is refused.
    Required,
}

impl TaskSupport {
    /// Its name, as declared and as MCP's `taskSupport` says it.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }
}

/// World coupling `w` and effects ceiling `d`, each 0 to 3 (seed 000).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Grade {
    /// World coupling, 0 to 3.
    pub w: u8,
    /// Effects ceiling, 0 to 3.
    pub d: u8,
}

impl Grade {
    /// The grade of a tool that declares none: the highest.
    pub const UNDECLARED: Grade = Grade { w: 3, d: 3 };
    /// The grade of no tools at all.
    pub const NONE: Grade = Grade { w: 0, d: 0 };

    /// The element-wise maximum.
    pub fn max(self, other: Grade) -> Grade {
        Grade { w: self.w.max(other.w), d: self.d.max(other.d) }
    }
}

impl std::fmt::Display for Grade {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "w{} d{}", self.w, self.d)
    }
}

impl Declared {
    /// `self` laid over `base`: each key `self` declares wins.
    pub fn over(&self, base: &Declared) -> Declared {
        Declared {
            read_only: self.read_only.or(base.read_only),
            destructive: self.destructive.or(base.destructive),
            idempotent: self.idempotent.or(base.idempotent),
            open_world: self.open_world.or(base.open_world),
            grade: self.grade.or(base.grade),
            docs: self.docs.clone().or_else(|| base.docs.clone()),
            mcp_headers: self.mcp_headers.clone().or_else(|| base.mcp_headers.clone()),
            task: self.task.or(base.task),
        }
    }

    /// The declared grade; without one, each part as far as the other declarations
    /// say (the rule SPEC §14 applies to MCP annotations): `d` = 0 when `read_only`,
    /// 3 when `destructive`, 2 when not; `w` = 1 when not `open_world`; what none of
    /// them says counts as 3 ([`Grade::UNDECLARED`]).
    pub fn grade(&self) -> Grade {
        self.grade.unwrap_or_else(|| {
            let d = match (self.read_only, self.destructive) {
                (Some(true), _) => 0,
                (_, Some(false)) => 2,
                _ => Grade::UNDECLARED.d,
            };
            let w = if self.open_world == Some(false) { 1 } else { Grade::UNDECLARED.w };
            Grade { w, d }
        })
    }

    /// Which parts of [`Declared::grade`] a declaration gives, `[w, d]`: both with a
    /// grade; else `w` with `open_world`, `d` with `read_only: true` or `destructive`.
    pub fn grade_known(&self) -> [bool; 2] {
        if self.grade.is_some() {
            return [true, true];
        }
        [self.open_world.is_some(), self.read_only == Some(true) || self.destructive.is_some()]
    }

    /// The grade as `lcp list` shows it: `w1 d0`, a part no declaration gives marked
    /// `?` (`w3? d0` for a tool that only says it is read-only).
    pub fn grade_shown(&self) -> String {
        let (grade, [w, d]) = (self.grade(), self.grade_known());
        format!("w{}{} d{}{}", grade.w, if w { "" } else { "?" }, grade.d, if d { "" } else { "?" })
    }

    /// MCP `annotations`: the hints declared, and only those; `None` when there are none.
    pub fn annotations(&self) -> Option<Value> {
        let mut hints = Map::new();
        for (key, value) in [
            ("readOnlyHint", self.read_only),
            ("destructiveHint", self.destructive),
            ("idempotentHint", self.idempotent),
            ("openWorldHint", self.open_world),
        ] {
            if let Some(value) = value {
                hints.insert(key.to_string(), Value::Bool(value));
            }
        }
        (!hints.is_empty()).then_some(Value::Object(hints))
    }

    /// Sets one key from its JSON value (a Python literal's); `base` is the folder
    /// `docs` is relative to. The key is read as a config file's table is.
    pub fn set(&mut self, key: &str, value: &Value, base: &Path) -> Result<(), DeclarationError> {
        let table = Value::Object(Map::from_iter([(key.to_string(), value.clone())]));
        let read: Declared = located::read_json(table, Style::Must).map_err(|why| DeclarationError(why.join("; ")))?;
        *self = read.based(base).over(self);
        Ok(())
    }

    /// With `docs` taken from `base`, the folder of the file that declared it.
    pub fn based(mut self, base: &Path) -> Declared {
        self.docs = self.docs.map(|docs| base.join(docs));
        self
    }
}

/// Why a declaration's key was left out ([`Declared::set`]), starting with the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclarationError(pub String);

impl std::fmt::Display for DeclarationError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DeclarationError {}

/// `docs`: a path, not blank.
fn docs<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<PathBuf>, D::Error> {
    located::text(deserializer, "a path (a string)").map(|path| Some(PathBuf::from(path)))
}

/// `mcp_headers`: `{"param": "Mcp-Param-Name" | "Name"}`, each parameter with its
/// header's name after `Mcp-Param-`.
fn mcp_headers<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<std::collections::BTreeMap<String, String>>, D::Error> {
    let value = Value::deserialize(deserializer)?;
    let refused = || {
        de::Error::invalid_value(
            de::Unexpected::Other("it"),
            &"a table of parameter names to header names (`{region = \"Mcp-Param-Region\"}`; letters, digits and `-`)",
        )
    };
    let table = value.as_object().ok_or_else(refused)?;
    let mut headers = std::collections::BTreeMap::new();
    for (parameter, header) in table {
        let header = header.as_str().ok_or_else(refused)?;
        let name = header.strip_prefix("Mcp-Param-").or_else(|| header.strip_prefix("mcp-param-")).unwrap_or(header);
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(refused());
        }
        headers.insert(parameter.clone(), name.to_string());
    }
    Ok(Some(headers))
}

/// A grade's level: an integer from 0 to 3.
struct Level(u8);

impl<'de> Deserialize<'de> for Level {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Level, D::Error> {
        let value = Value::deserialize(deserializer)?;
        match value.as_u64() {
            Some(level @ 0..=3) => Ok(Level(level as u8)),
            _ => Err(de::Error::custom(format!(" is {value}; a grade is an integer from 0 to 3"))),
        }
    }
}

/// `{w = 0-3, d = 0-3}`, either left out.
#[derive(Deserialize)]
#[serde(expecting = "a table {w = 0-3, d = 0-3}")]
struct Levels {
    w: Option<Level>,
    d: Option<Level>,
}

impl Levels {
    fn given(self) -> [Option<u8>; 2] {
        [self.w.map(|level| level.0), self.d.map(|level| level.0)]
    }
}

impl<'de> Deserialize<'de> for Grade {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Grade, D::Error> {
        match Levels::deserialize(deserializer)?.given() {
            [Some(w), Some(d)] => Ok(Grade { w, d }),
            _ => Err(de::Error::custom(" needs both `w` and `d`")),
        }
    }
}

/// `max_grade`: a grade either of whose levels may be left out.
fn max_grade<'de, D: Deserializer<'de>>(deserializer: D) -> Result<[Option<u8>; 2], D::Error> {
    Levels::deserialize(deserializer).map(Levels::given)
}

/// A library's declarations, read from the module-level literals.
#[derive(Debug, Default)]
pub(crate) struct LibraryPolicy {
    /// `TOOL_POLICY`: the defaults of every tool of the file.
    pub defaults: Declared,
    /// `TOOL_POLICIES`: per tool, over the defaults, with the range of its key.
    pub tools: Vec<(String, TextRange, Declared)>,
    /// Problems: errors for bad keys and values, which are left out.
    pub errors: Vec<(TextRange, String)>,
    /// Warnings: a value that is not a literal dict, which is ignored.
    pub warnings: Vec<(TextRange, String)>,
}

/// Reads `TOOL_POLICY = {...}` and `TOOL_POLICIES = {"tool_x": {...}}` from their
/// values; `literal` evaluates a literal expression to JSON (`None`: not a literal).
/// `base` is the folder of the file, for `docs`.
pub(crate) fn read_library(
    policy: Option<&Expr>,
    policies: Option<&Expr>,
    literal: impl Fn(&Expr) -> Option<Value>,
    base: &Path,
) -> LibraryPolicy {
    let mut read = LibraryPolicy::default();
    if let Some(expr) = policy {
        match expr {
            Expr::Dict(_) => read.defaults = declaration(expr, &literal, base, &mut read.errors),
            other => read.warnings.push((other.range(), "`TOOL_POLICY` is not a literal dict: ignored".to_string())),
        }
    }
    if let Some(expr) = policies {
        let Expr::Dict(dict) = expr else {
            read.warnings.push((expr.range(), "`TOOL_POLICIES` is not a literal dict: ignored".to_string()));
            return read;
        };
        for item in &dict.items {
            let Some(Expr::StringLiteral(name)) = &item.key else {
                let range = item.key.as_ref().map_or(item.value.range(), Ranged::range);
                read.errors.push((range, "a `TOOL_POLICIES` key must be a tool name (a string)".to_string()));
                continue;
            };
            match &item.value {
                Expr::Dict(_) => {
                    let declared = declaration(&item.value, &literal, base, &mut read.errors);
                    read.tools.push((name.value.to_str().to_string(), name.range, declared));
                }
                other => read.errors.push((
                    other.range(),
                    format!("`TOOL_POLICIES[\"{}\"]` must be a literal dict", name.value.to_str()),
                )),
            }
        }
    }
    read
}

fn declaration(
    expr: &Expr,
    literal: &impl Fn(&Expr) -> Option<Value>,
    base: &Path,
    errors: &mut Vec<(TextRange, String)>,
) -> Declared {
    let mut declared = Declared::default();
    let Expr::Dict(dict) = expr else { return declared };
    for item in &dict.items {
        let Some(Expr::StringLiteral(key)) = &item.key else {
            let range = item.key.as_ref().map_or(item.value.range(), Ranged::range);
            errors.push((range, format!("a policy key must be one of {}", KEYS.join(", "))));
            continue;
        };
        let key_text = key.value.to_str();
        let Some(value) = literal(&item.value) else {
            errors.push((item.value.range(), format!("`{key_text}` is not a literal value: ignored")));
            continue;
        };
        if let Err(problem) = declared.set(key_text, &value, base) {
            let range = if KEYS.contains(&key_text) { item.value.range() } else { key.range };
            errors.push((range, problem.to_string()));
        }
    }
    declared
}

/// The host's rules (`[policy]` in the config file). The default allows everything.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, expecting = "a table")]
pub struct HostPolicy {
    /// Whether a tool declared destructive may run.
    pub allow_destructive: bool,
    /// Whether a tool declared open-world may run.
    pub allow_open_world: bool,
    /// `max_grade = {w = .., d = ..}`; either may be left out.
    #[serde(deserialize_with = "max_grade")]
    pub max_grade: [Option<u8>; 2],
}

impl Default for HostPolicy {
    fn default() -> Self {
        HostPolicy { allow_destructive: true, allow_open_world: true, max_grade: [None, None] }
    }
}

impl HostPolicy {
    /// The rule that forbids a tool with these declarations, or `None` when it may run.
    /// Undeclared counts against the tool: it may be destructive, reach the open
    /// world, and its grade is the highest.
    pub fn forbids(&self, tool: &str, declared: &Declared) -> Option<String> {
        if !self.allow_destructive && declared.read_only != Some(true) && declared.destructive != Some(false) {
            return Some(format!(
                "the host's policy `allow_destructive = false` refuses `{tool}`: it does not declare \
                 `destructive = false` or `read_only = true`"
            ));
        }
        if !self.allow_open_world && declared.open_world != Some(false) {
            return Some(format!(
                "the host's policy `allow_open_world = false` refuses `{tool}`: it does not declare `open_world = false`"
            ));
        }
        let grade = declared.grade();
        for (limit, level, letter) in [(self.max_grade[0], grade.w, "w"), (self.max_grade[1], grade.d, "d")] {
            if let Some(limit) = limit
                && level > limit
            {
                let declared = if declared.grade.is_some() { "" } else { " (undeclared counts as 3)" };
                return Some(format!(
                    "the host's policy `max_grade.{letter} = {limit}` refuses `{tool}`: its grade is {grade}{declared}"
                ));
            }
        }
        None
    }

    /// Whether this is the policy that allows everything.
    pub fn is_default(&self) -> bool {
        *self == HostPolicy::default()
    }
}

/// Which declarations a host's workers have the kernel keep (SPEC §18): found once
/// by the host (`runtime::sandbox::offered`) and given to what lists its tools, which
/// never asks the machine itself, so that a document is the same on every machine
/// given the same input. The default keeps none: the host runs its tools in itself,
/// or in workers without their sandbox.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Enforcement {
    /// `read_only: true` is kept (Landlock).
    pub read_only: bool,
    /// `open_world: false` is kept (seccomp and a network namespace).
    pub offline: bool,
}

impl Enforcement {
    /// Both kept: a kernel with Landlock and seccomp, tools in sandboxed workers.
    pub const ALL: Enforcement = Enforcement { read_only: true, offline: true };

    /// The declarations kept for a tool lcp's workers run that declares `declared`
    /// (and, with `[sandbox] infer`, is given `inferred`), as they are written. A tool
    /// lcp does not run (an MCP server's, a virtual one) has none kept:
    /// [`crate::discovery::registry::Descriptions::enforced`] asks only for the others.
    pub fn of(self, declared: &Declared, inferred: &[&str]) -> Vec<&'static str> {
        let read_only = declared.read_only == Some(true) || inferred.contains(&"read_only");
        let offline = declared.open_world == Some(false) || inferred.contains(&"open_world");
        [(read_only && self.read_only, "read_only"), (offline && self.offline, "open_world")]
            .into_iter()
            .filter_map(|(kept, name)| kept.then_some(name))
            .collect()
    }
}

/// What a tool's code was found able to do (SPEC §20, `lcp audit`), as listings show
/// it beside the declarations. Serialized as the manifest and MCP's `_meta` carry it:
/// `{"can": [capability, ...], "unknown": [dotted call, ...]}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Found {
    /// The capabilities its code can exercise, by name (`network`, `fs_write`, ...).
    #[serde(rename = "can")]
    pub capabilities: Vec<&'static str>,
    /// The calls lcp cannot see into, by dotted name.
    pub unknown: Vec<String>,
    /// The declarations `[sandbox] infer` gives it (`read_only`, `open_world`), which
    /// its sandbox keeps as if it declared them.
    #[serde(skip)]
    pub inferred: Vec<&'static str>,
}

/// The manifest's view of a tool's declarations ([`manifest`]).
#[derive(Debug, Serialize)]
pub struct Manifested<'a> {
    declared: &'a Declared,
    grade: Grade,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    enforced: &'a [&'static str],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    inferred: &'a [&'static str],
}

/// The manifest's view of a tool's declarations: all of them, the grade that counts,
/// `enforced`, those the kernel enforces when lcp runs the tool (SPEC §18), and
/// `inferred`, those `[sandbox] infer` gave it, if any.
pub fn manifest<'a>(
    declared: &'a Declared,
    enforced: &'a [&'static str],
    inferred: &'a [&'static str],
) -> Manifested<'a> {
    Manifested { declared, grade: declared.grade(), enforced, inferred }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn declared(value: Value) -> Result<Declared, Vec<String>> {
        located::read_json::<Declared>(value, Style::Must).map(|declared| declared.based(Path::new("/lib")))
    }

    #[test]
    fn declarations() {
        assert_eq!(declared(json!({})), Ok(Declared::default()));
        assert_eq!(
            declared(json!({"read_only": true, "grade": {"w": 1, "d": 0}, "docs": "d.md"})),
            Ok(Declared {
                read_only: Some(true),
                grade: Some(Grade { w: 1, d: 0 }),
                docs: Some(PathBuf::from("/lib/d.md")),
                ..Declared::default()
            })
        );
        assert_eq!(
            declared(json!({"grade": {"w": 4, "d": 0}})),
            Err(vec!["`grade.w` is 4; a grade is an integer from 0 to 3".to_string()])
        );
        assert_eq!(declared(json!({"grade": {"w": 1}})), Err(vec!["`grade` needs both `w` and `d`".to_string()]));
        assert_eq!(
            declared(json!({"readonly": true})),
            Err(vec![
                "unknown key `readonly`; expected read_only, destructive, idempotent, open_world, grade, docs, mcp_headers or task; did you mean `read_only`?"
                    .to_string()
            ])
        );
        assert_eq!(
            declared(json!({"destructive": "no"})),
            Err(vec!["`destructive` must be true or false, not \"no\"".to_string()])
        );
    }

    #[test]
    fn a_key_left_out_is_a_typed_error_and_changes_nothing() {
        let (mut declared, base) = (Declared::default(), Path::new("/lib"));
        let refused = |key: &str, value: Value| declared.clone().set(key, &value, base).unwrap_err().to_string();
        assert!(refused("readonly", json!(true)).starts_with("unknown key `readonly`"));
        assert_eq!(refused("grade", json!({"w": 1})), "`grade` needs both `w` and `d`");
        assert_eq!(refused("docs", json!("")), "`docs` must be a path (a string), not \"\"");
        assert_eq!(
            declared.set("read_only", &json!(1), base).unwrap_err().to_string(),
            "`read_only` must be true or false, not 1"
        );
        assert_eq!(declared, Declared::default());
    }

    #[test]
    fn annotations_carry_only_what_is_declared() {
        assert_eq!(Declared::default().annotations(), None);
        let declared = Declared { read_only: Some(true), open_world: Some(false), ..Declared::default() };
        assert_eq!(declared.annotations(), Some(json!({"readOnlyHint": true, "openWorldHint": false})));
    }

    #[test]
    fn a_later_declaration_wins_key_by_key() {
        let base = Declared { read_only: Some(true), idempotent: Some(true), ..Declared::default() };
        let top = Declared { read_only: Some(false), ..Declared::default() };
        assert_eq!(top.over(&base), Declared { read_only: Some(false), idempotent: Some(true), ..Declared::default() });
    }

    #[test]
    fn host_rules() {
        let strict: HostPolicy = located::read_json(
            json!({"allow_destructive": false, "allow_open_world": false, "max_grade": {"w": 1}}),
            Style::Must,
        )
        .unwrap();
        let reader = Declared {
            read_only: Some(true),
            open_world: Some(false),
            grade: Some(Grade { w: 1, d: 0 }),
            ..Declared::default()
        };
        assert_eq!(strict.forbids("r", &reader), None);
        assert!(strict.forbids("u", &Declared::default()).unwrap().contains("`allow_destructive = false`"));
        let writer = Declared { destructive: Some(false), ..reader.clone() };
        assert_eq!(strict.forbids("w", &writer), None);
        let far = Declared { grade: Some(Grade { w: 2, d: 0 }), ..reader };
        assert!(strict.forbids("f", &far).unwrap().contains("`max_grade.w = 1`"));
        let problems = located::read_json::<HostPolicy>(json!({"allow_all": true, "max_grade": {"w": 9}}), Style::Must)
            .unwrap_err();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].starts_with("unknown key `allow_all`"), "{problems:?}");
        assert!(problems[1].starts_with("`max_grade.w` is 9"), "{problems:?}");
        assert!(HostPolicy::default().forbids("any", &Declared::default()).is_none());
    }

    #[test]
    fn a_grade_left_undeclared_has_the_parts_the_other_declarations_give() {
        let read_only = declared(json!({"read_only": true})).unwrap();
        assert_eq!((read_only.grade(), read_only.grade_shown().as_str()), (Grade { w: 3, d: 0 }, "w3? d0"));
        let closed = declared(json!({"open_world": false, "destructive": false})).unwrap();
        assert_eq!((closed.grade(), closed.grade_shown().as_str()), (Grade { w: 1, d: 2 }, "w1 d2"));
        let writes = declared(json!({"read_only": false})).unwrap();
        assert_eq!(writes.grade_shown(), "w3? d3?");
        let nothing = Declared::default();
        assert_eq!((nothing.grade(), nothing.grade_shown().as_str()), (Grade::UNDECLARED, "w3? d3?"));
        // A declared grade wins over what the hints would give.
        let graded = declared(json!({"read_only": true, "grade": {"w": 0, "d": 1}})).unwrap();
        assert_eq!(graded.grade_shown(), "w0 d1");
    }

    #[test]
    fn grades_combine_element_wise() {
        assert_eq!(Grade { w: 1, d: 0 }.max(Grade { w: 0, d: 2 }), Grade { w: 1, d: 2 });
        assert_eq!(Grade::NONE.max(Grade::UNDECLARED), Grade::UNDECLARED);
    }

    #[test]
    fn only_what_the_host_keeps_is_enforced() {
        let both = Declared { read_only: Some(true), open_world: Some(false), ..Declared::default() };
        assert_eq!(Enforcement::ALL.of(&both, &[]), ["read_only", "open_world"]);
        assert_eq!(Enforcement { read_only: true, offline: false }.of(&both, &[]), ["read_only"]);
        assert!(Enforcement::default().of(&both, &[]).is_empty(), "a host that keeps nothing claims nothing");
        // What `[sandbox] infer` gave counts as declared; undeclared keys claim nothing.
        let undeclared = Declared::default();
        assert!(Enforcement::ALL.of(&undeclared, &[]).is_empty());
        assert_eq!(Enforcement::ALL.of(&undeclared, &["open_world"]), ["open_world"]);
    }
}
