//! A config or kit file read once into a tree that knows where each entry is
//! ([`Node`]), the tables of it read into structs by serde ([`Reader`]), and
//! [`ConfigError`], a problem in a file or a command-line option. Below both `config`
//! and `profile`, which read files with it, and `policy`, whose declarations it reads.
//!
//! A [`Reader`] reports every problem of what it reads, each at its line and column:
//! a key the struct does not have (with the keys it has and a did-you-mean), a value
//! of the wrong type, a value its type refuses. A value that fails is left out and the
//! read starts again, so one bad key never hides another.

use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Number, Value};

use crate::diag::{Diagnostic, Level};

/// A problem with the configuration: in a file, or in a command-line option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// At a line of a file (`None`: the file as a whole, or a JSON file).
    At {
        /// The file.
        file: PathBuf,
        /// The line, when the problem has one.
        line: Option<u32>,
        /// The column of that line, when the problem has one.
        column: Option<u32>,
        /// What went wrong.
        message: String,
    },
    /// In the value of a command-line option such as `--profile`.
    Option {
        /// The option, as written (`--profile`).
        option: &'static str,
        /// What went wrong.
        message: String,
    },
}

impl ConfigError {
    /// A problem at `line` of `file` (`None`: the file as a whole).
    pub fn at(file: &Path, line: Option<u32>, message: impl Into<String>) -> ConfigError {
        ConfigError::At { file: file.to_path_buf(), line, column: None, message: message.into() }
    }

    /// A problem at `pos` of `file` (`None`: the file as a whole).
    pub fn at_pos(file: &Path, pos: Option<Pos>, message: impl Into<String>) -> ConfigError {
        ConfigError::At {
            file: file.to_path_buf(),
            line: pos.map(|pos| pos.line),
            column: pos.map(|pos| pos.column),
            message: message.into(),
        }
    }

    /// The problem as an error diagnostic (`lcp check`): line 1 when it has none.
    pub fn diagnostic(&self) -> Diagnostic {
        match self {
            ConfigError::At { file, line, column, message } => {
                Diagnostic::new(file, line.unwrap_or(1), column.unwrap_or(1), Level::Error, message)
            }
            ConfigError::Option { option, message } => {
                Diagnostic::new(Path::new(option), 1, 1, Level::Error, message.as_str())
            }
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::At { file, line: Some(line), column: Some(column), message } => {
                write!(f, "{}:{line}:{column}: {message}", file.display())
            }
            ConfigError::At { file, line: Some(line), column: None, message } => {
                write!(f, "{}:{line}: {message}", file.display())
            }
            ConfigError::At { file, line: None, message, .. } => write!(f, "{}: {message}", file.display()),
            ConfigError::Option { option, message } => write!(f, "{option}: {message}"),
        }
    }
}

/// A place in a file: line and column, from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pos {
    /// The line.
    pub line: u32,
    /// The column, in characters.
    pub column: u32,
}

/// A value of a parsed file and where it is: a table's entry at its key, an array's
/// item at the item (TOML only; a JSON file's values have no place).
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Where the entry is.
    pub at: Option<Pos>,
    /// The value.
    pub tree: Tree,
}

/// A [`Node`]'s value: JSON's kinds, a TOML datetime as its text.
#[derive(Debug, Clone, PartialEq)]
pub enum Tree {
    /// `null` (JSON's; TOML has none).
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number.
    Number(Number),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<Node>),
    /// A table: in the file's order (JSON), sorted by key (TOML).
    Table(Vec<(String, Node)>),
}

impl Node {
    /// A JSON value, without places.
    pub fn from_json(value: Value) -> Node {
        let tree = match value {
            Value::Null => Tree::Null,
            Value::Bool(flag) => Tree::Bool(flag),
            Value::Number(number) => Tree::Number(number),
            Value::String(text) => Tree::String(text),
            Value::Array(items) => Tree::Array(items.into_iter().map(Node::from_json).collect()),
            Value::Object(table) => {
                Tree::Table(table.into_iter().map(|(key, value)| (key, Node::from_json(value))).collect())
            }
        };
        Node { at: None, tree }
    }

