//! Annotations to JSON Schema (SPEC §3, the type table), from the AST alone.
//!
//! Owns name resolution through a module's imports and aliases (and, for a file of a
//! library folder, through relative imports into its sibling modules), the type table,
//! Enum / TypedDict / dataclass / BaseModel / NamedTuple classes, `Annotated` metadata,
//! pydantic's constrained and network types, and literal defaults. Recursive types go
//! to `$defs`. It never runs Python, never reads a file and never fails: a type it
//! cannot see into becomes `{}` (any JSON value) plus a warning naming it as written.
//! Every schema it makes is bounded ([`MAX_SCHEMA_DEPTH`], [`MAX_LITERAL_DEPTH`],
//! [`MAX_CONVERSIONS`]), so any JSON reader, lcp included, can read it back.

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::OnceLock;

use ruff_python_ast::{self as ast, Expr, Number, Operator, Stmt, UnaryOp};
use ruff_text_size::{Ranged, TextRange};
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

pub mod json;
pub mod named;

use json::{Map, Value, json};

/// A tool's parameters schema, kept as compact JSON text: a fraction of the memory
/// of a `serde_json::Value` tree, which holds a map per schema object.
///
/// [`SchemaText::parse`] makes a new `Value` each time, for code that reads a schema
/// once (exports); [`SchemaText::value`] parses it on first use and keeps the result,
/// for code that reads it again and again (the runtime checks every call's arguments).
#[derive(Clone)]
pub struct SchemaText {
    text: Box<RawValue>,
    parsed: OnceLock<serde_json::Value>,
}

impl SchemaText {
    /// `schema` as compact text.
    pub fn new(schema: &impl Serialize) -> SchemaText {
        let text = serde_json::value::to_raw_value(schema).expect("a Value always serializes");
        SchemaText { text, parsed: OnceLock::new() }
    }

    /// The compact JSON text.
    pub fn as_str(&self) -> &str {
        self.text.get()
    }

    /// The schema as a new `Value`.
    pub fn parse(&self) -> serde_json::Value {
        match self.parsed.get() {
            Some(value) => value.clone(),
            None => serde_json::from_str(self.text.get()).expect("the text was serialized from a Value"),
        }
    }

    /// The schema, parsed once and kept.
    pub fn value(&self) -> &serde_json::Value {
        self.parsed.get_or_init(|| serde_json::from_str(self.text.get()).expect("the text was serialized from a Value"))
    }
}

impl PartialEq for SchemaText {
    fn eq(&self, other: &SchemaText) -> bool {
        self.as_str() == other.as_str()
    }
}

impl fmt::Debug for SchemaText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for SchemaText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for SchemaText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.text.serialize(serializer)
    }
}

/// Deepest annotation followed; deeper ones are treated as unknown.
const MAX_ANNOTATION_DEPTH: usize = 64;

/// Deepest JSON nesting of the schema of one annotation (and of each `$defs` entry).
/// JSON readers refuse deep documents (serde_json, and so lcp itself, at 128 levels),
/// and a tool's export wraps its schemas in a few more levels: a deeper schema is
/// replaced by `{}` (any JSON value) with a warning.
pub const MAX_SCHEMA_DEPTH: usize = 64;

/// Deepest literal value carried (a default, a `Literal` member, a `Field` argument);
/// a deeper one is not treated as a literal, and a default is omitted with a warning.
pub const MAX_LITERAL_DEPTH: usize = 32;

/// Most annotation nodes converted for one tool. A class is inlined at each use, so
/// classes whose fields use the next class twice double the schema at every step:
/// past this many nodes, the rest are `{}` (any JSON value), with a warning.
pub const MAX_CONVERSIONS: usize = 10_000;

/// Why an expression has no JSON value.
enum NotLiteral {
    Expression,
    TooDeep,
}

/// Most imports followed from one name to its definition: re-exports chain, and two
/// modules may import from each other.
const MAX_IMPORT_HOPS: usize = 16;

/// What a module defines that annotations may refer to.
#[derive(Default)]
pub struct Scope<'a> {
    /// Local name → qualified name: `t` → `typing`, `Opt` → `typing.Optional`. A
    /// relative import keeps its dots: `from .models import Item` → `.models.Item`,
    /// `from . import models` → `.models`.
    pub imports: HashMap<&'a str, String>,
    /// Classes defined at module scope, by name.
    pub classes: HashMap<&'a str, &'a ast::StmtClassDef>,
    /// `Vector = list[float]`, `Vector: TypeAlias = ...`, `type Vector = ...`.
    pub aliases: HashMap<&'a str, &'a Expr>,
    /// `from typing import *` (or `typing_extensions`): typing's names are bound.
    pub typing_star: bool,
    /// Modules of `from M import *`, qualified like `imports` (`.models`).
    pub star_imports: Vec<String>,
}

