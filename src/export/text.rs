//! Lowering a schema on its compact text instead of its `Value` (a part of
//! [`FastPath::Splice`](crate::fast_paths::FastPath::Splice)): a lowering reads the
//! text once, as `serde` visitors (`export/gemini.rs`, `export/strict.rs`), going into
//! the members it lowers and taking every other member's value as its text
//! (`&RawValue`). The lowered object is a list of [`Fields`] whose values are that
//! text, kept, or text the lowering made, written out once, in the layout of the
//! document it goes into. Nothing is parsed that the lowering does not look into,
//! and nothing is built as a tree.
//!
//! The text is a `SchemaText`'s: compact, as `serde_json` writes it, so a value's text
//! is exactly what `serde_json` would print for it. A name is read only when written
//! without an escape (as `&str`), so every name can be written back as it is. A
//! lowering that meets anything it does not handle stops with an error ([`handled`]
//! then answers `None`) and the caller lowers the `Value`; the exports tests compare
//! both ways on every fixture.

use serde::de::{DeserializeSeed, Error};
use std::fmt::Display;

use super::Layout;
use super::splice;

/// What a format carries of a tool's parameters, lowered on their text.
pub(super) enum Lowered<'a> {
    /// The lowered schema, to write ([`Fields::write`]).
    Schema(Fields<'a>),
    /// No parameters at all (a Gemini declaration without properties).
    Nothing,
    /// What the format cannot express, each problem said as the `Value`'s lowering
    /// says it.
    Refused(Vec<String>),
}

/// `seed` run on `text`, or `None` if it stopped on something it does not handle.
pub(super) fn handled<'de, S: DeserializeSeed<'de>>(text: &'de str, seed: S) -> Option<S::Value> {
    seed.deserialize(&mut serde_json::Deserializer::from_str(text)).ok()
}

/// `seed` run on `text`, a value inside the text being read, stopping that reading
/// too if it stops.
pub(super) fn within<'de, S: DeserializeSeed<'de>, E: Error>(text: &'de str, seed: S) -> Result<S::Value, E> {
    seed.deserialize(&mut serde_json::Deserializer::from_str(text)).map_err(E::custom)
}

/// The error that stops a lowering on text at what it leaves to the `Value`'s.
pub(super) fn unhandled<E: Error>(what: impl Display) -> E {
    E::custom(format_args!("left to the lowering of values: {what}"))
}

/// A lowered object's members in order. A name set again keeps its place, as in a
/// `serde_json::Map` (with `preserve_order`).
pub(super) struct Fields<'a>(Vec<(&'a str, Piece<'a>)>);