    /// The file's text read as JSON when `json`, else as TOML (or as JSON when it is
    /// not TOML but starts with `{`); a text that does not parse is `(where, message)`.
    pub fn parse(text: &str, json: bool) -> Result<Node, (Option<Pos>, String)> {
        let parse_json = || match serde_json::from_str(text) {
            Ok(value) => Ok(Node::from_json(value)),
            Err(err) => {
                let pos = Pos { line: err.line() as u32, column: err.column() as u32 };
                Err((Some(pos), format!("invalid JSON: {err}")))
            }
        };
        if json {
            return parse_json();
        }
        let starts = LineStarts::new(text);
        match toml::de::DeTable::parse(text) {
            Ok(table) => Node::from_toml(&toml::de::DeValue::Table(table.into_inner()), None, &starts),
            Err(_) if text.trim_start().starts_with('{') => parse_json(),
            Err(err) => {
                let pos = err.span().map(|span| starts.pos(span.start));
                Err((pos, format!("invalid TOML: {}", err.message().trim_end())))
            }
        }
    }

    /// A TOML value as a node; an integer beyond 64 bits or a float that is not a
    /// finite number (`inf`, `nan`) is refused where it is, as no setting takes one.
    fn from_toml(
        value: &toml::de::DeValue<'_>,
        at: Option<Pos>,
        starts: &LineStarts,
    ) -> Result<Node, (Option<Pos>, String)> {
        use toml::de::DeValue;
        let tree = match value {
            DeValue::String(text) => Tree::String(text.to_string()),
            DeValue::Integer(int) => {
                let (digits, radix) = (int.as_str(), int.radix());
                let number = i64::from_str_radix(digits, radix)
                    .map(Number::from)
                    .or_else(|_| u64::from_str_radix(digits, radix).map(Number::from));
                let prefix = match radix {
                    16 => "0x",
                    8 => "0o",
                    2 => "0b",
                    _ => "",
                };
                let too_large =
                    || (at, format!("invalid TOML: the integer `{prefix}{digits}` does not fit in 64 bits"));
                Tree::Number(number.map_err(|_| too_large())?)
            }
            DeValue::Float(float) => {
                let number = float.as_str().parse().ok().and_then(Number::from_f64);
                let infinite = || (at, format!("invalid TOML: `{}` is not a finite number", float.as_str()));
                Tree::Number(number.ok_or_else(infinite)?)
            }
            DeValue::Boolean(flag) => Tree::Bool(*flag),
            DeValue::Datetime(datetime) => Tree::String(datetime.to_string()),
            DeValue::Array(items) => Tree::Array(
                items
                    .iter()
                    .map(|item| Node::from_toml(item.get_ref(), Some(starts.pos(item.span().start)), starts))
                    .collect::<Result<_, _>>()?,
            ),
            // Sorted by key, as the parser gives them (and as `toml` has always read them).
            DeValue::Table(table) => Tree::Table(
                table
                    .iter()
                    .map(|(key, item)| {
                        let at = Some(starts.pos(key.span().start));
                        Ok((key.get_ref().to_string(), Node::from_toml(item.get_ref(), at, starts)?))
                    })
                    .collect::<Result<_, _>>()?,
            ),
        };
        Ok(Node { at, tree })
    }

    /// The value as JSON.
    pub fn to_json(&self) -> Value {
        match &self.tree {
            Tree::Null => Value::Null,
            Tree::Bool(flag) => Value::Bool(*flag),
            Tree::Number(number) => Value::Number(number.clone()),
            Tree::String(text) => Value::String(text.clone()),
            Tree::Array(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            Tree::Table(members) => {
                Value::Object(members.iter().map(|(key, node)| (key.clone(), node.to_json())).collect())
            }
        }
    }

    /// A table's entries (in the order of [`Tree::Table`]); `None` for any other value.
    pub fn members(&self) -> Option<&[(String, Node)]> {
        match &self.tree {
            Tree::Table(members) => Some(members),
            _ => None,
        }
    }

    /// A table's entry.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.members()?.iter().find(|(name, _)| name == key).map(|(_, node)| node)
    }
}