/// The modules of one library folder by file stem, the tool's own included: where a
/// relative import (`from .models import Item`) finds its names.
pub type Siblings<'s, 'a> = [(&'s str, &'s Scope<'a>)];

/// A module whose definitions are in view: the tool's own, or a sibling.
#[derive(Clone, Copy)]
struct Module<'a, 's> {
    scope: &'s Scope<'a>,
    /// The sibling's file stem; `None` for the tool's own module.
    stem: Option<&'s str>,
}

/// What a name in an annotation stands for.
enum Resolved<'a, 's> {
    /// A qualified name (`builtins.str`, `typing.Optional`), borrowed from a module's
    /// imports when it needs no normalising.
    Qualified(Cow<'s, str>),
    Class(Module<'a, 's>, &'a str),
    /// A class defined in another class's body, with its dotted path (`Outer.Inner`).
    Nested(Module<'a, 's>, &'a ast::StmtClassDef, String),
    Alias(Module<'a, 's>, &'a str),
    /// A sibling module itself (`from . import models`).
    Module(Module<'a, 's>),
    Unknown(String),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ClassKind {
    Enum,
    TypedDict,
    Dataclass,
    BaseModel,
    NamedTuple,
    Plain,
}

/// What a `Field(...)` (pydantic) or `field(...)` (dataclasses) call says about the
/// parameter or field it is the default, or the `Annotated` metadata, of.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct FieldCall {
    /// A default or a factory is given, so the value may be left out.
    pub optional: bool,
    /// The default as JSON, when it is a value lcp can write down.
    pub default: Option<Value>,
    /// `validation_alias=` (else `alias=`) given as a string: the name callers use.
    pub alias: Option<String>,
    /// What a `default_factory` of a built-in container (`list`, `dict`, `set`, …)
    /// makes: how a model default that leaves the field out serialises it.
    pub made_by_factory: Option<Value>,
}

/// A class's fields as its lineage declares them, base classes first.
struct ClassFields {
    properties: Map,
    required: Vec<String>,
    /// Unknown keys are refused (`additionalProperties: false`).
    forbid_extra: bool,
}

/// Which field function a call is.
#[derive(Clone, Copy, PartialEq)]
enum FieldFunction {
    /// `pydantic.Field`: the default may be given by position.
    Pydantic,
    /// `dataclasses.field`: keywords only.
    Dataclasses,
}

/// Converts annotations of one tool; collects shared `$defs` and warnings.
pub struct Converter<'a, 's> {
    /// The module whose names are being resolved: the tool's own, or a sibling while
    /// one of its definitions is converted.
    current: Cell<Module<'a, 's>>,
    siblings: &'s Siblings<'s, 'a>,
    /// The `$defs` the converted annotations refer to.
    pub defs: Map,
    /// The named classes (TypedDict, dataclass, NamedTuple, model) inlined so far,
    /// each once: its definition key, its own name, its schema as inlined.
    classes: Vec<(String, &'a str, Value)>,
    /// What could not be converted, where.
    pub warnings: Vec<(TextRange, String)>,
    expanding: Vec<String>,
    /// The classes whose bodies are being read, innermost last, with the module each
    /// is in and its dotted path (`Outer.Inner`): a field's annotation sees the
    /// classes nested in its own class.
    enclosing: Vec<(Module<'a, 's>, &'a ast::StmtClassDef, String)>,
    /// The fields (as properties) of the classes being read whose `default_factory`
    /// makes a known value, innermost class last (see [`Converter::class_and_made`]).
    made_by_factory: Vec<(String, Value)>,
    recursive: HashSet<String>,
    /// Set while converting the inside of a string annotation, whose own ranges are
    /// relative to the string: warnings point at the string instead.
    string_range: Option<TextRange>,
    /// Annotation nodes converted so far, against [`MAX_CONVERSIONS`].
    conversions: usize,
    /// Set while converting a sibling's definition, whose ranges are in another
    /// file: warnings point at the tool's annotation that led there.
    sibling_range: Option<TextRange>,
}

impl<'a, 's> Converter<'a, 's> {
    /// A converter for annotations of a module on its own.
    pub fn new(scope: &'s Scope<'a>) -> Self {
        Converter::with_siblings(scope, &[])
    }

    /// A converter for a module of a library folder whose other modules are `siblings`.
    pub fn with_siblings(scope: &'s Scope<'a>, siblings: &'s Siblings<'s, 'a>) -> Self {
        Converter {
            current: Cell::new(Module { scope, stem: None }),
            siblings,
            defs: Map::new(),
            classes: Vec::new(),
            warnings: Vec::new(),
            expanding: Vec::new(),
            enclosing: Vec::new(),
            made_by_factory: Vec::new(),
            recursive: HashSet::new(),
            string_range: None,
            conversions: 0,
            sibling_range: None,
        }
    }

    /// The schema of an annotation, and its `Annotated` / `Field` description if any.
    pub fn annotation(&mut self, expr: &Expr) -> (Value, Option<String>) {
        let mut description = None;
        let schema = self.convert(expr, 0, &mut description);
        (self.within_depth(expr.range(), schema), description)
    }

    /// `schema`, or `{}` with a warning when it is nested deeper than [`MAX_SCHEMA_DEPTH`].
    fn within_depth(&mut self, range: TextRange, schema: Value) -> Value {
        if schema.depth() <= MAX_SCHEMA_DEPTH {
            return schema;
        }
        let message = format!(
            "annotation nested too deeply (its schema would be more than {MAX_SCHEMA_DEPTH} levels deep): accepted as any JSON value"
        );
        self.warn(range, message);
        json!({})
    }

    /// The fields of `Unpack[TD]` (PEP 692 `**kwargs`) with the names among them that
    /// are required; `None`, with a warning, when TD is not a TypedDict.
    pub fn unpacked(&mut self, annotation: &Expr) -> Option<(Map, Vec<String>)> {
        let Expr::Subscript(sub) = annotation else { return None };
        if !self.is_qualified(&sub.value, "typing.Unpack") {
            return None;
        }
        let target = slice_args(sub).into_iter().next()?;
        let is_typed_dict =
            match self.resolve(target) {
                Some(Resolved::Class(module, name)) => module.scope.classes.get(name).is_some_and(|class| {
                    self.peek_in(module, |this| this.class_kind(class, 0)) == ClassKind::TypedDict
                }),
                _ => false,
            };
        if !is_typed_dict {
            let text = expression_text(target);
            self.warn(target.range(), format!("`Unpack[{text}]` needs a TypedDict: any keyword is accepted"));
            return None;
        }
        let mut schema = self.convert(target, 1, &mut None);
        // A recursive TypedDict is a reference to its definition.
        if let Some(name) = schema.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/$defs/")) {
            schema = self.defs.get(name).cloned().unwrap_or_default();
        }
        let fields = schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
        let required = schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str).map(String::from);
        Some((fields, required.collect()))
    }

    /// The JSON value of a literal, if it is one (nested at most [`MAX_LITERAL_DEPTH`] levels).
    pub fn literal(&self, expr: &Expr) -> Option<Value> {
        self.literal_value(expr, MAX_LITERAL_DEPTH, true).ok()
    }

    /// The JSON value of a literal default; one nested deeper than [`MAX_LITERAL_DEPTH`]
    /// levels is omitted with a warning (the parameter stays optional).
    pub fn default(&mut self, expr: &Expr) -> Option<Value> {
        self.default_within(expr, MAX_LITERAL_DEPTH)
    }

    fn default_within(&mut self, expr: &Expr, room: usize) -> Option<Value> {
        match self.literal_value(expr, room, true) {
            Ok(value) => Some(value),
            Err(NotLiteral::TooDeep) => {
                let message = format!("default nested more than {MAX_LITERAL_DEPTH} levels deep: omitted");
                self.warn(expr.range(), message);
                None
            }
            Err(NotLiteral::Expression) => match expr {
                Expr::Call(call) if room > 1 => self.call_default(call, room - 1),
                _ => None,
            },
        }
    }

    /// A default that calls a known type with literal arguments, as pydantic
    /// serialises the value it makes: `frozenset({1, 2})` → `[1, 2]`,
    /// `Decimal("12.34")` → `"12.34"`, `datetime(2024, 1, 1)` →
    /// `"2024-01-01T00:00:00"`, `Model(x=1)` → the model's fields with their defaults.
    fn call_default(&mut self, call: &ast::ExprCall, room: usize) -> Option<Value> {
        let args = &call.arguments;
        let literal = |this: &Self, expr: &Expr| this.literal_value(expr, room, true).ok();
        match self.resolve(&call.func)? {
            Resolved::Qualified(q) => match &*q {
                "builtins.list" | "builtins.tuple" | "builtins.set" | "builtins.frozenset" => {
                    match (args.args.as_ref(), args.keywords.is_empty()) {
                        ([], true) => Some(json!([])),
                        ([only], true) if !matches!(only, Expr::StringLiteral(_) | Expr::Dict(_)) => {
                            literal(self, only).filter(|v| matches!(v, Value::Array(_)))
                        }
                        _ => None,
                    }
                }
                "builtins.dict" if args.args.is_empty() => {
                    let mut map = Map::new();
                    for keyword in &args.keywords {
                        map.insert(keyword.arg.as_ref()?.to_string(), self.default_within(&keyword.value, room)?);
                    }
                    Some(Value::Object(map))
                }
                "decimal.Decimal" if args.keywords.is_empty() => match args.args.as_ref() {
                    [Expr::StringLiteral(text)] => decimal_text(text.value.to_str()).map(Value::from),
                    [number @ Expr::NumberLiteral(_)] => {
                        literal(self, number).and_then(|n| n.as_i64()).map(|n| Value::from(n.to_string()))
                    }
                    _ => None,
                },
                "uuid.UUID" if args.keywords.is_empty() => match args.args.as_ref() {
                    [Expr::StringLiteral(text)] => canonical_uuid(text.value.to_str()).map(Value::from),
                    _ => None,
                },
                "datetime.datetime" | "datetime.date" | "datetime.time" => {
                    let parts = date_time_parts(&q, call, |expr| literal(self, expr).and_then(|v| v.as_i64()))?;
                    Some(Value::from(parts))
                }
                _ => None,
            },
            Resolved::Class(module, name) => {
                let class = *module.scope.classes.get(name)?;
                self.instance_default(module, class, name.to_string(), call, room)
            }
            Resolved::Nested(module, class, path) => self.instance_default(module, class, path, call, room),
            _ => None,
        }
    }

    /// `Model()`, `Model(x=1)`, `Point(1, 2)` as a default: every field of the class,
    /// in order, under its property name, from the call or the field's own default.
    /// `None` when a field has neither, or the call names what the class does not have.
    fn instance_default(
        &mut self,
        module: Module<'a, 's>,
        class: &'a ast::StmtClassDef,
        path: String,
        call: &ast::ExprCall,
        room: usize,
    ) -> Option<Value> {
        let kind = self.peek_in(module, |this| this.class_kind(class, 0));
        if !matches!(kind, ClassKind::BaseModel | ClassKind::Dataclass | ClassKind::NamedTuple) {
            return None;
        }
        // Reading the class for its defaults leaves no trace in the tool's schema.
        let (classes, warnings, conversions) = (self.classes.len(), self.warnings.len(), self.conversions);
        let (schema, made) = self.class_and_made(module, class, path, call.range(), 0);
        self.classes.truncate(classes);
        self.warnings.truncate(warnings);
        self.conversions = conversions;
        let properties = schema.get("properties").and_then(Value::as_object)?;
        // A model takes keywords only; a dataclass or named tuple its fields in order.
        if kind == ClassKind::BaseModel && !call.arguments.args.is_empty() {
            return None;
        }
        let mut given: Vec<(&str, &Expr)> = Vec::new();
        for (arg, (property, _)) in call.arguments.args.iter().zip(properties.iter()) {
            given.push((property.as_ref(), arg));
        }
        if call.arguments.args.len() > properties.len() {
            return None;
        }
        for keyword in &call.arguments.keywords {
            given.push((keyword.arg.as_ref()?.as_str(), &keyword.value));
        }
        if given.iter().any(|(name, _)| !properties.contains_key(name)) {
            return None;
        }
        let mut value = Map::new();
        for (property, field) in properties.iter() {
            let field_value = match given.iter().find(|(name, _)| *name == property.as_ref()) {
                Some((_, expr)) => self.default_within(expr, room)?,
                None => match field.get("default") {
                    Some(default) => default.clone(),
                    None => made.iter().find(|(name, _)| name == property).map(|(_, v)| v.clone())?,
                },
            };
            value.insert(property.to_string(), field_value);
        }
        Some(Value::Object(value))
    }

    /// The JSON value of a literal with at most `room` levels of nesting (a scalar or
    /// an empty container is one level). `members`: whether a same-file Enum member
    /// (`Color.RED`) counts as its value; never inside an Enum's own body, where a
    /// member naming another member would make the reading go round in circles.
    fn literal_value(&self, expr: &Expr, room: usize, members: bool) -> Result<Value, NotLiteral> {
        if room == 0 {
            return Err(NotLiteral::TooDeep);
        }
        let items = |elts: &[Expr]| {
            elts.iter().map(|e| self.literal_value(e, room - 1, members)).collect::<Result<Vec<_>, _>>()
        };
        let value = match expr {
            Expr::StringLiteral(s) => Value::from(s.value.to_str()),
            Expr::BytesLiteral(b) => {
                let bytes: Vec<u8> = b.value.as_slice().iter().flat_map(|p| p.value.iter().copied()).collect();
                Value::from(String::from_utf8_lossy(&bytes).into_owned())
            }
            Expr::NumberLiteral(n) => number_value(&n.value).ok_or(NotLiteral::Expression)?,
            Expr::BooleanLiteral(b) => Value::Bool(b.value),
            Expr::NoneLiteral(_) => Value::Null,
            Expr::UnaryOp(u) if matches!(u.op, UnaryOp::USub | UnaryOp::UAdd) => {
                let Expr::NumberLiteral(n) = &*u.operand else { return Err(NotLiteral::Expression) };
                let value = number_value(&n.value).ok_or(NotLiteral::Expression)?;
                let negated = if u.op == UnaryOp::UAdd {
                    Some(value)
                } else if let Some(i) = value.as_i64() {
                    i.checked_neg().map(Value::from)
                } else {
                    value.as_f64().map(|f| Value::from(-f))
                };
                negated.ok_or(NotLiteral::Expression)?
            }
            Expr::Tuple(t) => Value::Array(items(&t.elts)?),
            Expr::List(l) => Value::Array(items(&l.elts)?),
            Expr::Set(s) => Value::Array(items(&s.elts)?),
            Expr::Dict(d) => {
                let mut map = Map::new();
                for item in &d.items {
                    let Some(Expr::StringLiteral(key)) = &item.key else { return Err(NotLiteral::Expression) };
                    map.insert(key.value.to_str().to_string(), self.literal_value(&item.value, room - 1, members)?);
                }
                Value::Object(map)
            }
            Expr::Attribute(_) if !members => return Err(NotLiteral::Expression),
            Expr::Attribute(attr) => {
                // An enum member's value is a literal of its own: measured here.
                let value = self.enum_member_value(attr).ok_or(NotLiteral::Expression)?;
                if value.depth() > room {
                    return Err(NotLiteral::TooDeep);
                }
                value
            }
            _ => return Err(NotLiteral::Expression),
        };
        Ok(value)
    }

    /// The schema of an unannotated parameter: the type of its literal default, else
    /// `string` (the LCP convention).
    pub fn inferred_from_default(&self, default: Option<&Expr>) -> Value {
        let Some(default) = default else { return json!({ "type": "string" }) };
        let kind = match self.literal_value(default, MAX_LITERAL_DEPTH, true) {
            Ok(Value::Bool(_)) => "boolean",
            Ok(Value::Number(n)) if n.is_i64() || n.is_u64() => "integer",
            Ok(Value::Number(_)) => "number",
            Ok(Value::Array(_)) => "array",
            Ok(Value::Object(_)) => "object",
            // A literal too deep to carry still says what it is.
            Err(NotLiteral::TooDeep) if matches!(default, Expr::Tuple(_) | Expr::List(_) | Expr::Set(_)) => "array",
            Err(NotLiteral::TooDeep) if matches!(default, Expr::Dict(_)) => "object",
            _ => "string",
        };
        json!({ "type": kind })
    }

    fn warn(&mut self, range: TextRange, message: String) {
        self.warnings.push((self.sibling_range.or(self.string_range).unwrap_or(range), message));
    }

    /// Runs `f` with `module`'s names in view; warnings from a sibling's definitions
    /// point at `range`, the place in the tool's file that led there.
    fn in_module<R>(&mut self, module: Module<'a, 's>, range: TextRange, f: impl FnOnce(&mut Self) -> R) -> R {
        let outer = self.current.replace(module);
        let anchored = module.stem.is_some() && self.sibling_range.is_none();
        if anchored {
            self.sibling_range = Some(self.string_range.unwrap_or(range));
        }
        let result = f(self);
        if anchored {
            self.sibling_range = None;
        }
        self.current.set(outer);
        result
    }

    /// [`Self::in_module`] for code that only reads.
    fn peek_in<R>(&self, module: Module<'a, 's>, f: impl FnOnce(&Self) -> R) -> R {
        let outer = self.current.replace(module);
        let result = f(self);
        self.current.set(outer);
        result
    }

    fn unknown(&mut self, expr: &Expr, name: &str) -> Value {
        self.warn(expr.range(), format!("unknown type `{name}`: accepted as any JSON value"));
        json!({})
    }

    fn convert(&mut self, expr: &Expr, depth: usize, description: &mut Option<String>) -> Value {
        self.conversions += 1;
        if self.conversions > MAX_CONVERSIONS {
            if self.conversions == MAX_CONVERSIONS + 1 {
                let message = format!(
                    "the types of this tool expand to more than {MAX_CONVERSIONS} schemas: the rest are accepted as any JSON value"
                );
                self.warn(expr.range(), message);
            }
            return json!({});
        }
        if depth > MAX_ANNOTATION_DEPTH {
            self.warn(expr.range(), "annotation nested too deeply: accepted as any JSON value".into());
            return json!({});
        }
        match expr {
            Expr::NoneLiteral(_) => json!({ "type": "null" }),
            Expr::StringLiteral(s) => self.string_annotation(s, depth, description),
            Expr::BinOp(b) if b.op == Operator::BitOr => {
                let members = [&*b.left, &*b.right];
                self.union(members.into_iter(), depth)
            }
            Expr::Subscript(sub) => self.subscript(sub, depth, description),
            Expr::Name(_) | Expr::Attribute(_) => match self.resolve(expr) {
                Some(Resolved::Qualified(q)) => self.named(expr, &q),
                Some(Resolved::Class(module, name)) => match module.scope.classes.get(name) {
                    Some(&class) => self.class(module, class, name.to_string(), expr.range(), depth),
                    None => json!({}),
                },
                Some(Resolved::Nested(module, class, path)) => self.class(module, class, path, expr.range(), depth),
                Some(Resolved::Alias(module, name)) => self.alias(module, name, expr.range(), depth, description),
                Some(Resolved::Module(_)) => self.unknown(expr, &expression_text(expr)),
                Some(Resolved::Unknown(name)) => self.unknown(expr, &name),
                None => self.unknown(expr, "?"),
            },
            Expr::Call(call) => match self.resolve(&call.func) {
                Some(Resolved::Qualified(q)) if constrained_kind(&q).is_some() => self.constrained(&q, call, depth),
                _ => {
                    let text = expression_text(expr);
                    self.unknown(expr, &text)
                }
            },
            Expr::EllipsisLiteral(_) => json!({}),
            other => {
                let text = expression_text(other);
                self.unknown(other, &text)
            }
        }
    }

    fn string_annotation(
        &mut self,
        s: &ast::ExprStringLiteral,
        depth: usize,
        description: &mut Option<String>,
    ) -> Value {
        let text = s.value.to_str();
        let Ok(parsed) = ruff_python_parser::parse_expression(text.trim()) else {
            self.warn(s.range, format!("string annotation `{text}` does not parse: accepted as any JSON value"));
            return json!({});
        };
        let outer = self.string_range.replace(s.range);
        let schema = self.convert(parsed.expr(), depth + 1, description);
        self.string_range = outer;
        schema
    }

    /// A bare name with no subscript.
    fn named(&mut self, expr: &Expr, qualified: &str) -> Value {
        match qualified {
            "builtins.str" | "typing.Text" | "builtins.bytes" | "builtins.bytearray" => json!({ "type": "string" }),
            "builtins.int" => json!({ "type": "integer" }),
            "builtins.float" => json!({ "type": "number" }),
            "builtins.bool" => json!({ "type": "boolean" }),
            "builtins.None" | "types.NoneType" => json!({ "type": "null" }),
            "typing.Any" | "builtins.object" => json!({}),
            "datetime.datetime" => json!({ "type": "string", "format": "date-time" }),
            "datetime.date" => json!({ "type": "string", "format": "date" }),
            "datetime.time" => json!({ "type": "string", "format": "time" }),
            "datetime.timedelta" => json!({ "type": "string", "format": "duration" }),
            "uuid.UUID" => json!({ "type": "string", "format": "uuid" }),
            "decimal.Decimal" => decimal(Map::new(), None, None),
            q if is_path(q) => json!({ "type": "string" }),
            q if let Some(schema) = vocabulary(q) => schema,
            q => match container(q) {
                Some(Container::Array) | Some(Container::Tuple) => json!({ "type": "array" }),
                Some(Container::Set) => json!({ "type": "array", "uniqueItems": true }),
                Some(Container::Object) => json!({ "type": "object" }),
                None => self.unknown(expr, q),
            },
        }
    }

    fn subscript(&mut self, sub: &ast::ExprSubscript, depth: usize, description: &mut Option<String>) -> Value {
        let args: Vec<&Expr> = match &*sub.slice {
            Expr::Tuple(t) => t.elts.iter().collect(),
            other => vec![other],
        };
        let qualified = match self.resolve(&sub.value) {
            Some(Resolved::Qualified(q)) => q,
            Some(Resolved::Alias(module, name)) => {
                // A generic alias used with arguments: use the alias itself.
                return self.alias(module, name, sub.value.range(), depth, description);
            }
            _ => {
                let text = expression_text(&sub.value);
                return self.unknown(&sub.value, &text);
            }
        };
        match &*qualified {
            "typing.Optional" => {
                let inner = self.union(args.into_iter(), depth);
                nullable(inner)
            }
            "typing.Union" => self.union(args.into_iter(), depth),
            "typing.Literal" => {
                let mut values = Vec::new();
                self.literal_values(&args, &mut values);
                values.dedup();
                if values.is_empty() {
                    self.warn(sub.range, "`Literal` with no values: accepted as any JSON value".into());
                    return json!({});
                }
                enum_schema(values)
            }
            "typing.Annotated" => self.annotated(&args, depth, description),
            // `Json[T]`: text holding a JSON document that is a `T`.
            "pydantic.Json" => {
                let content = args.first().map(|a| self.convert(a, depth + 1, &mut None));
                let mut schema = json!({ "type": "string", "contentMediaType": "application/json" });
                if let Some(content) = content.filter(|c| c != &json!({})) {
                    schema["contentSchema"] = content;
                }
                schema
            }
            "typing.Required" | "typing.NotRequired" | "typing.ReadOnly" | "typing.Final" | "typing.ClassVar" => {
                match args.first() {
                    Some(inner) => self.convert(inner, depth + 1, description),
                    None => json!({}),
                }
            }
            "builtins.type" | "typing.Type" => self.unknown(&sub.value, &qualified),
            q => match container(q) {
                Some(Container::Array) => {
                    let items = args.first().map(|a| self.convert(a, depth + 1, &mut None));
                    array(items)
                }
                Some(Container::Set) => {
                    let items = args.first().map(|a| self.convert(a, depth + 1, &mut None));
                    let mut schema = array(items);
                    schema["uniqueItems"] = Value::Bool(true);
                    schema
                }
                Some(Container::Tuple) => self.tuple(&args, depth),
                Some(Container::Object) => {
                    let mut schema = json!({ "type": "object" });
                    if let Some(value) = args.get(1) {
                        let value = self.convert(value, depth + 1, &mut None);
                        if value != json!({}) {
                            schema["additionalProperties"] = value;
                        }
                    }
                    schema
                }
                None => {
                    let text = expression_text(&sub.value);
                    self.unknown(&sub.value, &text)
                }
            },
        }
    }

    fn tuple(&mut self, args: &[&Expr], depth: usize) -> Value {
        match args {
            [item, Expr::EllipsisLiteral(_)] => {
                let items = self.convert(item, depth + 1, &mut None);
                array(Some(items))
            }
            // `tuple[()]` is the empty tuple.
            [] => json!({ "type": "array", "maxItems": 0 }),
            _ => {
                let items: Vec<Value> = args.iter().map(|a| self.convert(a, depth + 1, &mut None)).collect();
                let n = items.len();
                let n = Value::from(n);
                object([
                    ("type", json!("array")),
                    ("prefixItems", Value::Array(items)),
                    ("minItems", n.clone()),
                    ("maxItems", n),
                    ("items", Value::Bool(false)),
                ])
            }
        }
    }

    fn union<'e>(&mut self, members: impl Iterator<Item = &'e Expr>, depth: usize) -> Value {
        let mut branches: Vec<Value> = Vec::new();
        for member in members {
            let schema = self.convert(member, depth + 1, &mut None);
            let flattened = match schema.get("anyOf").and_then(Value::as_array) {
                Some(inner) if schema.as_object().is_some_and(|o| o.len() == 1) => inner.clone(),
                _ => vec![schema],
            };
            for branch in flattened {
                if !branches.contains(&branch) {
                    branches.push(branch);
                }
            }
        }
        if branches.iter().any(|b| b == &json!({})) {
            return json!({});
        }
        match branches.len() {
            1 => branches.remove(0),
            _ => object([("anyOf", Value::Array(branches))]),
        }
    }

    /// The values of `Literal[...]`'s arguments, nested `Literal`s flattened.
    fn literal_values(&mut self, args: &[&Expr], values: &mut Vec<Value>) {
        for arg in args {
            match arg {
                Expr::Subscript(inner) if self.is_qualified(&inner.value, "typing.Literal") => {
                    self.literal_values(&slice_args(inner), values);
                }
                _ => match self.literal(arg) {
                    Some(value) => values.push(value),
                    None => {
                        let text = expression_text(arg);
                        self.warn(arg.range(), format!("`Literal` value `{text}` is not a literal: ignored"));
                    }
                },
            }
        }
    }

    fn annotated(&mut self, args: &[&Expr], depth: usize, description: &mut Option<String>) -> Value {
        let Some((inner, metadata)) = args.split_first() else { return json!({}) };
        let mut schema = self.convert(inner, depth + 1, description);
        for meta in metadata {
            match meta {
                Expr::StringLiteral(s) => {
                    description.get_or_insert_with(|| s.value.to_str().to_string());
                }
                Expr::Call(call) => self.apply_call_metadata(call, &mut schema, description),
                _ => {}
            }
        }
        schema
    }

    /// `Field(description=..., ge=...)`, `annotated_types.Ge(1)`, `Doc("...")`.
    fn apply_call_metadata(&mut self, call: &ast::ExprCall, schema: &mut Value, description: &mut Option<String>) {
        let Some(Resolved::Qualified(q)) = self.resolve(&call.func) else { return };
        let name = q.rsplit('.').next().unwrap_or_default();
        let positional = call.arguments.args.first().and_then(|a| self.literal(a));
        match name {
            "Field" => {
                self.field_call(call, FieldFunction::Pydantic, schema, description);
            }
            // `StringConstraints(min_length=1, pattern=...)`: the bounds a `constr` carries.
            "StringConstraints" => {
                for keyword in &call.arguments.keywords {
                    if let (Some(arg), Some(value)) = (&keyword.arg, self.literal(&keyword.value)) {
                        apply_constraint(schema, arg.as_str(), value);
                    }
                }
            }
            "Doc" => {
                if let Some(text) = positional.as_ref().and_then(Value::as_str) {
                    description.get_or_insert_with(|| text.to_string());
                }
            }
            "Ge" | "Gt" | "Le" | "Lt" | "MultipleOf" | "MinLen" | "MaxLen" => {
                if let Some(value) = positional {
                    let key = match name {
                        "Ge" => "ge",
                        "Gt" => "gt",
                        "Le" => "le",
                        "Lt" => "lt",
                        "MultipleOf" => "multiple_of",
                        "MinLen" => "min_length",
                        _ => "max_length",
                    };
                    apply_constraint(schema, key, value);
                }
            }
            "Len" | "Interval" => {
                let positional_keys: &[&str] =
                    if name == "Len" { &["min_length", "max_length"] } else { &["gt", "ge", "lt", "le"] };
                for (arg, key) in call.arguments.args.iter().zip(positional_keys) {
                    if let Some(value) = self.literal(arg) {
                        apply_constraint(schema, key, value);
                    }
                }
                for keyword in &call.arguments.keywords {
                    if let (Some(arg), Some(value)) = (&keyword.arg, self.literal(&keyword.value)) {
                        apply_constraint(schema, arg.as_str(), value);
                    }
                }
            }
            _ => {}
        }
    }

    /// `conint(ge=1)`, `constr(max_length=5)`, `conlist(int, min_length=1)`,
    /// `condecimal(max_digits=5, decimal_places=2)`: the base type and its bounds.
    fn constrained(&mut self, qualified: &str, call: &ast::ExprCall, depth: usize) -> Value {
        let Some(kind) = constrained_kind(qualified) else { return json!({}) };
        let mut bounds: Vec<(&str, Value)> = Vec::new();
        for keyword in &call.arguments.keywords {
            let Some(arg) = &keyword.arg else { continue };
            let Some(value) = self.literal(&keyword.value) else { continue };
            // pydantic 1 spelled some of them differently.
            let key = match arg.as_str() {
                "regex" => "pattern",
                "min_items" => "min_length",
                "max_items" => "max_length",
                key => key,
            };
            bounds.push((key, value));
        }
        let mut schema = match kind {
            "integer" | "number" | "string" => json!({ "type": kind }),
            "date" => json!({ "type": "string", "format": "date" }),
            "decimal" => {
                let digits = |name: &str| bounds.iter().find(|(k, _)| *k == name).and_then(|(_, v)| v.as_u64());
                let (max_digits, places) = (digits("max_digits"), digits("decimal_places"));
                let numeric = bounds.iter().filter(|(k, _)| is_numeric_bound(k)).cloned();
                return decimal(numeric.map(|(k, v)| (k.to_string(), v)).collect(), max_digits, places);
            }
            _ => {
                let item = call
                    .arguments
                    .args
                    .first()
                    .or_else(|| call.arguments.find_keyword("item_type").map(|k| &k.value))
                    .map(|item| self.convert(item, depth + 1, &mut None));
                let mut schema = array(item);
                if kind == "set" {
                    schema["uniqueItems"] = Value::Bool(true);
                }
                schema
            }
        };
        for (key, value) in bounds {
            apply_constraint(&mut schema, key, value);
        }
        schema
    }

    fn alias(
        &mut self,
        module: Module<'a, 's>,
        name: &'a str,
        range: TextRange,
        depth: usize,
        description: &mut Option<String>,
    ) -> Value {
        let Some(&value) = module.scope.aliases.get(name) else { return json!({}) };
        let key = definition_key(module, name);
        self.in_module(module, range, |this| {
            this.expand(&key, value.range(), |this| this.convert(value, depth + 1, description))
        })
    }

    /// Expands a named definition (written at `range`) once; a reference to it from
    /// inside itself becomes `$ref` and the definition moves to `$defs`.
    fn expand(&mut self, name: &str, range: TextRange, build: impl FnOnce(&mut Self) -> Value) -> Value {
        let reference = Value::object([("$ref", Value::from(format!("#/$defs/{name}")))]);
        if self.defs.contains_key(name) {
            return reference;
        }
        if self.expanding.iter().any(|n| n == name) {
            self.recursive.insert(name.to_string());
            return reference;
        }
        self.expanding.push(name.to_string());
        let schema = build(self);
        self.expanding.pop();
        if self.recursive.contains(name) {
            let schema = self.within_depth(range, schema);
            self.defs.insert(name.to_string(), schema);
            return reference;
        }
        schema
    }

    fn class(
        &mut self,
        module: Module<'a, 's>,
        class: &'a ast::StmtClassDef,
        path: String,
        range: TextRange,
        depth: usize,
    ) -> Value {
        self.class_and_made(module, class, path, range, depth).0
    }

    /// [`Converter::class`], with the values its fields' `default_factory` make.
    fn class_and_made(
        &mut self,
        module: Module<'a, 's>,
        class: &'a ast::StmtClassDef,
        path: String,
        range: TextRange,
        depth: usize,
    ) -> (Value, Vec<(String, Value)>) {
        let mark = self.made_by_factory.len();
        let schema = self.class_schema(module, class, path, range, depth);
        (schema, self.made_by_factory.split_off(mark))
    }

    fn class_schema(
        &mut self,
        module: Module<'a, 's>,
        class: &'a ast::StmtClassDef,
        path: String,
        range: TextRange,
        depth: usize,
    ) -> Value {
        let name = class.name.as_str();
        let key = definition_key(module, &path);
        self.in_module(module, range, |this| match this.class_kind(class, 0) {
            ClassKind::Enum => this.enum_class(class),
            ClassKind::Plain => {
                this.warn(class.name.range, format!("class `{name}` is not an Enum, TypedDict, dataclass, BaseModel or NamedTuple: accepted as any JSON value"));
                json!({})
            }
            kind => {
                let schema = this.expand(&key, class.name.range, |this| this.object_class(class, &path, kind, depth));
                if schema.get("$ref").is_none() {
                    this.remember_class(&key, name, &schema);
                }
                schema
            }
        })
    }

    /// Records a class inlined as `schema` for [`named::hoist`], once per class.
    fn remember_class(&mut self, key: &str, name: &'a str, schema: &Value) {
        if !self.classes.iter().any(|(known, ..)| known == key) {
            self.classes.push((key.to_string(), name, schema.clone()));
        }
    }

    /// The named classes inlined, with their schemas as inlined, for [`named::hoist`]:
    /// each under its own name, unless another class of the tool or a recursive
    /// definition has that name; then under its definition key (`stem.Name` for a
    /// sibling module's class), which no other has.
    pub fn named_classes(&self) -> Vec<(String, &Value)> {
        let shared = |name: &str| {
            self.classes.iter().filter(|(_, other, _)| *other == name).count() > 1
                || self.defs.keys().any(|key| key == name)
        };
        let shown = |key: &str, name: &str| if shared(name) { key.to_string() } else { name.to_string() };
        self.classes.iter().map(|(key, name, schema)| (shown(key, name), schema)).collect()
    }

    /// Resolves in the module being converted (see `current`).
    fn class_kind(&self, class: &ast::StmtClassDef, depth: usize) -> ClassKind {
        if depth > MAX_ANNOTATION_DEPTH {
            return ClassKind::Plain;
        }
        for decorator in &class.decorator_list {
            let target = match &decorator.expression {
                Expr::Call(call) => &*call.func,
                other => other,
            };
            if let Some(Resolved::Qualified(q)) = self.resolve(target)
                && matches!(&*q, "dataclasses.dataclass" | "pydantic.dataclasses.dataclass")
            {
                return ClassKind::Dataclass;
            }
        }
        for base in class.bases() {
            let kind = match self.resolve(base) {
                Some(Resolved::Qualified(q)) => match &*q {
                    "enum.Enum" | "enum.StrEnum" | "enum.IntEnum" | "enum.Flag" | "enum.IntFlag" => ClassKind::Enum,
                    "typing.TypedDict" => ClassKind::TypedDict,
                    "typing.NamedTuple" => ClassKind::NamedTuple,
                    "pydantic.BaseModel" | "pydantic.main.BaseModel" => ClassKind::BaseModel,
                    _ => ClassKind::Plain,
                },
                Some(Resolved::Class(module, local)) => match module.scope.classes.get(local) {
                    Some(parent) if !std::ptr::eq(*parent, class) => {
                        self.peek_in(module, |this| this.class_kind(parent, depth + 1))
                    }
                    _ => ClassKind::Plain,
                },
                _ => ClassKind::Plain,
            };
            if kind != ClassKind::Plain {
                return kind;
            }
        }
        ClassKind::Plain
    }

    fn enum_class(&mut self, class: &ast::StmtClassDef) -> Value {
        let values = self.enum_members(class).into_iter().map(|(_, value)| value).collect();
        enum_schema(values)
    }

    /// Members of a same-file Enum with their values; `auto()` numbers from 1, or
    /// gives the lower-cased name for a `StrEnum`.
    fn enum_members(&self, class: &ast::StmtClassDef) -> Vec<(String, Value)> {
        let is_str_enum = class
            .bases()
            .iter()
            .any(|b| matches!(self.resolve(b), Some(Resolved::Qualified(q)) if q == "enum.StrEnum"));
        let mut members = Vec::new();
        let mut next_auto = 1i64;
        for stmt in &class.body {
            let (target, value) = match stmt {
                Stmt::Assign(a) if a.targets.len() == 1 => (&a.targets[0], &*a.value),
                Stmt::AnnAssign(a) => match &a.value {
                    Some(value) => (&*a.target, &**value),
                    None => continue,
                },
                _ => continue,
            };
            let Expr::Name(target) = target else { continue };
            let name = target.id.as_str();
            if name.starts_with('_') {
                continue;
            }
            let is_auto = matches!(value, Expr::Call(call) if matches!(self.resolve(&call.func), Some(Resolved::Qualified(q)) if q == "enum.auto"));
            let member = if is_auto {
                if is_str_enum {
                    Value::from(name.to_lowercase())
                } else {
                    next_auto += 1;
                    Value::from(next_auto - 1)
                }
            } else {
                match self.literal_value(value, MAX_LITERAL_DEPTH, false).ok() {
                    Some(v) => {
                        if let Some(i) = v.as_i64() {
                            next_auto = i + 1;
                        }
                        v
                    }
                    None => continue,
                }
            };
            members.push((name.to_string(), member));
        }
        members
    }

    fn enum_member_value(&self, attr: &ast::ExprAttribute) -> Option<Value> {
        let Some(Resolved::Class(module, name)) = self.resolve(&attr.value) else { return None };
        let class = module.scope.classes.get(name)?;
        self.peek_in(module, |this| {
            if this.class_kind(class, 0) != ClassKind::Enum {
                return None;
            }
            this.enum_members(class)
                .into_iter()
                .find(|(member, _)| member == attr.attr.as_str())
                .map(|(_, value)| value)
        })
    }

    /// The object schema of a class (`path`: its dotted name in its module, `Outer.Inner`).
    fn object_class(&mut self, class: &'a ast::StmtClassDef, path: &str, kind: ClassKind, depth: usize) -> Value {
        let mut fields =
            ClassFields { properties: Map::new(), required: Vec::new(), forbid_extra: kind != ClassKind::BaseModel };
        let mut lineage = Vec::new();
        self.lineage(self.current.get(), class, &mut lineage, 0);
        let range = class.name.range;
        for (module, ancestor) in lineage {
            self.in_module(module, range, |this| {
                let path = if std::ptr::eq(ancestor, class) { path.to_string() } else { ancestor.name.to_string() };
                this.ancestor_fields(ancestor, path, kind, depth, &mut fields)
            });
        }
        let required = Value::Array(fields.required.into_iter().map(Value::from).collect());
        let properties = Value::Object(fields.properties);
        let mut schema = object([("type", json!("object")), ("properties", properties), ("required", required)]);
        if fields.forbid_extra {
            schema["additionalProperties"] = Value::Bool(false);
        }
        if let Some(doc) = docstring_of(&class.body) {
            let prose = crate::docstring::parse(doc).prose;
            if !prose.is_empty() {
                set_description(&mut schema, prose);
            }
        }
        schema
    }

    /// The fields one class of a lineage declares, in its own module's view. A model
    /// field's property is its alias; a field is described by its `Field` or
    /// `Annotated` text, else the string right after it, else its class docstring's
    /// `Attributes` entry.
    fn ancestor_fields(
        &mut self,
        ancestor: &'a ast::StmtClassDef,
        path: String,
        kind: ClassKind,
        depth: usize,
        fields: &mut ClassFields,
    ) {
        let total = class_keyword(ancestor, "total").map(|v| v != "False").unwrap_or(true);
        if kind == ClassKind::BaseModel && self.model_forbids_extra(ancestor) {
            fields.forbid_extra = true;
        }
        let documented = docstring_of(&ancestor.body).map(|doc| crate::docstring::parse(doc).attributes);
        self.enclosing.push((self.current.get(), ancestor, path));
        for (index, stmt) in ancestor.body.iter().enumerate() {
            let Stmt::AnnAssign(field) = stmt else { continue };
            let Expr::Name(target) = &*field.target else { continue };
            let name = target.id.as_str();
            if kind == ClassKind::BaseModel && name.starts_with('_') {
                continue;
            }
            if self.is_classvar(&field.annotation) {
                continue;
            }
            let mut description = None;
            let mut schema = self.convert(&field.annotation, depth + 1, &mut description);
            let mut field_call =
                match (kind, field.value.as_deref()) {
                    (ClassKind::TypedDict, _) => {
                        let optional = match self.required_marker(&field.annotation) {
                            Some(is_required) => !is_required,
                            None => !total,
                        };
                        FieldCall { optional, ..FieldCall::default() }
                    }
                    (_, None) => self.annotated_field(&field.annotation).unwrap_or_default(),
                    (_, Some(Expr::EllipsisLiteral(_))) => FieldCall::default(),
                    (_, Some(value)) => self.field_of(value, &mut schema, &mut description).unwrap_or_else(|| {
                        FieldCall { optional: true, default: self.default(value), ..FieldCall::default() }
                    }),
                };
            if field_call.alias.is_none() && field.value.is_some() {
                field_call.alias = self.annotated_field(&field.annotation).and_then(|f| f.alias);
            }
            if let Some(default) = field_call.default {
                schema["default"] = default;
            }
            let made_by_factory = field_call.made_by_factory;
            let description = description
                .or_else(|| attribute_docstring(ancestor.body.get(index + 1)))
                .or_else(|| documented.iter().flatten().find(|d| d.name == name).map(|d| d.description.clone()))
                .filter(|text| !text.is_empty());
            if let Some(text) = description {
                set_description(&mut schema, text);
            }
            let property = match field_call.alias {
                Some(alias) if kind == ClassKind::BaseModel => alias,
                _ => name.to_string(),
            };
            fields.required.retain(|r| *r != property);
            if !field_call.optional {
                fields.required.push(property.clone());
            }
            if let Some(value) = made_by_factory {
                self.made_by_factory.push((property.clone(), value));
            }
            fields.properties.insert(property, schema);
        }
        self.enclosing.pop();
    }

    /// Base classes first (their fields come first), then the class; each with the
    /// module it is defined in.
    fn lineage(
        &self,
        module: Module<'a, 's>,
        class: &'a ast::StmtClassDef,
        out: &mut Vec<(Module<'a, 's>, &'a ast::StmtClassDef)>,
        depth: usize,
    ) {
        if depth > MAX_ANNOTATION_DEPTH || out.iter().any(|(_, c)| std::ptr::eq(*c, class)) {
            return;
        }
        for base in class.bases() {
            if let Some(Resolved::Class(home, name)) = self.resolve_in(module, base)
                && let Some(&parent) = home.scope.classes.get(name)
                && !std::ptr::eq(parent, class)
            {
                self.lineage(home, parent, out, depth + 1);
            }
        }
        out.push((module, class));
    }

    /// `Field(...)` / `field(...)` when `expr` is such a call: what it says, with its
    /// description, title, examples and bounds put on `schema`.
    pub fn field_of(&mut self, expr: &Expr, schema: &mut Value, description: &mut Option<String>) -> Option<FieldCall> {
        let Expr::Call(call) = expr else { return None };
        let function = self.field_function(&call.func)?;
        Some(self.field_call(call, function, schema, description))
    }

    /// The `Field(...)` of an `Annotated[T, ..., Field(...)]` annotation (the last one,
    /// as pydantic merges them): its default, factory and alias. Its bounds and
    /// description are already part of the annotation's schema.
    pub fn annotated_field(&mut self, annotation: &Expr) -> Option<FieldCall> {
        let Expr::Subscript(sub) = annotation else { return None };
        if !self.is_qualified(&sub.value, "typing.Annotated") {
            return None;
        }
        let mut found = None;
        for meta in slice_args(sub).into_iter().skip(1) {
            let mut scratch = json!({});
            if let Some(field) = self.field_of(meta, &mut scratch, &mut None) {
                found = Some(field);
            }
        }
        found
    }

    fn field_function(&self, func: &Expr) -> Option<FieldFunction> {
        match self.resolve(func) {
            Some(Resolved::Qualified(q)) => match &*q {
                "pydantic.Field" | "pydantic.fields.Field" => Some(FieldFunction::Pydantic),
                "dataclasses.field" => Some(FieldFunction::Dataclasses),
                _ => None,
            },
            _ => None,
        }
    }

    fn field_call(
        &mut self,
        call: &ast::ExprCall,
        function: FieldFunction,
        schema: &mut Value,
        description: &mut Option<String>,
    ) -> FieldCall {
        let mut field = FieldCall::default();
        let given = |this: &mut Self, value: &Expr, field: &mut FieldCall| {
            if !matches!(value, Expr::EllipsisLiteral(_)) {
                field.optional = true;
                field.default = this.default(value);
            }
        };
        if function == FieldFunction::Pydantic
            && let Some(first) = call.arguments.args.first()
        {
            given(self, first, &mut field);
        }
        let mut alias = None;
        for keyword in &call.arguments.keywords {
            let Some(arg) = &keyword.arg else { continue };
            match arg.as_str() {
                "default" => given(self, &keyword.value, &mut field),
                "default_factory" => {
                    field.optional = true;
                    field.default = None;
                    field.made_by_factory = match self.resolve(&keyword.value) {
                        Some(Resolved::Qualified(q)) => match &*q {
                            "builtins.list" | "builtins.set" | "builtins.frozenset" | "builtins.tuple" => {
                                Some(json!([]))
                            }
                            "builtins.dict" => Some(json!({})),
                            _ => None,
                        },
                        _ => None,
                    };
                }
                "description" => {
                    if let Some(Value::String(text)) = self.literal(&keyword.value) {
                        description.get_or_insert(text.into_owned());
                    }
                }
                "alias" | "validation_alias" => {
                    if let Some(Value::String(text)) = self.literal(&keyword.value)
                        && (arg.as_str() == "validation_alias" || alias.is_none())
                    {
                        alias = Some(text.into_owned());
                    }
                }
                key => {
                    if let Some(value) = self.literal(&keyword.value) {
                        apply_constraint(schema, key, value);
                    }
                }
            }
        }
        field.alias = alias;
        field
    }

    fn model_forbids_extra(&self, class: &ast::StmtClassDef) -> bool {
        if class_keyword(class, "extra").as_deref() == Some("'forbid'") {
            return true;
        }
        class.body.iter().any(|stmt| match stmt {
            Stmt::Assign(a) => {
                let is_config = matches!(a.targets.as_slice(), [Expr::Name(n)] if n.id.as_str() == "model_config");
                let Expr::Call(call) = &*a.value else { return false };
                is_config && call.arguments.keywords.iter().any(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == "extra") && matches!(&k.value, Expr::StringLiteral(s) if s.value.to_str() == "forbid"))
            }
            Stmt::ClassDef(inner) if inner.name.as_str() == "Config" => inner.body.iter().any(|s| {
                matches!(s, Stmt::Assign(a) if matches!(a.targets.as_slice(), [Expr::Name(n)] if n.id.as_str() == "extra") && matches!(&*a.value, Expr::StringLiteral(v) if v.value.to_str() == "forbid"))
            }),
            _ => false,
        })
    }

    fn is_classvar(&self, annotation: &Expr) -> bool {
        let head = match annotation {
            Expr::Subscript(sub) => &*sub.value,
            other => other,
        };
        self.is_qualified(head, "typing.ClassVar")
    }

    /// `Required[T]` → true, `NotRequired[T]` → false, anything else → None.
    fn required_marker(&self, annotation: &Expr) -> Option<bool> {
        let Expr::Subscript(sub) = annotation else { return None };
        match self.resolve(&sub.value) {
            Some(Resolved::Qualified(q)) if q == "typing.Required" => Some(true),
            Some(Resolved::Qualified(q)) if q == "typing.NotRequired" => Some(false),
            Some(Resolved::Qualified(q)) if q == "typing.Annotated" || q == "typing.ReadOnly" => {
                slice_args(sub).first().and_then(|inner| self.required_marker(inner))
            }
            _ => None,
        }
    }

    fn is_qualified(&self, expr: &Expr, name: &str) -> bool {
        matches!(self.resolve(expr), Some(Resolved::Qualified(q)) if q == name)
    }

    fn resolve(&self, expr: &Expr) -> Option<Resolved<'a, 's>> {
        self.resolve_in(self.current.get(), expr)
    }

    fn resolve_in(&self, module: Module<'a, 's>, expr: &Expr) -> Option<Resolved<'a, 's>> {
        match expr {
            Expr::Name(n) => {
                let id = n.id.as_str();
                if let Some(found) = self.in_enclosing_class(module, id) {
                    Some(found)
                } else if let Some(found) = self.lookup(module, id, 0) {
                    Some(found)
                } else if let Some(qualified) = builtin(id) {
                    Some(Resolved::Qualified(Cow::Borrowed(qualified)))
                } else {
                    // Only a name nothing else defines is looked for behind `import *`.
                    Some(self.star_imported(module, id, 0).unwrap_or_else(|| Resolved::Unknown(id.to_string())))
                }
            }
            Expr::Attribute(a) => match self.resolve_in(module, &a.value)? {
                Resolved::Qualified(q) => {
                    Some(Resolved::Qualified(normalise_module(Cow::Owned(format!("{q}.{}", a.attr.as_str())))))
                }
                Resolved::Module(sibling) => Some(
                    self.lookup(sibling, a.attr.as_str(), 0)
                        .or_else(|| self.star_imported(sibling, a.attr.as_str(), 0))
                        .unwrap_or_else(|| Resolved::Unknown(expression_text(expr))),
                ),
                Resolved::Class(home, outer) => {
                    let nested = home.scope.classes.get(outer).and_then(|class| nested_class(class, a.attr.as_str()));
                    Some(match nested {
                        Some(inner) => Resolved::Nested(home, inner, format!("{outer}.{}", a.attr)),
                        None => Resolved::Unknown(expression_text(expr)),
                    })
                }
                Resolved::Nested(home, class, path) => Some(match nested_class(class, a.attr.as_str()) {
                    Some(inner) => Resolved::Nested(home, inner, format!("{path}.{}", a.attr)),
                    None => Resolved::Unknown(expression_text(expr)),
                }),
                _ => Some(Resolved::Unknown(expression_text(expr))),
            },
            Expr::NoneLiteral(_) => Some(Resolved::Qualified(Cow::Borrowed("builtins.None"))),
            _ => None,
        }
    }

    /// `name` as a class nested in the class whose body is being read, when that
    /// class is in `module` (a field annotation sees its class's namespace).
    fn in_enclosing_class(&self, module: Module<'a, 's>, name: &str) -> Option<Resolved<'a, 's>> {
        let (home, class, path) = self.enclosing.last()?;
        if !std::ptr::eq(home.scope, module.scope) {
            return None;
        }
        nested_class(class, name).map(|inner| Resolved::Nested(*home, inner, format!("{path}.{name}")))
    }

    /// What `name` is bound to in `module`: a class, an alias or an import, followed
    /// into sibling modules. `None` when the module does not bind it, or when a
    /// relative import leads nowhere (outside the library folder, a missing file, a
    /// cycle).
    fn lookup(&self, module: Module<'a, 's>, name: &str, hops: usize) -> Option<Resolved<'a, 's>> {
        let scope = module.scope;
        if let Some((&name, _)) = scope.classes.get_key_value(name) {
            return Some(Resolved::Class(module, name));
        }
        if let Some((&name, _)) = scope.aliases.get_key_value(name) {
            return Some(Resolved::Alias(module, name));
        }
        let Some(qualified) = scope.imports.get(name) else {
            return (scope.typing_star && is_typing_name(name))
                .then(|| Resolved::Qualified(Cow::Owned(format!("typing.{name}"))));
        };
        match qualified.strip_prefix('.') {
            Some(path) => self.relative(path, hops + 1),
            None => Some(Resolved::Qualified(normalise_module(Cow::Borrowed(qualified)))),
        }
    }

    /// `models` or `models.Item` (a relative import without its leading dot): the
    /// sibling module, or what the name is bound to there.
    fn relative(&self, path: &str, hops: usize) -> Option<Resolved<'a, 's>> {
        // `..x` leaves the library folder.
        if hops > MAX_IMPORT_HOPS || path.is_empty() || path.starts_with('.') {
            return None;
        }
        let (stem, name) = match path.split_once('.') {
            Some((stem, name)) => (stem, Some(name)),
            None => (path, None),
        };
        let &(stem, scope) = self.siblings.iter().find(|(s, _)| *s == stem)?;
        let module = Module { scope, stem: Some(stem) };
        match name {
            None => Some(Resolved::Module(module)),
            Some(name) if !name.contains('.') => {
                self.lookup(module, name, hops).or_else(|| self.star_imported(module, name, hops))
            }
            // A name inside a name (`from .models import Outer.Inner` cannot be written).
            Some(_) => None,
        }
    }

    /// `name` as a sibling module that `module` imports with `*` defines it.
    fn star_imported(&self, module: Module<'a, 's>, name: &str, hops: usize) -> Option<Resolved<'a, 's>> {
        module.scope.star_imports.iter().find_map(|star| {
            let Some(Resolved::Module(sibling)) = self.relative(star.strip_prefix('.')?, hops + 1) else {
                return None;
            };
            self.lookup(sibling, name, hops + 1).or_else(|| self.star_imported(sibling, name, hops + 1))
        })
    }
}

/// The `$defs` key of a definition: its name, qualified by the sibling module that
/// defines it, so that two modules' `Item` never share one.
fn definition_key(module: Module<'_, '_>, name: &str) -> String {
    match module.stem {
        Some(stem) => format!("{stem}.{name}"),
        None => name.to_string(),
    }
}

enum Container {
    Array,
    Set,
    Tuple,
    Object,
}

fn container(qualified: &str) -> Option<Container> {
    let (module, name) = qualified.rsplit_once('.').unwrap_or(("", qualified));
    if !matches!(module, "builtins" | "typing" | "collections.abc" | "collections") {
        return None;
    }
    match name {
        "list" | "List" | "Sequence" | "MutableSequence" | "Iterable" | "Collection" | "Iterator" | "deque" => {
            Some(Container::Array)
        }
        "set" | "Set" | "frozenset" | "FrozenSet" | "AbstractSet" | "MutableSet" => Some(Container::Set),
        "tuple" | "Tuple" => Some(Container::Tuple),
        "dict" | "Dict" | "Mapping" | "MutableMapping" | "OrderedDict" | "defaultdict" | "DefaultDict" => {
            Some(Container::Object)
        }
        _ => None,
    }
}

fn is_path(qualified: &str) -> bool {
    matches!(
        qualified,
        "pathlib.Path"
            | "pathlib.PurePath"
            | "pathlib.PosixPath"
            | "pathlib.WindowsPath"
            | "pathlib.PurePosixPath"
            | "pathlib.PureWindowsPath"
            | "os.PathLike"
    )
}

/// The qualified name of a builtin a schema can use.
fn builtin(name: &str) -> Option<&'static str> {
    Some(match name {
        "str" => "builtins.str",
        "int" => "builtins.int",
        "float" => "builtins.float",
        "bool" => "builtins.bool",
        "bytes" => "builtins.bytes",
        "bytearray" => "builtins.bytearray",
        "list" => "builtins.list",
        "dict" => "builtins.dict",
        "set" => "builtins.set",
        "frozenset" => "builtins.frozenset",
        "tuple" => "builtins.tuple",
        "object" => "builtins.object",
        "type" => "builtins.type",
        "None" => "builtins.None",
        _ => return None,
    })
}

/// Names `from typing import *` binds that a schema can use (all in `typing.__all__`).
fn is_typing_name(name: &str) -> bool {
    matches!(
        name,
        "Annotated"
            | "Any"
            | "ClassVar"
            | "Final"
            | "Literal"
            | "NamedTuple"
            | "NotRequired"
            | "Optional"
            | "ReadOnly"
            | "Required"
            | "Text"
            | "Type"
            | "TypedDict"
            | "Union"
            | "AbstractSet"
            | "Collection"
            | "DefaultDict"
            | "Dict"
            | "FrozenSet"
            | "Iterable"
            | "Iterator"
            | "List"
            | "Mapping"
            | "MutableMapping"
            | "MutableSequence"
            | "MutableSet"
            | "OrderedDict"
            | "Sequence"
            | "Set"
            | "Tuple"
    )
}

/// `typing_extensions.X` and `typing.X` are the same thing for a schema, and so are
/// pydantic's names and the submodules that define them (`pydantic.networks.HttpUrl`).
/// A name that needs no change is given back as it came.
fn normalise_module(qualified: Cow<'_, str>) -> Cow<'_, str> {
    if let Some(rest) = qualified.strip_prefix("typing_extensions")
        && (rest.is_empty() || rest.starts_with('.'))
    {
        return Cow::Owned(format!("typing{rest}"));
    }
    for module in ["pydantic.networks.", "pydantic.types.", "pydantic.fields.", "pydantic.main."] {
        if let Some(name) = qualified.strip_prefix(module)
            && !name.contains('.')
        {
            return Cow::Owned(format!("pydantic.{name}"));
        }
    }
    qualified
}

/// The base type of a pydantic `con*()` call.
fn constrained_kind(qualified: &str) -> Option<&'static str> {
    Some(match qualified {
        "pydantic.conint" => "integer",
        "pydantic.confloat" => "number",
        "pydantic.constr" | "pydantic.conbytes" => "string",
        "pydantic.conlist" => "array",
        "pydantic.conset" | "pydantic.confrozenset" => "set",
        "pydantic.condecimal" => "decimal",
        "pydantic.condate" => "date",
        _ => return None,
    })
}

fn is_numeric_bound(key: &str) -> bool {
    matches!(key, "ge" | "gt" | "le" | "lt" | "multiple_of")
}

/// One IPv4 address, each part without leading zeros (as Python's `ipaddress`).
const IPV4: &str =
    r"(?:0|[1-9][0-9]?|1[0-9]{2}|2[0-4][0-9]|25[0-5])(?:\.(?:0|[1-9][0-9]?|1[0-9]{2}|2[0-4][0-9]|25[0-5])){3}";
/// An IPv4 network or interface: an address, then a prefix length or a mask.
const IPV4_NETWORK: &str = r"(?:0|[1-9][0-9]?|1[0-9]{2}|2[0-4][0-9]|25[0-5])(?:\.(?:0|[1-9][0-9]?|1[0-9]{2}|2[0-4][0-9]|25[0-5])){3}(?:/(?:[0-9]|[12][0-9]|3[0-2])|/(?:0|[1-9][0-9]?|1[0-9]{2}|2[0-4][0-9]|25[0-5])(?:\.(?:0|[1-9][0-9]?|1[0-9]{2}|2[0-4][0-9]|25[0-5])){3})?";
/// An IPv6 network or interface: hexadecimal groups, at most one `::`, an IPv4 tail,
/// then a prefix length. The count of groups is left to the conversion.
const IPV6_NETWORK: &str = r"(?:[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){7}|(?:[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){0,6})?::(?:[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){0,6})?|(?:[0-9A-Fa-f]{1,4}:){6}IPV4|(?:[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){0,4})?::(?:[0-9A-Fa-f]{1,4}:){0,4}IPV4)(?:/(?:[0-9]|[1-9][0-9]|1[01][0-9]|12[0-8]))?";

/// The schemas of the standard library's and pydantic's named types that are not
/// containers: what pydantic emits for them, in the keywords lcp's validation checks.
fn vocabulary(qualified: &str) -> Option<Value> {
    let ipv4 = json!({ "type": "string", "format": "ipv4" });
    let ipv6 = json!({ "type": "string", "format": "ipv6" });
    let url = |pattern: Option<&str>, max: Option<u64>| {
        let mut schema = json!({ "type": "string", "format": "uri", "minLength": 1 });
        if let Some(max) = max {
            schema["maxLength"] = max.into();
        }
        if let Some(pattern) = pattern {
            schema["pattern"] = pattern.into();
        }
        schema
    };
    let network = |pattern: String| {
        let pattern = format!("^(?:{pattern})$");
        json!({ "type": "string", "pattern": pattern })
    };
    let v6_network = || IPV6_NETWORK.replace("IPV4", IPV4);
    let http = "^[hH][tT][tT][pP][sS]?://";
    Some(match qualified {
        "ipaddress.IPv4Address" => ipv4,
        "ipaddress.IPv6Address" => ipv6,
        "pydantic.IPvAnyAddress" => json!({ "anyOf": [ipv4, ipv6] }),
        "ipaddress.IPv4Network" | "ipaddress.IPv4Interface" => network(IPV4_NETWORK.to_string()),
        "ipaddress.IPv6Network" | "ipaddress.IPv6Interface" => network(v6_network()),
        "pydantic.IPvAnyNetwork" | "pydantic.IPvAnyInterface" => network(format!("{IPV4_NETWORK}|{}", v6_network())),
        "pydantic.EmailStr" | "pydantic.NameEmail" => json!({ "type": "string", "format": "email" }),
        "pydantic.AnyUrl" => url(None, None),
        "pydantic.AnyHttpUrl" => url(Some(http), None),
        "pydantic.HttpUrl" => url(Some(http), Some(2083)),
        "pydantic.FileUrl" => url(Some("^[fF][iI][lL][eE]:"), None),
        "pydantic.SecretStr" | "pydantic.SecretBytes" | "pydantic.StrictStr" | "pydantic.StrictBytes" => {
            json!({ "type": "string" })
        }
        "pydantic.Json" => json!({ "type": "string", "contentMediaType": "application/json" }),
        "pydantic.StrictInt" => json!({ "type": "integer" }),
        "pydantic.StrictFloat" | "pydantic.FiniteFloat" => json!({ "type": "number" }),
        "pydantic.StrictBool" => json!({ "type": "boolean" }),
        "pydantic.PositiveInt" => json!({ "type": "integer", "exclusiveMinimum": 0 }),
        "pydantic.NegativeInt" => json!({ "type": "integer", "exclusiveMaximum": 0 }),
        "pydantic.NonNegativeInt" => json!({ "type": "integer", "minimum": 0 }),
        "pydantic.NonPositiveInt" => json!({ "type": "integer", "maximum": 0 }),
        "pydantic.PositiveFloat" => json!({ "type": "number", "exclusiveMinimum": 0 }),
        "pydantic.NegativeFloat" => json!({ "type": "number", "exclusiveMaximum": 0 }),
        "pydantic.NonNegativeFloat" => json!({ "type": "number", "minimum": 0 }),
        "pydantic.NonPositiveFloat" => json!({ "type": "number", "maximum": 0 }),
        "pydantic.AnyWebsocketUrl" | "pydantic.FtpUrl" => url(None, None),
        "pydantic.WebsocketUrl" => url(None, Some(2083)),
        q if q.starts_with("pydantic.") && q.ends_with("Dsn") => url(None, None),
        // `UUID1` … `UUID8`: a UUID whose version digit (the third group's first) is N,
        // of the RFC 4122 variant (the fourth group's first digit is 8, 9, a or b).
        q if let Some(version) =
            q.strip_prefix("pydantic.UUID").filter(|v| matches!(*v, "1" | "3" | "4" | "5" | "6" | "7" | "8")) =>
        {
            let pattern = format!(
                "^[0-9a-fA-F]{{8}}-[0-9a-fA-F]{{4}}-{version}[0-9a-fA-F]{{3}}-[89abAB][0-9a-fA-F]{{3}}-[0-9a-fA-F]{{12}}$"
            );
            json!({ "type": "string", "format": "uuid", "pattern": pattern })
        }
        // With a time zone, and without one.
        "pydantic.AwareDatetime" => {
            json!({ "type": "string", "format": "date-time", "pattern": "(?:[Zz]|[+-][0-9]{2}:?[0-9]{2})$" })
        }
        "pydantic.NaiveDatetime" => json!({ "type": "string", "format": "date-time", "pattern": "[Tt ][0-9:.]+$" }),
        // Past and future are relative to the moment of the call: the Python side checks them.
        "pydantic.PastDate" | "pydantic.FutureDate" => json!({ "type": "string", "format": "date" }),
        "pydantic.PastDatetime" | "pydantic.FutureDatetime" => json!({ "type": "string", "format": "date-time" }),
        "pydantic.Base64Str" | "pydantic.Base64Bytes" => json!({ "type": "string", "format": "base64" }),
        "pydantic.Base64UrlStr" | "pydantic.Base64UrlBytes" => json!({ "type": "string", "format": "base64url" }),
        "pydantic.FilePath" => json!({ "type": "string", "format": "file-path" }),
        "pydantic.DirectoryPath" => json!({ "type": "string", "format": "directory-path" }),
        "pydantic.NewPath" | "pydantic.SocketPath" => json!({ "type": "string", "format": "path" }),
        "pydantic.ImportString" => json!({ "type": "string" }),
        "pydantic.PaymentCardNumber" => json!({ "type": "string", "minLength": 12, "maxLength": 19 }),
        "pydantic.ByteSize" => json!({ "anyOf": [
            { "type": "string", "pattern": "^\\s*(\\d*\\.?\\d+)\\s*(\\w+)?" },
            { "type": "integer", "minimum": 0 }
        ] }),
        _ => return None,
    })
}

/// `Decimal`: a number, or text in the syntax `Decimal()` reads (pydantic's pattern,
/// narrowed by `max_digits` / `decimal_places` as pydantic's `build_decimal_pattern`
/// does). Numeric bounds can only be checked on a number, so a bounded decimal is a
/// number only; `max_digits` bounds a number's whole part.
fn decimal(bounds: Map, max_digits: Option<u64>, places: Option<u64>) -> Value {
    let mut number = json!({ "type": "number" });
    for (key, value) in bounds.iter() {
        apply_constraint(&mut number, key, value.clone());
    }
    if let Some(max) = max_digits {
        let whole = max.saturating_sub(places.unwrap_or(0)).min(300) as i32;
        let limit = 10f64.powi(whole);
        let limit = if limit.fract() == 0.0 && limit < 9e15 { json!(limit as i64) } else { json!(limit) };
        if number.get("exclusiveMaximum").is_none() && number.get("maximum").is_none() {
            number["exclusiveMaximum"] = limit.clone();
        }
        if number.get("exclusiveMinimum").is_none() && number.get("minimum").is_none() {
            number["exclusiveMinimum"] = match limit.as_i64() {
                Some(n) => Value::from(-n),
                None => Value::from(-limit.as_f64().unwrap_or_default()),
            };
        }
    }
    if !bounds.is_empty() {
        return number;
    }
    let pattern = decimal_pattern(max_digits, places);
    json!({ "anyOf": [number, { "type": "string", "pattern": pattern }] })
}

/// The text branch of a `Decimal` schema.
fn is_decimal_text(schema: &Value) -> bool {
    schema.get("type") == Some(&json!("string"))
        && schema.get("pattern").and_then(Value::as_str).is_some_and(|p| p.starts_with(DECIMAL_TEXT_START))
}

/// How every pattern [`decimal_pattern`] makes begins.
const DECIMAL_TEXT_START: &str = r"^\s*[+-]?(?:";

/// pydantic's `build_decimal_pattern` in validation mode (`_decimal_validation_pattern`),
/// with the white space around the number that `Decimal()` (and so pydantic) ignores.
/// Digits grouped with `_`, which `Decimal()` also reads, are left out.
fn decimal_pattern(max_digits: Option<u64>, places: Option<u64>) -> String {
    const NUMBER: &str = r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)";
    const EXPONENT: &str = r"[eE][+-]?[0-9]+";
    let mut alternatives: Vec<String> = Vec::new();
    match (max_digits, places) {
        (None, None) => return format!(r"{DECIMAL_TEXT_START}{NUMBER}(?:{EXPONENT})?)\s*$"),
        (Some(max), Some(places)) => {
            let whole = max.saturating_sub(places);
            let places = max.min(places);
            let int_part = if whole > 0 { format!("0*{}", repeat(1, whole)) } else { "0+".to_string() };
            let frac = if places > 0 { format!(r"\.{}0*", repeat(1, places)) } else { r"\.0+".to_string() };
            alternatives.push(format!(r"{int_part}(?:\.{}0*)?", repeat(0, places)));
            alternatives.push(format!("0*{}{frac}", repeat(0, whole)));
        }
        (Some(max), None) => {
            let int_part = if max > 0 { format!("0*{}", repeat(1, max)) } else { "0+".to_string() };
            alternatives.push(format!(r"{int_part}(?:\.0*)?"));
            for whole in 0..max {
                alternatives.push(format!(r"0*{}\.{}0*", repeat(whole, whole), repeat(1, max - whole)));
            }
            if max == 0 {
                alternatives.push(r"0*\.0+".to_string());
            }
        }
        (None, Some(places)) => {
            let frac = if places > 0 { format!(r"\.{}0*", repeat(1, places)) } else { r"\.0+".to_string() };
            alternatives.push(format!(r"[0-9]+(?:\.{}0*)?", repeat(0, places)));
            alternatives.push(format!("[0-9]*{frac}"));
        }
    }
    alternatives.push(format!("{NUMBER}{EXPONENT}"));
    format!(r"{DECIMAL_TEXT_START}{})\s*$", alternatives.join("|"))
}

/// `[0-9]` repeated `min..=max` times, with the shortest quantifier (pydantic's `_repeat`).
fn repeat(min: u64, max: u64) -> String {
    match (min, max) {
        _ if min > max || max == 0 => String::new(),
        _ if min == max && min == 1 => "[0-9]".to_string(),
        _ if min == max => format!("[0-9]{{{min}}}"),
        (0, 1) => "[0-9]?".to_string(),
        _ => format!("[0-9]{{{min},{max}}}"),
    }
}

fn array(items: Option<Value>) -> Value {
    match items {
        Some(items) if items != json!({}) => object([("type", json!("array")), ("items", items)]),
        _ => json!({ "type": "array" }),
    }
}

fn enum_schema(values: Vec<Value>) -> Value {
    let type_of = |v: &Value| match v {
        Value::String(_) => "string",
        Value::Bool(_) => "boolean",
        Value::Null => "null",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let mut schema = Map::new();
    if let Some(first) = values.first() {
        let kind = type_of(first);
        if values.iter().all(|v| type_of(v) == kind) {
            schema.insert("type", Value::text(kind));
        }
    }
    schema.insert("enum", Value::Array(values));
    Value::Object(schema)
}

/// A schema object from its keywords, in order. Unlike `json!`, which copies a
/// `Value` it is given, this moves each one in.
fn object<const N: usize>(keywords: [(&str, Value); N]) -> Value {
    Value::Object(keywords.into_iter().map(|(key, value)| (key.to_string(), value)).collect())
}

/// Levels of nesting of a JSON value: a scalar or an empty container is one.
pub fn json_depth(value: &serde_json::Value) -> usize {
    let children = match value {
        serde_json::Value::Array(items) => items.iter().map(json_depth).max(),
        serde_json::Value::Object(map) => map.values().map(json_depth).max(),
        _ => None,
    };
    1 + children.unwrap_or(0)
}

fn number_value(number: &Number) -> Option<Value> {
    match number {
        Number::Int(i) => i.as_i64().map(Value::from),
        Number::Float(f) => serde_json::Number::from_f64(*f).map(Value::Number),
        Number::Complex { .. } => None,
    }
}

/// Puts a pydantic / annotated-types bound on the schema it applies to: the string,
/// array or object form of `min_length`, and the non-null branches of a union.
fn apply_constraint(schema: &mut Value, key: &str, value: Value) {
    if let Some(branches) = schema.get_mut("anyOf").and_then(Value::as_array_mut) {
        // A bounded decimal is a number only (see `decimal`): bounds cannot be
        // checked on its text form.
        if is_numeric_bound(key) {
            branches.retain(|b| !is_decimal_text(b));
        }
        for branch in branches.iter_mut().filter(|b| b.get("type") != Some(&json!("null"))) {
            apply_constraint(branch, key, value.clone());
        }
        if let Some(object) = schema.as_object_mut()
            && object.get("anyOf").and_then(Value::as_array).is_some_and(|b| b.len() == 1)
            && let Some(Value::Array(mut only)) = object.remove("anyOf")
            && let Some(Value::Object(single)) = only.pop()
        {
            for (key, value) in single {
                object.get_or_insert(key, value);
            }
        }
        return;
    }
    let kind = schema.get("type").and_then(Value::as_str).unwrap_or_default();
    let keyword = match (key, kind) {
        ("ge", _) => "minimum",
        ("gt", _) => "exclusiveMinimum",
        ("le", _) => "maximum",
        ("lt", _) => "exclusiveMaximum",
        ("multiple_of", _) => "multipleOf",
        ("pattern", _) => "pattern",
        ("min_length", "array") => "minItems",
        ("max_length", "array") => "maxItems",
        ("min_length", "object") => "minProperties",
        ("max_length", "object") => "maxProperties",
        ("min_length", _) => "minLength",
        ("max_length", _) => "maxLength",
        ("title", _) => "title",
        ("examples", _) => "examples",
        _ => return,
    };
    if let Some(object) = schema.as_object_mut() {
        object.insert(keyword.to_string(), value);
    }
}

/// A schema that also accepts `null`.
pub fn nullable(schema: Value) -> Value {
    let null_schema = json!({ "type": "null" });
    if schema == json!({}) || schema == null_schema {
        return schema;
    }
    if let Some(branches) = schema.get("anyOf").and_then(Value::as_array) {
        if branches.contains(&null_schema) {
            return schema;
        }
        let mut schema = schema.clone();
        if let Some(branches) = schema.get_mut("anyOf").and_then(Value::as_array_mut) {
            branches.push(null_schema);
        }
        return schema;
    }
    object([("anyOf", Value::Array(vec![schema, null_schema]))])
}

/// Adds a description without disturbing a `$ref`-only or `anyOf` schema's meaning.
pub fn set_description(schema: &mut Value, text: String) {
    if let Some(object) = schema.as_object_mut() {
        object.insert("description", Value::from(text));
    }
}

/// A class keyword given as a literal, as source-like text: `total=False` → `False`.
fn class_keyword(class: &ast::StmtClassDef, name: &str) -> Option<String> {
    let keyword =
        class.arguments.as_ref()?.keywords.iter().find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == name))?;
    Some(match &keyword.value {
        Expr::BooleanLiteral(b) => if b.value { "True" } else { "False" }.to_string(),
        Expr::StringLiteral(s) => format!("'{}'", s.value.to_str()),
        other => expression_text(other),
    })
}

/// `Decimal(text)` as pydantic writes it (`str(Decimal(text))`), for plain decimal
/// text whose form `str()` keeps: `"12.34"`, `"-0.5"`.
fn decimal_text(text: &str) -> Option<String> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, "0"));
    let plain = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    let keeps_form = plain(whole) && plain(fraction) && (whole == "0" || !whole.starts_with('0'));
    keeps_form.then(|| text.to_string())
}

