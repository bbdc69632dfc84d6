//! Text about an MCP server made safe to emit (SPEC §14, §17): its secrets replaced,
//! and what it says made plain.
//!
//! Owns [`Secrets`], the one redaction of a server's secret strings (every value a
//! `${VAR}` of its config expanded to, its URL's userinfo and query values, its header
//! values) wherever lcp writes about the server (messages, logs, errors, diagnostics),
//! and [`strip_invisible`], the characters an upstream server's texts lose before lcp
//! relays them (control characters but `\n` and `\t`, bidi marks, zero-width ones).
//!
//! Must never: let a secret through in any form lcp knows it in (as written, percent-
//! encoded, percent-decoded), or change a text that holds nothing to strip.

// Without the `python` feature there is no MCP client, so nothing relays a text:
// the stripping below is built with it.

use std::borrow::Cow;

#[cfg(feature = "python")]
use serde_json::Value;

/// What a secret becomes.
pub const REDACTED: &str = "***";

/// The secret strings of one server: replaced by [`REDACTED`] in any text about it.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secrets(Vec<String>);

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets({} kept)", self.0.len())
    }
}

impl Secrets {
    /// Adds `secret` (nothing when it is empty), with its percent-encoded and
    /// percent-decoded forms, as a URL or an error may show it.
    pub fn add(&mut self, secret: &str) {
        if secret.is_empty() {
            return;
        }
        let decoded = crate::discovery::extract::percent_decode(secret);
        let encoded: String = url::form_urlencoded::byte_serialize(secret.as_bytes()).collect();
        let encoded_path = percent_encode_all(secret);
        for form in [secret.to_string(), decoded, encoded, encoded_path] {
            if !form.is_empty() && !self.0.contains(&form) {
                self.0.push(form);
            }
        }
        // The longest first: a secret that holds another is replaced whole.
        self.0.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
    }

    /// Adds the secrets of a URL: its userinfo (name and password) and the value of
    /// each query parameter.
    pub fn add_url(&mut self, url: &str) {
        let Ok(parsed) = url::Url::parse(url) else { return };
        self.add(parsed.username());
        if let Some(password) = parsed.password() {
            self.add(password);
        }
        for (_, value) in parsed.query_pairs() {
            self.add(&value);
        }
        for pair in parsed.query().unwrap_or_default().split('&') {
            if let Some((_, value)) = pair.split_once('=') {
                self.add(value);
            }
        }
    }

    /// Whether there is no secret to hide.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `text` with each occurrence of a secret replaced by [`REDACTED`].
    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        if !self.0.iter().any(|secret| text.contains(secret.as_str())) {
            return Cow::Borrowed(text);
        }
        let mut text = text.to_string();
        for secret in &self.0 {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), REDACTED);
            }
        }
        Cow::Owned(text)
    }

    /// [`Secrets::redact`] into an owned string.
    pub fn redacted(&self, text: &str) -> String {
        self.redact(text).into_owned()
    }
}

/// A URL as lcp shows it: its userinfo and its query values replaced by [`REDACTED`]
/// (the text itself, redacted of every query value, when it is not a URL).
pub fn shown_url(url: &str) -> String {
    let Ok(mut parsed) = url::Url::parse(url) else {
        let mut secrets = Secrets::default();
        if let Some((_, query)) = url.split_once('?') {
            for pair in query.split('&') {
                secrets.add(pair.split_once('=').map_or("", |(_, value)| value));
            }
        }
        if let Some((userinfo, _)) = url.split_once("://").and_then(|(_, rest)| rest.split_once('@')) {
            secrets.add(userinfo);
        }
        return secrets.redacted(url);
    };
    if !parsed.username().is_empty() || parsed.password().is_some() {
        let _ = parsed.set_username(REDACTED);
        let _ = parsed.set_password(None);
    }
    if let Some(query) = parsed.query() {
        let shown: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((name, _)) => format!("{name}={REDACTED}"),
                None => pair.to_string(),
            })
            .collect();
        parsed.set_query(Some(&shown.join("&")));
    }
    parsed.to_string()
}