/// Where each line of a text starts: a place from an offset in `O(log lines)`, so a
/// file's every key is placed in time linear in its size (SPEC §17).
pub(crate) struct LineStarts<'t> {
    text: &'t str,
    newlines: Vec<usize>,
}

impl LineStarts<'_> {
    pub(crate) fn new(text: &str) -> LineStarts<'_> {
        LineStarts { text, newlines: memchr::memchr_iter(b'\n', text.as_bytes()).collect() }
    }

    /// The line (from 1) of the byte at `offset`.
    pub(crate) fn line(&self, offset: usize) -> u32 {
        self.newlines.partition_point(|&newline| newline < offset) as u32 + 1
    }

    /// The line and column (from 1) of the byte at `offset`.
    fn pos(&self, offset: usize) -> Pos {
        let line = self.line(offset) as usize;
        let start = if line == 1 { 0 } else { self.newlines[line - 2] + 1 };
        let column = self.text.get(start..offset).map_or(offset - start, |before| before.chars().count());
        Pos { line: line as u32, column: column as u32 + 1 }
    }
}

/// A value and where it is written: its key's place, or its item's.
#[derive(Debug, Clone, PartialEq)]
pub struct At<T> {
    /// Where it is, when the file says.
    pub at: Option<Pos>,
    /// The value.
    pub value: T,
}

/// The struct name by which [`At`] asks a [`Reader`] for the place.
const AT: &str = "$lcp::At";

impl<'de, T: Deserialize<'de>> Deserialize<'de> for At<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Seen<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Seen<T> {
            type Value = At<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<At<T>, A::Error> {
                let (mut line, mut column, mut value) = (None, None, None);
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "line" => line = Some(map.next_value()?),
                        "column" => column = Some(map.next_value()?),
                        _ => value = Some(map.next_value()?),
                    }
                }
                let value = value.ok_or_else(|| de::Error::missing_field("value"))?;
                Ok(At { at: line.zip(column).map(|(line, column)| Pos { line, column }), value })
            }
        }
        deserializer.deserialize_struct(AT, &["line", "column", "value"], Seen(PhantomData))
    }
}

/// A table's entries, in the order the file's table gives them.
#[derive(Debug, Clone, PartialEq)]
pub struct Entries<T>(pub Vec<(String, T)>);

impl<T> Default for Entries<T> {
    fn default() -> Self {
        Entries(Vec::new())
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Entries<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Seen<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Seen<T> {
            type Value = Entries<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a table")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries<T>, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    entries.push(entry);
                }
                Ok(Entries(entries))
            }
        }
        deserializer.deserialize_map(Seen(PhantomData))
    }
}

/// How a [`Reader`] words a value of the wrong type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// `` `mcp.inline_refs` is 1; expected true or false `` (a list's item:
    /// `` `python.path` entries are folders (strings), not 1 ``).
    Is,
    /// `` `read_only` must be true or false, not 1 ``.
    Must,
}

/// Reads values of one file into structs, every problem into `errors`: each message
/// starts with `prefix` and names the entry by its dotted path from `name`.
pub struct Reader<'r> {
    /// The file read.
    pub file: &'r Path,
    /// Put before each message (`` `mcp_servers.x`: ``).
    pub prefix: String,
    /// The dotted name of the value read (`mcp`), empty for the file's top level or
    /// an entry its prefix names.
    pub name: String,
    /// How wrong types are worded.
    pub style: Style,
    /// Where the problems go.
    pub errors: &'r mut Vec<ConfigError>,
}

/// At most this many values are left out of one read before the rest is given up.
const MAX_PROBLEMS: usize = 100;