/// `UUID(text)` as pydantic writes it: lower-case 8-4-4-4-12 hexadecimal digits.
fn canonical_uuid(text: &str) -> Option<String> {
    let groups: Vec<&str> = text.split('-').collect();
    let shaped = groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups.iter().all(|g| g.bytes().all(|b| b.is_ascii_hexdigit()));
    shaped.then(|| text.to_ascii_lowercase())
}

/// `datetime(2024, 1, 1, 12)`, `date(2024, 1, 1)`, `time(12, 30)` (positional or
/// keyword parts, no time zone) in ISO 8601 as Python's `isoformat()` writes them.
fn date_time_parts(qualified: &str, call: &ast::ExprCall, int: impl Fn(&Expr) -> Option<i64>) -> Option<String> {
    let names: &[&str] = match qualified {
        "datetime.datetime" => &["year", "month", "day", "hour", "minute", "second", "microsecond"],
        "datetime.date" => &["year", "month", "day"],
        _ => &["hour", "minute", "second", "microsecond"],
    };
    let mut parts: Vec<Option<i64>> = vec![None; names.len()];
    if call.arguments.args.len() > names.len() {
        return None;
    }
    for (slot, arg) in parts.iter_mut().zip(&call.arguments.args) {
        *slot = Some(int(arg)?);
    }
    for keyword in &call.arguments.keywords {
        let index = names.iter().position(|n| keyword.arg.as_ref().is_some_and(|a| a.as_str() == *n))?;
        parts[index] = Some(int(&keyword.value)?);
    }
    let part = |name: &str| names.iter().position(|n| *n == name).and_then(|i| parts[i]);
    let in_range = |value: Option<i64>, low: i64, high: i64| value.is_none_or(|v| (low..=high).contains(&v));
    let date = match qualified {
        "datetime.time" => None,
        _ => {
            let (year, month, day) = (part("year")?, part("month")?, part("day")?);
            let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
            let days = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
            let valid = (1..=9999).contains(&year)
                && (1..=12).contains(&month)
                && (1..=days[(month - 1) as usize]).contains(&day);
            valid.then(|| format!("{year:04}-{month:02}-{day:02}"))?.into()
        }
    };
    let clock = match qualified {
        "datetime.date" => None,
        _ => {
            let (hour, minute, second, micro) = (part("hour"), part("minute"), part("second"), part("microsecond"));
            let valid = in_range(hour, 0, 23)
                && in_range(minute, 0, 59)
                && in_range(second, 0, 59)
                && in_range(micro, 0, 999_999);
            let (h, m, s, us) = (hour.unwrap_or(0), minute.unwrap_or(0), second.unwrap_or(0), micro.unwrap_or(0));
            let text = if us == 0 { format!("{h:02}:{m:02}:{s:02}") } else { format!("{h:02}:{m:02}:{s:02}.{us:06}") };
            valid.then_some(text)?.into()
        }
    };
    match (date, clock) {
        (Some(date), Some(clock)) => Some(format!("{date}T{clock}")),
        (Some(date), None) => Some(date),
        (None, Some(clock)) => Some(clock),
        (None, None) => None,
    }
}

