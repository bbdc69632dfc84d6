//! JSON text with pieces spliced in: how a document is written without being built.
//!
//! [`write`] prints a `Value` exactly as `serde_json` does (compact, or pretty with
//! two-space indents), except that a *marker* string (a NUL character, then a name)
//! is replaced by whatever its callback writes there, at that depth: the list of a
//! document's tools, or a tool's schema. [`schema`] writes a compact JSON text (a
//! `SchemaText`) in either layout without parsing it: in a JSON text made by
//! `serde_json`, strings never hold a raw newline or structural character outside
//! quotes, so re-indenting is a byte scan. Nothing here knows about tools or formats.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::{CharEscape, Formatter, Serializer};

use super::Layout;

/// The first character of a marker string: no text a tool gives starts a string that
/// then names a marker the caller knows, and an unknown name is written as it is.
const MARKER_START: u8 = 0;

/// A marker string for `name`, to put in a `Value` where [`write`] should splice.
pub fn marker(name: &str) -> serde_json::Value {
    serde_json::Value::String(format!("{}{name}", MARKER_START as char))
}

/// What a splice callback gets: the marker's name, the depth it sits at (for pretty
/// text), and where to write. It returns `false` for a name it does not know, which
/// is then written as the string it is.
pub type Splice<'a> = dyn FnMut(&str, usize, &mut dyn Write) -> io::Result<bool> + 'a;

/// Writes `value` at `depth` in `layout` to `out`, replacing marker strings by what
/// `splice` writes.
pub fn write<W: Write>(
    value: &impl Serialize,
    layout: Layout,
    depth: usize,
    out: &mut W,
    splice: &mut Splice<'_>,
) -> io::Result<()> {
    let formatter = Splicing { layout, depth, has_value: false, string: Text::Outside, splice };
    let mut serializer = Serializer::with_formatter(out, formatter);
    value.serialize(&mut serializer).map_err(io::Error::from)
}

/// Writes the compact JSON text `text` (as `serde_json` makes it) in `layout`, at
/// `depth`: the same bytes `serde_json` would print for its parsed value.
pub fn schema(text: &str, layout: Layout, depth: usize, out: &mut Vec<u8>) {
    match layout {
        Layout::Compact => out.extend_from_slice(text.as_bytes()),
        Layout::Pretty => reindent(text.as_bytes(), depth, out),
    }
}

fn reindent(text: &[u8], mut depth: usize, out: &mut Vec<u8>) {
    out.reserve(text.len() * 2);
    let mut i = 0;
    while i < text.len() {
        let byte = text[i];
        match byte {
            b'"' => {
                let end = string_end(text, i);
                out.extend_from_slice(&text[i..end]);
                i = end;
                continue;
            }
            // `{}` and `[]` stay on one line: `}` is `{` + 2, `]` is `[` + 2.
            b'{' | b'[' if text.get(i + 1) == Some(&(byte + 2)) => {
                out.extend_from_slice(&text[i..i + 2]);
                i += 2;
                continue;
            }
            b'{' | b'[' => {
                depth += 1;
                out.push(byte);
                newline(out, depth);
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                newline(out, depth);
                out.push(byte);
            }
            b',' => {
                out.push(b',');
                newline(out, depth);
            }
            b':' => out.extend_from_slice(b": "),
            _ => out.push(byte),
        }
        i += 1;
    }
}

/// The index just past the string that starts with the quote at `start`.
fn string_end(text: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while let Some(found) = memchr::memchr2(b'"', b'\\', &text[i..]) {
        i += found;
        if text[i] == b'"' {
            return i + 1;
        }
        i += 2;
    }
    text.len()
}

/// A new line, indented for `depth`.
pub(super) fn newline(out: &mut Vec<u8>, depth: usize) {
    out.push(b'\n');
    indent(out, depth);
}

fn indent(out: &mut impl Extend<u8>, depth: usize) {
    out.extend(std::iter::repeat_n(b' ', depth * 2));
}

/// Where the formatter is in a string: a string's opening quote is held back until
/// its first character shows whether it is a marker.
enum Text {
    Outside,
    Opened,
    Plain,
    Marker(String),
}

/// `serde_json`'s compact and pretty formatters in one, with marker strings
/// replaced (the pretty part is `serde_json::ser::PrettyFormatter`'s logic).
struct Splicing<'s, 'a> {
    layout: Layout,
    depth: usize,
    has_value: bool,
    string: Text,
    splice: &'s mut Splice<'a>,
}

impl Splicing<'_, '_> {
    fn pretty(&self) -> bool {
        self.layout == Layout::Pretty
    }

    fn open<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        match std::mem::replace(&mut self.string, Text::Plain) {
            Text::Opened => writer.write_all(b"\""),
            Text::Marker(name) => {
                writer.write_all(b"\"\\u0000")?;
                writer.write_all(name.as_bytes())
            }
            Text::Outside | Text::Plain => Ok(()),
        }
    }

    fn begin<W: ?Sized + Write>(&mut self, writer: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        writer.write_all(bracket)
    }

    fn end<W: ?Sized + Write>(&mut self, writer: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.depth -= 1;
        if self.pretty() && self.has_value {
            writer.write_all(b"\n")?;
            write_indent(writer, self.depth)?;
        }
        writer.write_all(bracket)
    }

    fn item<W: ?Sized + Write>(&mut self, writer: &mut W, first: bool) -> io::Result<()> {
        match (self.pretty(), first) {
            (true, true) => writer.write_all(b"\n")?,
            (true, false) => writer.write_all(b",\n")?,
            (false, true) => return Ok(()),
            (false, false) => return writer.write_all(b","),
        }
        write_indent(writer, self.depth)
    }
}