impl<'r> Reader<'r> {
    /// A reader of `file` wording problems `style`, naming values from `name`.
    pub fn new(file: &'r Path, style: Style, name: &str, errors: &'r mut Vec<ConfigError>) -> Reader<'r> {
        Reader { file, prefix: String::new(), name: name.to_string(), style, errors }
    }

    /// The same reader with `prefix` before each message.
    pub fn prefixed(mut self, prefix: impl Into<String>) -> Reader<'r> {
        self.prefix = prefix.into();
        self
    }

    /// `node` as a `T`, every problem reported; `None` when what is left cannot be a
    /// `T` at all.
    pub fn read<T: DeserializeOwned>(&mut self, node: &Node) -> Option<T> {
        let mut masked: Vec<Vec<usize>> = Vec::new();
        let mut found: Vec<Problem> = Vec::new();
        let value = loop {
            let context = Context { masked: masked.clone(), soft: RefCell::new(Vec::new()) };
            let result = T::deserialize(NodeDe { node, path: Vec::new(), context: &context });
            let soft = context.soft.into_inner();
            match result {
                Ok(value) => {
                    found.extend(soft);
                    break Some(value);
                }
                Err(problem) => {
                    let problem = problem.placed(&[], node);
                    let indices = problem.indices();
                    let last = indices.is_empty() || masked.contains(&indices) || masked.len() >= MAX_PROBLEMS;
                    // A table refused for lack of what was left out of it says nothing new.
                    if !masked.iter().any(|inner| inner.starts_with(&indices)) {
                        found.push(problem);
                    }
                    if last {
                        found.extend(soft);
                        break None;
                    }
                    masked.push(indices);
                }
            }
        };
        found.sort_by_key(|problem| (problem.pos(), problem.indices()));
        found.dedup_by(|a, b| a.indices() == b.indices() && a.why == b.why);
        for problem in found {
            let error = self.render(problem, node.at);
            self.errors.push(error);
        }
        value
    }

    /// A problem at `at`, with the reader's prefix.
    pub fn error(&mut self, at: Option<Pos>, message: impl fmt::Display) {
        self.errors.push(ConfigError::at_pos(self.file, at, format!("{}{message}", self.prefix)));
    }

    /// `key`, at `at`, is not one of `keys` of the table read.
    pub fn unknown_key(&mut self, at: Option<Pos>, key: &str, keys: &[&str]) {
        let message = unknown_key(&self.name, key, keys);
        self.error(at, message);
    }

    fn dotted(&self, path: &[Seg]) -> String {
        let mut name = self.name.clone();
        for seg in path {
            match &seg.key {
                Some(key) if name.is_empty() => name.push_str(key),
                Some(key) => {
                    name.push('.');
                    name.push_str(key);
                }
                None => name.push_str(&format!("[{}]", seg.index)),
            }
        }
        name
    }

    /// The problem's message, at its value's place (the place of the value read, `at`,
    /// for a problem of that value itself).
    fn render(&self, problem: Problem, at: Option<Pos>) -> ConfigError {
        let (path, found) = problem.place.unwrap_or_default();
        let at = path.last().map_or(at, |seg| seg.at);
        let name = self.dotted(&path);
        let message = match problem.why {
            Why::Expected(what) => {
                let what = plain(&what);
                match (self.style, path.last()) {
                    (Style::Is, Some(Seg { key: None, .. })) => {
                        format!("`{}` entries are {what}, not {found}", self.dotted(&path[..path.len() - 1]))
                    }
                    (Style::Is, _) => format!("`{name}` is {found}; expected {what}"),
                    (Style::Must, _) if name.is_empty() => format!("must be {what}, not {found}"),
                    (Style::Must, _) => format!("`{name}` must be {what}, not {found}"),
                }
            }
            Why::Said(text) if name.is_empty() => text.trim_start_matches([':', ' ']).to_string(),
            Why::Said(text) if text.starts_with([':', ' ']) => format!("`{name}`{text}"),
            Why::Said(text) => format!("`{name}`: {text}"),
            Why::Missing(field) if name.is_empty() => format!("needs `{field}`"),
            Why::Missing(field) => format!("`{name}` needs `{field}`"),
            Why::Unknown(key, keys) => unknown_key(&self.dotted(&path[..path.len().saturating_sub(1)]), &key, keys),
        };
        ConfigError::at_pos(self.file, at, format!("{}{message}", self.prefix))
    }
}