/// The class named `name` defined directly in `class`'s body.
fn nested_class<'a>(class: &'a ast::StmtClassDef, name: &str) -> Option<&'a ast::StmtClassDef> {
    class.body.iter().find_map(|stmt| match stmt {
        Stmt::ClassDef(inner) if inner.name.as_str() == name => Some(inner),
        _ => None,
    })
}

/// The docstring of a class or function body: its first statement, when a string.
fn docstring_of(body: &[Stmt]) -> Option<&str> {
    match body.first() {
        Some(Stmt::Expr(e)) => match &*e.value {
            Expr::StringLiteral(s) => Some(s.value.to_str()),
            _ => None,
        },
        _ => None,
    }
}

/// The text of an attribute docstring: the string statement right after a field.
fn attribute_docstring(next: Option<&Stmt>) -> Option<String> {
    let Some(Stmt::Expr(e)) = next else { return None };
    let Expr::StringLiteral(s) = &*e.value else { return None };
    let cleaned = crate::docstring::parse(s.value.to_str()).text;
    Some(cleaned.split_whitespace().collect::<Vec<_>>().join(" "))
}

fn slice_args(sub: &ast::ExprSubscript) -> Vec<&Expr> {
    match &*sub.slice {
        Expr::Tuple(t) => t.elts.iter().collect(),
        other => vec![other],
    }
}

