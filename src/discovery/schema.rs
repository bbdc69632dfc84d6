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
//!
//! This file holds the [`Converter`] and the annotation forms (subscripts, unions,
//! tuples, `Literal`, `Annotated`, aliases, recursion); its parts are `resolve`
//! (names), `types` (the named types and bounds), `classes` (classes and `Field`),
//! `literal` (literals and defaults), `text` ([`SchemaText`]), and `named` (`$defs`
//! for named classes). A schema is a `serde_json::Value` while it is made.

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::OnceLock;

use ruff_python_ast::{self as ast, Expr, Number, Operator, Stmt, UnaryOp};
use ruff_text_size::{Ranged, TextRange};
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Value, json};

/// A JSON object, keys in the order they were first set.
pub(crate) type Map = serde_json::Map<String, Value>;

mod classes;
mod literal;
pub mod named;
mod resolve;
mod text;
mod types;

pub use classes::docstring_of;
use classes::*;
use resolve::*;
pub use resolve::{Scope, Siblings};
#[cfg(feature = "python")]
pub use text::OTHER_NAMES;
pub use text::SchemaText;
use types::*;

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
    /// Converting a return annotation: a value as pydantic dumps it (a `NamedTuple`
    /// is an array) rather than as a call takes it.
    output: bool,
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
            output: false,
        }
    }

    /// The same converter for a return annotation: each type as pydantic dumps a value
    /// of it (SPEC §12), a `NamedTuple` an array of its fields in order.
    pub fn for_output(mut self) -> Self {
        self.output = true;
        self
    }

    /// The schema of an annotation, and its `Annotated` / `Field` description if any.
    pub fn annotation(&mut self, expr: &Expr) -> (Value, Option<String>) {
        let mut description = None;
        let schema = self.convert(expr, 0, &mut description);
        (self.within_depth(expr.range(), schema), description)
    }

    /// `schema`, or `{}` with a warning when it is nested deeper than [`MAX_SCHEMA_DEPTH`].
    fn within_depth(&mut self, range: TextRange, schema: Value) -> Value {
        if json_depth(&schema) <= MAX_SCHEMA_DEPTH {
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
    pub fn unpacked(&mut self, annotation: &Expr) -> Option<(Map, Vec<String>, Map)> {
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
        let required: Vec<String> =
            schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str).map(String::from).collect();
        // What the TypedDict's config lays over its schema (`allOf`, `if`, ...) is the
        // arguments object's own.
        let own = ["type", "properties", "required", "additionalProperties", "description", "title"];
        let extra = match schema {
            Value::Object(object) => object.into_iter().filter(|(key, _)| !own.contains(&key.as_ref())).collect(),
            _ => Map::new(),
        };
        Some((fields, required, extra))
    }

    fn warn(&mut self, range: TextRange, message: String) {
        self.warnings.push((self.sibling_range.or(self.string_range).unwrap_or(range), message));
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
            // pydantic's `WithJsonSchema(schema)`: the schema given, instead of the type's.
            "WithJsonSchema" => {
                let given = positional.or_else(|| {
                    let keyword = call
                        .arguments
                        .keywords
                        .iter()
                        .find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == "json_schema"))?;
                    self.literal(&keyword.value)
                });
                if let Some(given @ Value::Object(_)) = given {
                    *schema = given;
                }
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
        let reference = json!({"$ref": format!("#/$defs/{name}")});
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
}

/// A schema object from its keywords, in order. Unlike `json!`, which copies a
/// `Value` it is given, this moves each one in.
fn object<const N: usize>(keywords: [(&str, Value); N]) -> Value {
    Value::Object(keywords.into_iter().map(|(key, value)| (key.to_string(), value)).collect())
}

/// Levels of nesting of a JSON value: a scalar or an empty container is one.
pub fn json_depth(value: &Value) -> usize {
    let children = match value {
        Value::Array(items) => items.iter().map(json_depth).max(),
        Value::Object(map) => map.values().map(json_depth).max(),
        _ => None,
    };
    1 + children.unwrap_or(0)
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
        object.insert("description".into(), Value::from(text));
    }
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
        assert_eq!(text.parse(), schema);
        assert_eq!(text.value(), &schema);
        assert_eq!(serde_json::to_value(&text).unwrap(), schema);
        assert_eq!(SchemaText::new(&schema), text);
        let reordered =
            json!({"properties": {"z": {"type": "integer"}, "a": {"description": "ü \"q\""}}, "type": "object"});
        assert_eq!(reordered, schema);
        assert_ne!(SchemaText::new(&reordered), text);
    }
}