/// `` `table`: unknown key `name`; expected a, b or c; did you mean `b`? `` (without
/// the table at the top level).
fn unknown_key(table: &str, key: &str, keys: &[&str]) -> String {
    let near = crate::suggest::closest(key, keys.iter().copied(), |_| None);
    let expected = match keys {
        [one] => one.to_string(),
        [most @ .., last] => format!("{} or {last}", most.join(", ")),
        [] => "no key".to_string(),
    };
    let table = if table.is_empty() { String::new() } else { format!("`{table}`: ") };
    format!("{table}unknown key `{key}`; expected {expected}{}", crate::suggest::did_you_mean(&near))
}

/// What serde's own types expect, in the words of a config file.
fn plain(expected: &str) -> &str {
    match expected {
        "a boolean" => "true or false",
        "a sequence" => "a list",
        "a map" => "a table",
        "u8" | "u16" | "u32" | "u64" | "usize" | "i32" | "i64" => "a whole number",
        "f32" | "f64" => "a number",
        other if other.starts_with("struct ") => "a table",
        other => other,
    }
}

/// One step of the path to a value: a table's key or an array's index, with the
/// entry's place.
#[derive(Debug, Clone, Default)]
struct Seg {
    key: Option<String>,
    index: usize,
    at: Option<Pos>,
}

/// Why a value was refused.
#[derive(Debug, Clone, PartialEq)]
enum Why {
    /// Not of the type that is `expected` (its words).
    Expected(String),
    /// What its type says, written after the value's name (`": ..."`, `" is ..."`).
    Said(String),
    /// A table without this key.
    Missing(&'static str),
    /// A key the table does not have, and the keys it has.
    Unknown(String, &'static [&'static str]),
}

/// A problem found by serde in a [`Node`], with the path to the value and the value
/// as JSON once it is known.
#[derive(Debug, Clone)]
pub struct Problem {
    place: Option<(Vec<Seg>, String)>,
    why: Why,
}

impl Problem {
    fn placed(mut self, path: &[Seg], node: &Node) -> Problem {
        if self.place.is_none() {
            self.place = Some((path.to_vec(), node.to_json().to_string()));
        }
        self
    }

    fn indices(&self) -> Vec<usize> {
        self.place.as_ref().map(|(path, _)| path.iter().map(|seg| seg.index).collect()).unwrap_or_default()
    }

    fn pos(&self) -> Option<Pos> {
        self.place.as_ref().and_then(|(path, _)| path.last()?.at)
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.why)
    }
}

impl std::error::Error for Problem {}

impl de::Error for Problem {
    fn custom<T: fmt::Display>(message: T) -> Self {
        Problem { place: None, why: Why::Said(message.to_string()) }
    }

    fn invalid_type(_: de::Unexpected<'_>, expected: &dyn de::Expected) -> Self {
        Problem { place: None, why: Why::Expected(expected.to_string()) }
    }

    fn invalid_value(_: de::Unexpected<'_>, expected: &dyn de::Expected) -> Self {
        Problem { place: None, why: Why::Expected(expected.to_string()) }
    }

    fn invalid_length(_: usize, expected: &dyn de::Expected) -> Self {
        Problem { place: None, why: Why::Expected(expected.to_string()) }
    }

    fn unknown_variant(_: &str, expected: &'static [&'static str]) -> Self {
        Problem { place: None, why: Why::Expected(format!("one of {}", expected.join(", "))) }
    }

    fn missing_field(field: &'static str) -> Self {
        Problem { place: None, why: Why::Missing(field) }
    }
}

/// What one attempt of [`Reader::read`] leaves out, and the problems that do not stop it.
struct Context {
    masked: Vec<Vec<usize>>,
    soft: RefCell<Vec<Problem>>,
}

impl Context {
    fn masked(&self, path: &[Seg], index: usize) -> bool {
        self.masked.iter().any(|masked| {
            masked.len() == path.len() + 1
                && masked.last() == Some(&index)
                && masked.iter().zip(path).all(|(step, seg)| *step == seg.index)
        })
    }
}