/// Whether an upstream text loses `c`: a control character other than `\n` and `\t`,
/// a bidi mark (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C) or a
/// zero-width one (U+200B–U+200D, U+2060, U+FEFF).
#[cfg(feature = "python")]
pub fn is_invisible(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
        || matches!(c, '\u{200B}'..='\u{200D}' | '\u{2060}' | '\u{FEFF}')
}

/// `text` without the characters [`is_invisible`] names.
#[cfg(feature = "python")]
pub fn strip_invisible(text: &str) -> Cow<'_, str> {
    if text.chars().any(is_invisible) {
        Cow::Owned(text.chars().filter(|&c| !is_invisible(c)).collect())
    } else {
        Cow::Borrowed(text)
    }
}

/// Strips, in place, every `description` and `title` string of a JSON Schema, at any
/// depth, leaving values alone (`default`, `const`, `enum`, `examples`).
#[cfg(feature = "python")]
pub fn strip_schema_texts(schema: &mut Value) {
    match schema {
        Value::Object(fields) => {
            for (key, value) in fields.iter_mut() {
                match (key.as_str(), value) {
                    ("description" | "title", Value::String(text)) => {
                        if let Cow::Owned(stripped) = strip_invisible(text) {
                            *text = stripped;
                        }
                    }
                    ("default" | "const" | "enum" | "examples", _) => {}
                    (_, value) => strip_schema_texts(value),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_schema_texts),
        _ => {}
    }
}

/// Every byte but ASCII letters, digits and `-._~` as `%XX`: a URL's userinfo as a
/// serializer may write it.
fn percent_encode_all(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            b => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(feature = "python")]
    use serde_json::json;

    #[test]
    fn every_form_of_a_secret_is_redacted() {
        let mut secrets = Secrets::default();
        secrets.add("s3cr3t/+ key");
        secrets.add("");
        let text = "a s3cr3t/+ key, s3cr3t%2F%2B%20key and s3cr3t%2F%2B+key";
        assert_eq!(secrets.redact(text), "a ***, *** and ***");
        assert!(matches!(secrets.redact("nothing here"), Cow::Borrowed(_)));
        assert_eq!(format!("{secrets:?}"), "Secrets(3 kept)", "no secret in Debug");
    }

    #[test]
    fn a_urls_userinfo_and_query_values_are_secrets_and_are_not_shown() {
        let url = "http://user:p%40ss@127.0.0.1:9/mcp?api_key=k%20ey&flag&x=1";
        let mut secrets = Secrets::default();
        secrets.add_url(url);
        let said = format!("error sending request for url ({url}): p@ss, k ey, user");
        let redacted = secrets.redact(&said);
        for secret in ["p%40ss", "p@ss", "k%20ey", "k ey", "user"] {
            assert!(!redacted.contains(secret), "{redacted}");
        }
        assert_eq!(shown_url(url), "http://***@127.0.0.1:9/mcp?api_key=***&flag&x=***");
        assert_eq!(shown_url("http://127.0.0.1:9/mcp"), "http://127.0.0.1:9/mcp");
        assert_eq!(shown_url("not a url?key=v"), "not a url?key=***");
    }

    #[test]
    #[cfg(feature = "python")]
    fn control_bidi_and_zero_width_characters_are_stripped() {
        let text = "Reads\u{1b}[31m a\u{202e}txt.exe\u{200b} file\n\twell\u{feff}\u{061c}\u{2066}\r";
        assert_eq!(strip_invisible(text), "Reads[31m atxt.exe file\n\twell");
        assert!(matches!(strip_invisible("plain\ntext"), Cow::Borrowed(_)));
        let mut schema = json!({
            "description": "top\u{200d}",
            "properties": {"a": {"title": "A\u{7}", "default": "keep\u{7}", "enum": ["x\u{200b}"]}},
            "anyOf": [{"description": "\u{202a}in a list"}],
        });
        strip_schema_texts(&mut schema);
        assert_eq!(
            schema,
            json!({
                "description": "top",
                "properties": {"a": {"title": "A", "default": "keep\u{7}", "enum": ["x\u{200b}"]}},
                "anyOf": [{"description": "in a list"}],
            })
        );
    }
}