/// Short, readable text for an expression in messages.
pub fn expression_text(expr: &Expr) -> String {
    match expr {
        Expr::Name(n) => n.id.to_string(),
        Expr::Attribute(a) => format!("{}.{}", expression_text(&a.value), a.attr.as_str()),
        Expr::Subscript(s) => format!("{}[...]", expression_text(&s.value)),
        Expr::StringLiteral(s) => format!("{:?}", s.value.to_str()),
        Expr::Call(c) => format!("{}(...)", expression_text(&c.func)),
        Expr::NoneLiteral(_) => "None".into(),
        _ => "expression".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_text_gives_back_the_schema_it_was_made_from_in_its_key_order() {
        let schema =
            json!({"type": "object", "properties": {"z": {"type": "integer"}, "a": {"description": "ü \"q\""}}});
        let text = SchemaText::new(&schema);
        assert_eq!(
            text.as_str(),
            r#"{"type":"object","properties":{"z":{"type":"integer"},"a":{"description":"ü \"q\""}}}"#
        );
        let value = serde_json::Value::from(schema.clone());
        assert_eq!(text.parse(), value);
        assert_eq!(text.value(), &value);
        assert_eq!(serde_json::to_value(&text).unwrap(), value);
        assert_eq!(SchemaText::new(&schema), text);
        let reordered =
            json!({"properties": {"z": {"type": "integer"}, "a": {"description": "ü \"q\""}}, "type": "object"});
        assert_eq!(reordered, schema);
        assert_ne!(SchemaText::new(&reordered), text);
    }
}