struct NodeDe<'a> {
    node: &'a Node,
    path: Vec<Seg>,
    context: &'a Context,
}

impl<'a> NodeDe<'a> {
    fn child(&self, key: Option<&str>, index: usize, node: &'a Node) -> NodeDe<'a> {
        let mut path = self.path.clone();
        path.push(Seg { key: key.map(str::to_string), index, at: node.at });
        NodeDe { node, path, context: self.context }
    }
}

impl<'de> de::Deserializer<'de> for NodeDe<'_> {
    type Error = Problem;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Problem> {
        match &self.node.tree {
            Tree::Null => visitor.visit_unit(),
            Tree::Bool(flag) => visitor.visit_bool(*flag),
            Tree::Number(number) => {
                if let Some(n) = number.as_u64() {
                    visitor.visit_u64(n)
                } else if let Some(n) = number.as_i64() {
                    visitor.visit_i64(n)
                } else if let Some(n) = number.as_f64().filter(|n| Number::from_f64(*n).as_ref() == Some(number)) {
                    visitor.visit_f64(n)
                } else {
                    // A number not written as its f64 prints (digits beyond 64 bits or an
                    // f64's, or `2.50`, `1e3`): as serde_json reads its text. A setting
                    // that cannot take it says what it expects.
                    let expected = Why::Expected((&visitor as &dyn de::Expected).to_string());
                    de::Deserializer::deserialize_any(Value::Number(number.clone()), visitor)
                        .map_err(|_| Problem { place: None, why: expected })
                }
            }
            Tree::String(text) => visitor.visit_str(text),
            Tree::Array(_) => visitor.visit_seq(Items { de: self, next: 0 }),
            Tree::Table(_) => visitor.visit_map(Members { de: self, fields: None, next: 0, current: None }),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Problem> {
        match self.node.tree {
            Tree::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _: &'static str, visitor: V) -> Result<V::Value, Problem> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Problem> {
        match &self.node.tree {
            Tree::String(text) => visitor.visit_enum(text.as_str().into_deserializer()),
            _ => Err(de::Error::unknown_variant("", variants)),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Problem> {
        if name == AT {
            return visitor.visit_map(Placed { de: self, step: 0 });
        }
        let Tree::Table(members) = &self.node.tree else { return self.deserialize_any(visitor) };
        for (index, (key, node)) in members.iter().enumerate() {
            if !fields.contains(&key.as_str()) && !self.context.masked(&self.path, index) {
                let child = self.child(Some(key), index, node);
                let problem = Problem { place: None, why: Why::Unknown(key.clone(), fields) };
                self.context.soft.borrow_mut().push(problem.placed(&child.path, node));
            }
        }
        visitor.visit_map(Members { de: self, fields: Some(fields), next: 0, current: None })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf unit
        unit_struct seq tuple tuple_struct map identifier ignored_any
    }
}

struct Members<'a> {
    de: NodeDe<'a>,
    fields: Option<&'static [&'static str]>,
    next: usize,
    current: Option<usize>,
}

impl<'de> MapAccess<'de> for Members<'_> {
    type Error = Problem;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Problem> {
        let Tree::Table(members) = &self.de.node.tree else { return Ok(None) };
        while let Some((key, _)) = members.get(self.next) {
            let index = self.next;
            self.next += 1;
            let known = self.fields.is_none_or(|fields| fields.contains(&key.as_str()));
            if known && !self.de.context.masked(&self.de.path, index) {
                self.current = Some(index);
                return seed.deserialize(key.as_str().into_deserializer()).map(Some);
            }
        }
        Ok(None)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, Problem> {
        let Tree::Table(members) = &self.de.node.tree else { return Err(de::Error::custom("no value")) };
        let index = self.current.take().unwrap_or_default();
        let (key, node) = &members[index];
        let child = self.de.child(Some(key), index, node);
        let path = child.path.clone();
        seed.deserialize(child).map_err(|problem| problem.placed(&path, node))
    }
}

struct Items<'a> {
    de: NodeDe<'a>,
    next: usize,
}

impl<'de> SeqAccess<'de> for Items<'_> {
    type Error = Problem;

    fn next_element_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<Option<S::Value>, Problem> {
        let Tree::Array(items) = &self.de.node.tree else { return Ok(None) };
        while let Some(node) = items.get(self.next) {
            let index = self.next;
            self.next += 1;
            if !self.de.context.masked(&self.de.path, index) {
                let child = self.de.child(None, index, node);
                let path = child.path.clone();
                return seed.deserialize(child).map(Some).map_err(|problem| problem.placed(&path, node));
            }
        }
        Ok(None)
    }
}

/// [`At`]'s view of a node: its line, its column, then the value.
struct Placed<'a> {
    de: NodeDe<'a>,
    step: usize,
}

