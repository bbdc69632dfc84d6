//! Paths as JSON text. JSON strings are Unicode; a Unix path is bytes, and a file or
//! folder name need not be UTF-8. Owns the one lossless encoding lcp writes wherever a
//! path goes into JSON (the manifest, `check --format json`, any serialized
//! [`Diagnostic`](crate::diag::Diagnostic) or [`Library`](crate::discovery::extract::Library)):
//!
//! - every `%` is written `%25`;
//! - every byte that is not part of valid UTF-8 is written `%XX` (upper-case hex);
//! - everything else is written as it is, so most paths are unchanged.
//!
//! [`decode`] gives back the exact bytes, as does Python's
//! `os.fsdecode(urllib.parse.unquote_to_bytes(text))`. Text for people (diagnostics on
//! stderr, `lcp list`) shows paths with `Path::display` instead. It never fails.

use std::borrow::Cow;
use std::ffi::OsString;
use std::fmt::Write;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use serde::Serializer;

/// The JSON text of a path (borrowed when nothing needs escaping).
pub fn encode(path: &Path) -> Cow<'_, str> {
    let bytes = path.as_os_str().as_bytes();
    match std::str::from_utf8(bytes) {
        Ok(text) if !text.contains('%') => Cow::Borrowed(text),
        _ => {
            let mut out = String::with_capacity(bytes.len() + 8);
            for chunk in bytes.utf8_chunks() {
                out.push_str(&chunk.valid().replace('%', "%25"));
                for byte in chunk.invalid() {
                    let _ = write!(out, "%{byte:02X}");
                }
            }
            Cow::Owned(out)
        }
    }
}

/// The path whose JSON text is `text`; a `%` not followed by two hex digits stays.
pub fn decode(text: &str) -> PathBuf {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = match bytes.get(i..i + 3) {
            Some([b'%', high, low]) if high.is_ascii_hexdigit() && low.is_ascii_hexdigit() => {
                std::str::from_utf8(&bytes[i + 1..i + 3]).ok().and_then(|hex| u8::from_str_radix(hex, 16).ok())
            }
            _ => None,
        };
        match escaped {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    PathBuf::from(OsString::from_vec(out))
}

/// `#[serde(serialize_with = "crate::path_json::serialize")]` for a path field.
pub fn serialize<S: Serializer>(path: &Path, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&encode(path))
}

/// `#[serde(serialize_with = "crate::path_json::serialize_option")]` for an optional
/// path field.
pub(crate) fn serialize_option<S: Serializer>(path: &Option<PathBuf>, serializer: S) -> Result<S::Ok, S::Error> {
    match path {
        Some(path) => serialize(path, serializer),
        None => serializer.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(bytes: &[u8], expected: &str) {
        let path = PathBuf::from(OsString::from_vec(bytes.to_vec()));
        assert_eq!(encode(&path), expected);
        assert_eq!(decode(expected), path, "{expected}");
    }

    #[test]
    fn paths_that_are_not_utf8_are_percent_encoded_losslessly() {
        check(b"tools/weather.py", "tools/weather.py");
        check("tools/météo ☀.py".as_bytes(), "tools/météo ☀.py");
        check(b"\xff.py", "%FF.py");
        check(b"\xfe/a\xc3.py", "%FE/a%C3.py");
        check(b"50%.py", "50%25.py");
        check(b"%FF\xff", "%25FF%FF");
    }

    #[test]
    fn a_percent_without_two_hex_digits_decodes_as_itself() {
        assert_eq!(decode("a%2"), Path::new("a%2"));
        assert_eq!(decode("a%zz%"), Path::new("a%zz%"));
        assert_eq!(decode("%+1"), Path::new("%+1"));
        assert_eq!(decode("%ff"), PathBuf::from(OsString::from_vec(vec![0xff])));
    }
}