/// A member's value: the input's own text, text the lowering made, or lowered
/// objects, written out only when the whole schema is.
pub(super) enum Piece<'a> {
    Kept(&'a str),
    Made(String),
    Object(Fields<'a>),
    Objects(Vec<Fields<'a>>),
    /// A list of names (read without escapes).
    Names(Vec<&'a str>),
}

impl Piece<'_> {
    /// The value as `serde_json` prints it in `layout`, at `depth`.
    fn write(&self, layout: Layout, depth: usize, out: &mut Vec<u8>) {
        match self {
            Piece::Kept(text) => splice::schema(text, layout, depth, out),
            Piece::Made(text) => splice::schema(text, layout, depth, out),
            Piece::Object(fields) => fields.write(layout, depth, out),
            Piece::Objects(objects) => {
                sequence(b"[]", objects, layout, depth, out, |object, out| object.write(layout, depth + 1, out))
            }
            Piece::Names(names) => sequence(b"[]", names, layout, depth, out, |name, out| {
                out.push(b'"');
                out.extend_from_slice(name.as_bytes());
                out.push(b'"');
            }),
        }
    }
}

/// `items` between `brackets` (a list's or an object's) at `depth`, as `serde_json`
/// prints them in `layout`, each written by `item`.
fn sequence<T>(
    brackets: &[u8; 2],
    items: &[T],
    layout: Layout,
    depth: usize,
    out: &mut Vec<u8>,
    mut item: impl FnMut(&T, &mut Vec<u8>),
) {
    if items.is_empty() {
        out.extend_from_slice(brackets);
        return;
    }
    out.push(brackets[0]);
    for (i, value) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        if layout == Layout::Pretty {
            splice::newline(out, depth + 1);
        }
        item(value, out);
    }
    if layout == Layout::Pretty {
        splice::newline(out, depth);
    }
    out.push(brackets[1]);
}

impl<'a> Fields<'a> {
    pub(super) fn with_capacity(capacity: usize) -> Self {
        Fields(Vec::with_capacity(capacity))
    }

    /// The value set for `key`.
    pub(super) fn get(&self, key: &str) -> Option<&Piece<'a>> {
        self.0.iter().find(|(name, _)| *name == key).map(|(_, piece)| piece)
    }

    /// The value set for `key`, to change.
    pub(super) fn get_mut(&mut self, key: &str) -> Option<&mut Piece<'a>> {
        self.0.iter_mut().find(|(name, _)| *name == key).map(|(_, piece)| piece)
    }

    /// Each member, its value to change.
    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = (&'a str, &mut Piece<'a>)> {
        self.0.iter_mut().map(|(name, piece)| (*name, piece))
    }

    /// The names of its members, in order.
    pub(super) fn names(&self) -> Vec<&'a str> {
        self.0.iter().map(|(name, _)| *name).collect()
    }

    /// `key` added last: a name the object does not have yet, as each member of an
    /// object being read.
    pub(super) fn push(&mut self, key: &'a str, piece: Piece<'a>) {
        self.0.push((key, piece));
    }

    /// `key` set to `piece`: in its place if it is set already, else last.
    pub(super) fn set(&mut self, key: &'a str, piece: Piece<'a>) {
        match self.0.iter_mut().find(|(name, _)| *name == key) {
            Some((_, slot)) => *slot = piece,
            None => self.0.push((key, piece)),
        }
    }

    /// `key` set to `piece` unless it is set already.
    pub(super) fn set_if_absent(&mut self, key: &'a str, piece: Piece<'a>) {
        if self.get(key).is_none() {
            self.0.push((key, piece));
        }
    }

    /// `key`'s value taken out; the members after it move up.
    pub(super) fn remove(&mut self, key: &str) -> Option<Piece<'a>> {
        let at = self.0.iter().position(|(name, _)| *name == key)?;
        Some(self.0.remove(at).1)
    }

    /// Whether it has no member.
    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether it is exactly `{key: text}`.
    pub(super) fn is_only(&self, key: &str, text: &str) -> bool {
        matches!(&self.0[..], [(name, Piece::Kept(kept))] if *name == key && *kept == text)
    }

    /// The object as `serde_json` prints it in `layout`, at `depth` (as
    /// `splice::schema` writes a schema's text). Names were read without escapes, so
    /// they are written as they were.
    pub(super) fn write(&self, layout: Layout, depth: usize, out: &mut Vec<u8>) {
        let colon: &[u8] = if layout == Layout::Pretty { b"\": " } else { b"\":" };
        sequence(b"{}", &self.0, layout, depth, out, |(key, piece), out| {
            out.push(b'"');
            out.extend_from_slice(key.as_bytes());
            out.extend_from_slice(colon);
            piece.write(layout, depth + 1, out);
        });
    }

    /// The object's text in `layout`, as a document of its own.
    #[cfg(test)]
    pub(super) fn text(&self, layout: Layout) -> String {
        let mut out = Vec::new();
        self.write(layout, 0, &mut out);
        String::from_utf8(out).expect("written from text")
    }
}

impl<'a> IntoIterator for Fields<'a> {
    type Item = (&'a str, Piece<'a>);
    type IntoIter = std::vec::IntoIter<(&'a str, Piece<'a>)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

/// The description a lowering leaves: `description`'s text (a JSON string, or
/// anything else, which counts as none) followed by `notes` (each note after a space,
/// as the `Value`'s lowering joins them), as the `Value`'s lowering leaves it; `None`
/// when that is empty.
pub(super) fn described<'a>(description: Option<&'a str>, notes: &str) -> Option<Piece<'a>> {
    let description = description.filter(|text| text.starts_with('"'));
    if notes.is_empty() {
        return description.filter(|text| *text != "\"\"").map(Piece::Kept);
    }
    // A JSON string is escaped character by character, so the joined text's is the
    // description's followed by the notes'.
    let own = description.map_or("", |text| &text[1..text.len() - 1]);
    let mut text = String::with_capacity(own.len() + notes.len() + 3);
    text.push('"');
    text.push_str(own);
    if description.is_some() {
        text.push(' ');
    }
    match notes.bytes().any(|byte| byte == b'"' || byte == b'\\' || byte < 0x20) {
        false => text.push_str(notes),
        true => {
            let escaped = serde_json::to_string(notes).expect("a string always serializes");
            text.push_str(&escaped[1..escaped.len() - 1]);
        }
    }
    text.push('"');
    Some(Piece::Made(text))
}

/// `note` added to the notes of a description (see [`described`]).
pub(super) fn note(notes: &mut String, note: std::fmt::Arguments<'_>) {
    use std::fmt::Write;
    if !notes.is_empty() {
        notes.push(' ');
    }
    let _ = notes.write_fmt(note);
}