impl<'de> MapAccess<'de> for Placed<'_> {
    type Error = Problem;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Problem> {
        if self.step == 0 && self.de.node.at.is_none() {
            self.step = 2;
        }
        let key = match self.step {
            0 => "line",
            1 => "column",
            2 => "value",
            _ => return Ok(None),
        };
        seed.deserialize(key.into_deserializer()).map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, Problem> {
        let step = self.step;
        self.step += 1;
        let at = self.de.node.at.unwrap_or(Pos { line: 0, column: 0 });
        match step {
            0 => seed.deserialize(at.line.into_deserializer()),
            1 => seed.deserialize(at.column.into_deserializer()),
            _ => seed.deserialize(NodeDe { node: self.de.node, path: self.de.path.clone(), context: self.de.context }),
        }
    }
}

/// A string that is not blank, trimmed; `what` names it in a message (`"a path (a
/// string)"`).
pub fn text<'de, D: Deserializer<'de>>(deserializer: D, what: &'static str) -> Result<String, D::Error> {
    struct Text(&'static str);
    impl Visitor<'_> for Text {
        type Value = String;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
        fn visit_str<E: de::Error>(self, text: &str) -> Result<String, E> {
            match text.trim() {
                "" => Err(E::invalid_value(de::Unexpected::Str(text), &self)),
                text => Ok(text.to_string()),
            }
        }
    }
    deserializer.deserialize_str(Text(what))
}

/// A list of strings that are not blank, each trimmed; `items` names them and `list`
/// the list in a message (`"tool names (strings)"`, `"a list of tool names"`).
pub fn texts<'de, D: Deserializer<'de>>(
    deserializer: D,
    items: &'static str,
    list: &'static str,
) -> Result<Vec<String>, D::Error> {
    struct Item(&'static str);
    impl<'de> DeserializeSeed<'de> for Item {
        type Value = String;
        fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
            text(deserializer, self.0)
        }
    }
    struct Seen(&'static str, &'static str);
    impl<'de> Visitor<'de> for Seen {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.1)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<String>, A::Error> {
            let mut texts = Vec::new();
            while let Some(text) = seq.next_element_seed(Item(self.0))? {
                texts.push(text);
            }
            Ok(texts)
        }
    }
    deserializer.deserialize_seq(Seen(items, list))
}

