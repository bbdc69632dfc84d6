//! The JSON values schemas are built from while annotations are converted.
//!
//! A schema is made, maybe looked at, then written once as compact text
//! ([`super::SchemaText`]) and dropped; a tool makes dozens of small objects. An
//! object here is a vector of its keywords in order, keyed by text that is borrowed
//! when it is a literal (`"type"`, `"string"`): `{"type": "string"}` is one
//! allocation, where a `serde_json::Value` takes four and hashes its keys.
//!
//! It behaves as `serde_json::Value` does with `preserve_order`, which schemas were
//! made of before and which readers of the text get: keys keep their order, setting
//! a key that is there replaces its value in place, [`Map::remove`] moves the last
//! keyword into the gap (`swap_remove`), and objects are equal whatever their order.
//! Numbers are `serde_json::Number`s, so they keep their digits. It owns no schema
//! rule; it never fails and never panics but where `serde_json::Value` would (a
//! string index into a non-object that is not `null`).

use std::borrow::Cow;
use std::ops::{Index, IndexMut};

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::Number;

/// Text of a key or a string: borrowed when it is a literal.
pub type Text = Cow<'static, str>;

/// A JSON value.
#[derive(Debug, Clone, Default)]
pub enum Value {
    #[default]
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, digits kept.
    Number(Number),
    /// A string.
    String(Text),
    /// An array.
    Array(Vec<Value>),
    /// An object.
    Object(Map),
}

/// A JSON object: keywords in the order they were first set.
#[derive(Debug, Clone, Default)]
pub struct Map {
    entries: Vec<(Text, Value)>,
}

impl Map {
    /// An empty object.
    pub fn new() -> Map {
        Map { entries: Vec::new() }
    }

    /// An empty object with room for `capacity` keys.
    pub fn with_capacity(capacity: usize) -> Map {
        Map { entries: Vec::with_capacity(capacity) }
    }

    fn position(&self, key: &str) -> Option<usize> {
        self.entries.iter().position(|(k, _)| k == key)
    }

    /// Sets `key`; a key already there keeps its place. Gives back the value it had.
    pub fn insert(&mut self, key: impl Into<Text>, value: Value) -> Option<Value> {
        let key = key.into();
        match self.position(&key) {
            Some(i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            None => {
                self.entries.push((key, value));
                None
            }
        }
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The value of `key`, to change.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.entries.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Whether `key` is set.
    pub fn contains_key(&self, key: &str) -> bool {
        self.position(key).is_some()
    }

    /// Takes `key` out; the last keyword moves into its place, as
    /// `serde_json::Map::remove` does with `preserve_order`.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let i = self.position(key)?;
        Some(self.entries.swap_remove(i).1)
    }

    /// The value of `key`, set to `default` first when it is not there.
    pub fn get_or_insert(&mut self, key: impl Into<Text>, default: Value) -> &mut Value {
        let key = key.into();
        let i = match self.position(&key) {
            Some(i) => i,
            None => {
                self.entries.push((key, default));
                self.entries.len() - 1
            }
        };
        &mut self.entries[i].1
    }

    /// How many keys are set.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no key is set.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The keys, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(k, _)| k.as_ref())
    }

    /// The values, in order.
    pub fn values(&self) -> impl Iterator<Item = &Value> {
        self.entries.iter().map(|(_, v)| v)
    }

    /// Keys and values, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&Text, &Value)> {
        self.into_iter()
    }

    /// Sets each of `other`'s keys in turn, as [`Map::insert`].
    pub fn extend(&mut self, other: Map) {
        for (key, value) in other {
            self.insert(key, value);
        }
    }
}

impl IntoIterator for Map {
    type Item = (Text, Value);
    type IntoIter = std::vec::IntoIter<(Text, Value)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

impl<'m> IntoIterator for &'m Map {
    type Item = (&'m Text, &'m Value);
    type IntoIter = std::iter::Map<std::slice::Iter<'m, (Text, Value)>, fn(&'m (Text, Value)) -> (&'m Text, &'m Value)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter().map(|(k, v)| (k, v))
    }
}

impl<K: Into<Text>> FromIterator<(K, Value)> for Map {
    fn from_iter<I: IntoIterator<Item = (K, Value)>>(iter: I) -> Map {
        let mut map = Map::new();
        for (key, value) in iter {
            map.insert(key, value);
        }
        map
    }
}