fn write_indent<W: ?Sized + Write>(writer: &mut W, depth: usize) -> io::Result<()> {
    const SPACES: &[u8; 64] = &[b' '; 64];
    let mut left = depth * 2;
    while left > 0 {
        let now = left.min(SPACES.len());
        writer.write_all(&SPACES[..now])?;
        left -= now;
    }
    Ok(())
}

/// `&mut W` for a `W` that may be unsized, as a `dyn Write` for the splice callback.
struct Dyn<'w, W: ?Sized>(&'w mut W);

impl<W: ?Sized + Write> Write for Dyn<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl Formatter for Splicing<'_, '_> {
    fn begin_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.begin(writer, b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.end(writer, b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, writer: &mut W, first: bool) -> io::Result<()> {
        self.item(writer, first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.begin(writer, b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.end(writer, b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, writer: &mut W, first: bool) -> io::Result<()> {
        self.item(writer, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(if self.pretty() { b": " } else { b":" })
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_string<W: ?Sized + Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        self.string = Text::Opened;
        Ok(())
    }

    fn write_string_fragment<W: ?Sized + Write>(&mut self, writer: &mut W, fragment: &str) -> io::Result<()> {
        if let Text::Marker(name) = &mut self.string {
            name.push_str(fragment);
            return Ok(());
        }
        self.open(writer)?;
        writer.write_all(fragment.as_bytes())
    }

    fn write_char_escape<W: ?Sized + Write>(&mut self, writer: &mut W, escape: CharEscape) -> io::Result<()> {
        if matches!(self.string, Text::Opened) && matches!(escape, CharEscape::AsciiControl(MARKER_START)) {
            self.string = Text::Marker(String::new());
            return Ok(());
        }
        self.open(writer)?;
        serde_json::ser::CompactFormatter.write_char_escape(writer, escape)
    }

    fn end_string<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        match std::mem::replace(&mut self.string, Text::Outside) {
            Text::Opened => writer.write_all(b"\"\""),
            Text::Plain => writer.write_all(b"\""),
            Text::Marker(name) => {
                if (self.splice)(&name, self.depth, &mut Dyn(writer))? {
                    return Ok(());
                }
                self.string = Text::Marker(name);
                self.open(writer)?;
                self.string = Text::Outside;
                writer.write_all(b"\"")
            }
            Text::Outside => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn written(value: &Value, layout: Layout, splice: &mut Splice<'_>) -> String {
        let mut out = Vec::new();
        write(value, layout, 0, &mut out, splice).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn serde(value: &Value, layout: Layout) -> String {
        match layout {
            Layout::Compact => serde_json::to_string(value).unwrap(),
            Layout::Pretty => serde_json::to_string_pretty(value).unwrap(),
        }
    }

    fn samples() -> Vec<Value> {
        vec![
            json!(null),
            json!([]),
            json!({}),
            json!(""),
            json!({"a": [], "b": {}, "c": [[], {}], "": ""}),
            json!({"text": "quote \" backslash \\ tab \t nul \u{0} unicode é 😀 braces {[,:]}", "n": -1.5e10}),
            json!([1, [2, [3, {"x": {"y": [true, false, null]}}]], "\u{1}"]),
            json!({"deep": {"er": {"est": [{"k": "v"}, {"k2": ["a", "b"]}]}}}),
        ]
    }

    #[test]
    fn without_markers_the_text_is_serde_jsons() {
        for value in samples() {
            for layout in [Layout::Compact, Layout::Pretty] {
                assert_eq!(written(&value, layout, &mut |_, _, _| Ok(false)), serde(&value, layout), "{value}");
            }
        }
    }

    #[test]
    fn a_compact_text_is_written_in_either_layout_as_serde_json_would() {
        for value in samples() {
            let compact = serde_json::to_string(&value).unwrap();
            for layout in [Layout::Compact, Layout::Pretty] {
                // At depth 1, inside an array: what the value looks like as a list item.
                let mut out = Vec::new();
                schema(&compact, layout, 1, &mut out);
                let item = String::from_utf8(out).unwrap();
                let around = match layout {
                    Layout::Compact => format!("[{item}]"),
                    Layout::Pretty => format!("[\n  {item}\n]"),
                };
                assert_eq!(around, serde(&json!([value]), layout), "{value}");
            }
        }
    }

    #[test]
    fn a_marker_is_replaced_by_its_splice_at_its_depth() {
        let inner = json!({"type": "object", "properties": {"x": {"type": ["string", "null"]}}});
        let text = serde_json::to_string(&inner).unwrap();
        let outer = |value: Value| json!({"tools": [{"name": "a", "schema": value}, "\u{0}unknown"]});
        for layout in [Layout::Compact, Layout::Pretty] {
            let mut splice = |name: &str, depth: usize, out: &mut dyn Write| {
                if name != "schema" {
                    return Ok(false);
                }
                let mut text_out = Vec::new();
                schema(&text, layout, depth, &mut text_out);
                out.write_all(&text_out)?;
                Ok(true)
            };
            let spliced = written(&outer(marker("schema")), layout, &mut splice);
            assert_eq!(spliced, serde(&outer(inner.clone()), layout));
        }
    }
}