/// `value` (JSON, without places) as a `T`, or the messages of its problems, worded
/// `style`: a declaration of a Python literal, a test's table.
pub fn read_json<T: DeserializeOwned>(value: Value, style: Style) -> Result<T, Vec<String>> {
    let mut errors = Vec::new();
    let read = Reader::new(Path::new(""), style, "", &mut errors).read(&Node::from_json(value));
    let messages: Vec<String> = errors
        .into_iter()
        .map(|error| match error {
            ConfigError::At { message, .. } | ConfigError::Option { message, .. } => message,
        })
        .collect();
    match read {
        Some(value) if messages.is_empty() => Ok(value),
        _ => Err(messages),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Table {
        #[serde(default)]
        flag: bool,
        #[serde(default)]
        count: u8,
        #[serde(default)]
        names: Vec<At<String>>,
    }

    #[test]
    fn every_problem_is_reported_at_its_place_and_the_rest_is_read() {
        let text = "flag = 1\ncount = 2\nnames = [\"a\", 3,\n  \"c\"]\ncolour = \"red\"\n";
        let node = Node::parse(text, false).unwrap();
        let mut errors = Vec::new();
        let table: Table = Reader::new(Path::new("f.toml"), Style::Is, "t", &mut errors).read(&node).unwrap();
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            messages,
            [
                "f.toml:1:1: `t.flag` is 1; expected true or false",
                "f.toml:3:15: `t.names` entries are a string, not 3",
                "f.toml:5:1: `t`: unknown key `colour`; expected flag, count or names",
            ]
        );
        assert_eq!(table.count, 2);
        let names: Vec<(&str, u32)> = table.names.iter().map(|n| (n.value.as_str(), n.at.unwrap().line)).collect();
        assert_eq!(names, [("a", 3), ("c", 4)]);
    }

    #[test]
    fn toml_and_json_read_the_same() {
        let toml = Node::parse("autonomy_level = \"strict\"\n[libraries.weather]\nkey = 1\n", false).unwrap();
        let json = Node::parse(r#"{"autonomy_level": "strict", "libraries": {"weather": {"key": 1}}}"#, true).unwrap();
        assert_eq!(toml.to_json(), json.to_json());
        let braces = Node::parse(r#"{"autonomy_level": "strict"}"#, false).unwrap();
        assert_eq!(braces.to_json(), serde_json::json!({"autonomy_level": "strict"}));
        let (at, message) = Node::parse("\nautonomy_level = \n", false).unwrap_err();
        assert!(message.starts_with("invalid TOML: "), "{message}");
        assert_eq!(at.map(|at| at.line), Some(2));
    }

    #[test]
    fn a_number_no_setting_can_take_is_refused_where_it_is_never_read_as_nothing() {
        // TOML's integers are 64-bit; lcp also takes an unsigned one up to `u64::MAX`.
        assert!(Node::parse("count = 18446744073709551615\n", false).is_ok());
        for (text, message) in [
            ("\ncount = 18446744073709551616\n", "the integer `18446744073709551616` does not fit in 64 bits"),
            ("\ncount = 0x1FFFFFFFFFFFFFFFF\n", "the integer `0x1FFFFFFFFFFFFFFFF` does not fit in 64 bits"),
            ("\n[t]\nseconds = [1, inf]\n", "`inf` is not a finite number"),
            ("\nseconds = nan\n", "`nan` is not a finite number"),
        ] {
            let (at, said) = Node::parse(text, false).unwrap_err();
            assert_eq!(said, format!("invalid TOML: {message}"), "{text:?}");
            assert_eq!(at.map(|at| at.line), Some(if text.contains("[t]") { 3 } else { 2 }), "{text:?}");
        }
        // A JSON file's integer beyond 64 bits: what the setting expects, as for any value.
        let node = Node::parse(r#"{"count": 18446744073709551616}"#, true).unwrap();
        let mut errors = Vec::new();
        let _: Option<Table> = Reader::new(Path::new("f.json"), Style::Is, "t", &mut errors).read(&node);
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(messages, ["f.json: `t.count` is 18446744073709551616; expected a whole number"]);
    }

    #[test]
    fn toml_entries_have_places() {
        let text = "[profiles.b]\ntools = [\n  \"x\",\n  \"y\",\n]\n\n[profiles.a.tools]\nr = \"x\"\n";
        let node = Node::parse(text, false).unwrap();
        let profiles = node.get("profiles").unwrap();
        let names: Vec<&str> = profiles.members().unwrap().iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(profiles.get("b").unwrap().at, Some(Pos { line: 1, column: 11 }));
        let Tree::Array(items) = &profiles.get("b").unwrap().get("tools").unwrap().tree else { panic!() };
        assert_eq!(items[1].at, Some(Pos { line: 4, column: 3 }));
        assert_eq!(profiles.get("a").unwrap().get("tools").unwrap().get("r").unwrap().at.map(|at| at.line), Some(8));
    }
}