/// Equal when they hold the same keys with equal values, in any order.
impl PartialEq for Map {
    fn eq(&self, other: &Map) -> bool {
        self.len() == other.len() && self.iter().all(|(key, value)| other.get(key) == Some(value))
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Number(a), Value::Number(b)) => a == b,
            (Value::String(a), Value::String(b)) => a == b,
            (Value::Array(a), Value::Array(b)) => a == b,
            (Value::Object(a), Value::Object(b)) => a == b,
            _ => false,
        }
    }
}

/// A string value equals its text, as with `serde_json::Value`.
impl PartialEq<str> for Value {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == Some(other)
    }
}

impl PartialEq<&str> for Value {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == Some(*other)
    }
}

impl Value {
    /// `{}`: any JSON value, as a schema.
    pub fn any() -> Value {
        Value::Object(Map::new())
    }

    /// Whether this is `{}`.
    pub fn is_any(&self) -> bool {
        matches!(self, Value::Object(map) if map.is_empty())
    }

    /// An object from its keywords, in order (each key given once).
    pub fn object<const N: usize>(keywords: [(&'static str, Value); N]) -> Value {
        Value::Object(Map { entries: keywords.into_iter().map(|(key, value)| (Cow::Borrowed(key), value)).collect() })
    }

    /// A string that is a literal.
    pub fn text(text: &'static str) -> Value {
        Value::String(Cow::Borrowed(text))
    }

    /// The value of `key` when this is an object that sets it.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_object()?.get(key)
    }

    /// [`Value::get`], to change.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.as_object_mut()?.get_mut(key)
    }

    /// The text of a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(text) => Some(text),
            _ => None,
        }
    }

    /// The items of an array.
    pub fn as_array(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The items of an array, to change.
    pub fn as_array_mut(&mut self) -> Option<&mut Vec<Value>> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The keys of an object.
    pub fn as_object(&self) -> Option<&Map> {
        match self {
            Value::Object(map) => Some(map),
            _ => None,
        }
    }

    /// The keys of an object, to change.
    pub fn as_object_mut(&mut self) -> Option<&mut Map> {
        match self {
            Value::Object(map) => Some(map),
            _ => None,
        }
    }

    /// A number that fits an `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Number(n) => n.as_i64(),
            _ => None,
        }
    }

    /// A number that fits a `u64`.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Number(n) => n.as_u64(),
            _ => None,
        }
    }

    /// A number as an `f64`.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(n) => n.as_f64(),
            _ => None,
        }
    }

    /// Levels of nesting: a scalar or an empty container is one.
    pub fn depth(&self) -> usize {
        let children = match self {
            Value::Array(items) => items.iter().map(Value::depth).max(),
            Value::Object(map) => map.values().map(Value::depth).max(),
            _ => None,
        };
        1 + children.unwrap_or(0)
    }
}

static NULL: Value = Value::Null;

/// `value["key"]`: `null` when the key is not there or this is not an object.
impl Index<&str> for Value {
    type Output = Value;

    fn index(&self, key: &str) -> &Value {
        self.get(key).unwrap_or(&NULL)
    }
}

/// `value["key"] = …`: sets the key (`null` becomes an object first), as
/// `serde_json::Value` does; panics on any other non-object, as it does.
impl IndexMut<&str> for Value {
    fn index_mut(&mut self, key: &str) -> &mut Value {
        if let Value::Null = self {
            *self = Value::any();
        }
        match self {
            Value::Object(map) => map.get_or_insert(key.to_string(), Value::Null),
            other => panic!("cannot set key {key:?} of a JSON {}", kind(other)),
        }
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Value {
        Value::Number(n.into())
    }
}

impl From<u64> for Value {
    fn from(n: u64) -> Value {
        Value::Number(n.into())
    }
}

impl From<usize> for Value {
    fn from(n: usize) -> Value {
        Value::Number((n as u64).into())
    }
}

/// A float that is not finite is `null`, as in `serde_json`.
impl From<f64> for Value {
    fn from(f: f64) -> Value {
        Number::from_f64(f).map_or(Value::Null, Value::Number)
    }
}

impl From<String> for Value {
    fn from(text: String) -> Value {
        Value::String(Cow::Owned(text))
    }
}

impl From<&str> for Value {
    fn from(text: &str) -> Value {
        Value::String(Cow::Owned(text.to_string()))
    }
}

impl From<Vec<Value>> for Value {
    fn from(items: Vec<Value>) -> Value {
        Value::Array(items)
    }
}

impl From<Map> for Value {
    fn from(map: Map) -> Value {
        Value::Object(map)
    }
}

/// The same value as a `serde_json::Value`, for code outside the schema builder.
impl From<Value> for serde_json::Value {
    fn from(value: Value) -> serde_json::Value {
        match value {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(b),
            Value::Number(n) => serde_json::Value::Number(n),
            Value::String(text) => serde_json::Value::String(text.into_owned()),
            Value::Array(items) => serde_json::Value::Array(items.into_iter().map(Into::into).collect()),
            Value::Object(map) => serde_json::Value::Object(
                map.into_iter().map(|(key, value)| (key.into_owned(), value.into())).collect(),
            ),
        }
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Null => serializer.serialize_unit(),
            Value::Bool(b) => serializer.serialize_bool(*b),
            Value::Number(n) => n.serialize(serializer),
            Value::String(text) => serializer.serialize_str(text),
            Value::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Value::Object(map) => {
                let mut out = serializer.serialize_map(Some(map.len()))?;
                for (key, value) in map.iter() {
                    out.serialize_entry(key.as_ref(), value)?;
                }
                out.end()
            }
        }
    }
}

/// A [`Value`] written as JSON: `json!({"type": "string", "items": {}})`,
/// `json!([a, b])`, `json!(null)`, `json!("text")`, `json!(n)`. Keys are literals;
/// a literal string is borrowed, not copied. A value inside an object or an array is
/// one token: a literal, a name, or a bracketed JSON value.
macro_rules! json {
    (null) => {
        $crate::discovery::schema::json::Value::Null
    };
    ({}) => {
        $crate::discovery::schema::json::Value::any()
    };
    ({ $($key:literal : $value:tt),+ $(,)? }) => {
        $crate::discovery::schema::json::Value::object([$(($key, json!($value))),+])
    };
    ([ $($item:tt),* $(,)? ]) => {
        $crate::discovery::schema::json::Value::Array(vec![$(json!($item)),*])
    };
    ($text:literal) => {
        $crate::discovery::schema::json::Literal::value($text)
    };
    ($other:expr) => {
        $crate::discovery::schema::json::Value::from($other)
    };
}
pub(crate) use json;

/// A literal in `json!`: a string is borrowed.
pub trait Literal {
    /// The JSON value of the literal.
    fn value(self) -> Value;
}

impl Literal for &'static str {
    fn value(self) -> Value {
        Value::text(self)
    }
}

impl Literal for bool {
    fn value(self) -> Value {
        Value::Bool(self)
    }
}

impl Literal for i32 {
    fn value(self) -> Value {
        Value::from(i64::from(self))
    }
}

impl Literal for f64 {
    fn value(self) -> Value {
        Value::from(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_and_compares_as_serde_json_does_with_preserve_order() {
        let mut schema = json!({"type": "object", "properties": {"z": {"type": "integer"}, "a": {}}, "n": null});
        schema["required"] = json!(["z"]);
        schema["type"] = json!("object");
        let text = serde_json::to_string(&schema).unwrap();
        assert_eq!(text, r#"{"type":"object","properties":{"z":{"type":"integer"},"a":{}},"n":null,"required":["z"]}"#);
        let expected: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(serde_json::Value::from(schema.clone()), expected);

        let mut reordered = json!({"n": null, "required": ["z"], "properties": {"a": {}, "z": {"type": "integer"}}});
        reordered["type"] = json!("object");
        assert_eq!(reordered, schema, "objects are equal in any order");
        assert_ne!(json!({"a": 1}), json!({"a": 1, "b": 2}));

        let map = schema.as_object_mut().unwrap();
        assert_eq!(map.remove("type"), Some(json!("object")));
        let keys: Vec<&str> = map.keys().collect();
        assert_eq!(keys, ["required", "properties", "n"], "the last key moves into the gap, as swap_remove");
        assert_eq!(schema["missing"], Value::Null);
        assert_eq!(json!(-3).as_i64(), Some(-3));
        assert_eq!(json!(2.5).as_f64(), Some(2.5));
        assert_eq!(json!({"a": {"b": []}}).depth(), 3);
    }
}
