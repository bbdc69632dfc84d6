//! Prompts and resources (SPEC §15): the `TOOL_RESOURCES` declarations a file makes,
//! the URI a resource is read at, and URI templates matched against the URIs clients
//! ask for.
//!
//! Owns what a resource is as data and how its URI is found and matched. Never runs
//! Python and never reads a file: `extract` hands it literal values.

use serde::Serialize;
use serde_json::{Map, Value};

use super::Tool;

/// The prefix of a prompt function's name.
pub const PROMPT_PREFIX: &str = "prompt_";
/// The prefix of a resource function's name.
pub const RESOURCE_PREFIX: &str = "resource_";
/// The prefix of a completion function's name: `complete_<prompt or resource>`.
pub const COMPLETE_PREFIX: &str = "complete_";

/// One `resource_*` function: a resource, or a resource template when its URI holds
/// parameters (`{id}`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Resource {
    /// The function, with its parameters (the template's variables) and docstring.
    pub function: Tool,
    /// The URI, or the URI template (RFC 6570 `{name}` and `{+name}` variables).
    pub uri: String,
    /// The declared `name`; else the function's name is shown.
    pub name: Option<String>,
    /// The declared `title`.
    pub title: Option<String>,
    /// The declared `mimeType`.
    #[serde(rename = "mimeType")]
    pub mime_type: Option<String>,
    /// The declared `description`; else the docstring's summary.
    pub description: Option<String>,
}

impl Resource {
    /// Whether it is a template: its URI holds variables.
    pub fn is_template(&self) -> bool {
        !variables(&self.uri).is_empty()
    }

    /// The name MCP lists it under: the declared one, else the function's.
    pub fn shown_name(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.function.name)
    }

    /// Its description: the declared one, else the function's.
    pub fn description(&self) -> &str {
        self.description.as_deref().unwrap_or(&self.function.description)
    }

    /// The arguments of a read of `uri`: the template's variables as strings, `None`
    /// when `uri` is not one of this resource's.
    pub fn arguments_of(&self, uri: &str) -> Option<Map<String, Value>> {
        let parts = parts(&self.uri);
        let mut found = Vec::new();
        if !matches(&parts, uri, &mut found) {
            return None;
        }
        Some(found.into_iter().map(|(name, value)| (name, Value::String(percent_decode(value)))).collect())
    }
}

/// The URI of a resource without a declared one: `lcp://<library>/<name>`, then
/// `/{param}` per parameter, in their order.
pub fn default_uri(library: &str, function: &Tool) -> String {
    let name = function.name.strip_prefix(RESOURCE_PREFIX).unwrap_or(&function.name);
    let mut uri = format!("lcp://{library}/{name}");
    for parameter in parameter_names(function) {
        uri.push_str(&format!("/{{{parameter}}}"));
    }
    uri
}

/// The names of a function's parameters, in their order.
pub fn parameter_names(function: &Tool) -> Vec<String> {
    function.parameters.value()["properties"].as_object().map(|p| p.keys().cloned().collect()).unwrap_or_default()
}

/// The names of the parameters a function requires.
pub fn required_names(function: &Tool) -> Vec<String> {
    let schema = function.parameters.value();
    schema["required"].as_array().into_iter().flatten().filter_map(|name| name.as_str().map(String::from)).collect()
}

/// The variables of a URI template, in their order.
pub fn variables(uri: &str) -> Vec<String> {
    parts(uri)
        .into_iter()
        .filter_map(|part| match part {
            Part::Variable { name, .. } => Some(name.to_string()),
            Part::Literal(_) => None,
        })
        .collect()
}

/// What a declaration in `TOOL_RESOURCES` says of one resource, with the problems of
/// its keys; the keys are `uri`, `name`, `title`, `mimeType` and `description`.
#[derive(Debug, Default)]
pub struct Declared {
    pub uri: Option<String>,
    pub name: Option<String>,
    pub title: Option<String>,
    pub mime_type: Option<String>,
    pub description: Option<String>,
}

/// Reads one entry of `TOOL_RESOURCES`; each problem is a sentence naming the key.
pub fn read_declaration(function: &str, value: &Value) -> (Declared, Vec<String>) {
    let mut declared = Declared::default();
    let mut problems = Vec::new();
    let Some(object) = value.as_object() else {
        problems.push(format!("`TOOL_RESOURCES[\"{function}\"]` is not a dict of strings: ignored"));
        return (declared, problems);
    };
    for (key, value) in object {
        let slot = match key.as_str() {
            "uri" => &mut declared.uri,
            "name" => &mut declared.name,
            "title" => &mut declared.title,
            "mimeType" | "mime_type" => &mut declared.mime_type,
            "description" => &mut declared.description,
            _ => {
                problems.push(format!(
                    "`TOOL_RESOURCES[\"{function}\"]` has the unknown key `{key}`: ignored (expected uri, name, title, mimeType or description)"
                ));
                continue;
            }
        };
        match value.as_str() {
            Some(text) if !text.trim().is_empty() => *slot = Some(text.to_string()),
            _ => {
                problems.push(format!("`TOOL_RESOURCES[\"{function}\"][\"{key}\"]` is not a non-empty string: ignored"))
            }
        }
    }
    (declared, problems)
}

/// Why a resource's URI cannot serve its function, if it cannot: a variable that is
/// no parameter, a required parameter the URI does not hold, a URI without a scheme.
pub fn uri_problem(function: &Tool, uri: &str) -> Option<String> {
    let name = &function.name;
    if !uri.split_once(':').is_some_and(|(scheme, _)| is_scheme(scheme)) {
        return Some(format!("the URI `{uri}` of `{name}` has no scheme (such as `notes://`)"));
    }
    if uri.matches('{').count() != uri.matches('}').count() || parts(uri).iter().any(|part| part.is_empty_variable()) {
        return Some(format!("the URI template `{uri}` of `{name}` has an unclosed or empty `{{}}`"));
    }
    let variables = variables(uri);
    let parameters = parameter_names(function);
    if let Some(unknown) = variables.iter().find(|variable| !parameters.contains(variable)) {
        return Some(format!("the URI `{uri}` of `{name}` holds `{{{unknown}}}`, which is not a parameter of it"));
    }
    if let Some(missing) = required_names(function).into_iter().find(|required| !variables.contains(required)) {
        return Some(format!(
            "`{name}` requires `{missing}`, which its URI `{uri}` does not hold (add `{{{missing}}}` or give it a default)"
        ));
    }
    None
}

fn is_scheme(scheme: &str) -> bool {
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// A piece of a URI template.
#[derive(Debug, PartialEq)]
enum Part<'u> {
    Literal(&'u str),
    /// `{name}` (no `/` in its value) or `{+name}` (any characters).
    Variable {
        name: &'u str,
        reserved: bool,
    },
}

impl Part<'_> {
    fn is_empty_variable(&self) -> bool {
        matches!(self, Part::Variable { name, .. } if name.is_empty())
    }
}

fn parts(template: &str) -> Vec<Part<'_>> {
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}').map(|close| open + close) else { break };
        if open > 0 {
            parts.push(Part::Literal(&rest[..open]));
        }
        let inner = &rest[open + 1..close];
        let (name, reserved) = match inner.strip_prefix('+') {
            Some(name) => (name, true),
            None => (inner, false),
        };
        parts.push(Part::Variable { name, reserved });
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Literal(rest));
    }
    parts
}

/// Whether `uri` is `parts` with a non-empty value for each variable, the values
/// pushed onto `found`. A template holds a few parts: the backtracking is bounded by
/// their number times the URI's length.
fn matches<'u>(parts: &[Part<'_>], uri: &'u str, found: &mut Vec<(String, &'u str)>) -> bool {
    match parts.split_first() {
        None => uri.is_empty(),
        Some((Part::Literal(literal), rest)) => uri.strip_prefix(literal).is_some_and(|uri| matches(rest, uri, found)),
        Some((Part::Variable { name, reserved }, rest)) => {
            let end = if *reserved { uri.len() } else { uri.find('/').unwrap_or(uri.len()) };
            for cut in (1..=end).rev().filter(|&cut| uri.is_char_boundary(cut)) {
                found.push((name.to_string(), &uri[..cut]));
                if matches(rest, &uri[cut..], found) {
                    return true;
                }
                found.pop();
            }
            false
        }
    }
}

pub(crate) fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(high), Some(low)) =
                (bytes.get(i + 1).and_then(|&b| hex(b)), bytes.get(i + 2).and_then(|&b| hex(b)))
        {
            out.push((high * 16 + low) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_string())
}

/// The values a parameter's schema allows, when it lists them (`Literal`, `Enum`):
/// what completion offers for it.
#[cfg(feature = "python")]
pub fn listed_values(function: &Tool, parameter: &str) -> Vec<String> {
    let schema = function.parameters.value();
    let property = &schema["properties"][parameter];
    let mut values = Vec::new();
    collect_enum(property, schema, &mut values, 0);
    values
}

#[cfg(feature = "python")]
fn collect_enum(schema: &Value, root: &Value, values: &mut Vec<String>, depth: usize) {
    if depth > 8 {
        return;
    }
    if let Some(listed) = schema.get("enum").and_then(Value::as_array) {
        for value in listed {
            let text = match value {
                Value::String(text) => text.clone(),
                Value::Null => continue,
                other => other.to_string(),
            };
            if !values.contains(&text) {
                values.push(text);
            }
        }
    }
    if let Some(constant) = schema.get("const").and_then(Value::as_str)
        && !values.iter().any(|v| v == constant)
    {
        values.push(constant.to_string());
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        for branch in schema.get(key).and_then(Value::as_array).into_iter().flatten() {
            collect_enum(branch, root, values, depth + 1);
        }
    }
    if let Some(target) = schema.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/"))
        && let Some(found) = root.pointer(&format!("/{target}"))
    {
        collect_enum(found, root, values, depth + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(uri: &str) -> Vec<Part<'_>> {
        parts(uri)
    }

    fn matched(template_uri: &str, uri: &str) -> Option<Vec<(String, String)>> {
        let parts = template(template_uri);
        let mut found = Vec::new();
        matches(&parts, uri, &mut found).then(|| found.into_iter().map(|(n, v)| (n, v.to_string())).collect())
    }

    #[test]
    fn templates_match_their_uris_and_nothing_else() {
        let pair = |n: &str, v: &str| (n.to_string(), v.to_string());
        assert_eq!(matched("test://template/{id}/data", "test://template/123/data"), Some(vec![pair("id", "123")]));
        assert_eq!(matched("test://template/{id}/data", "test://template//data"), None);
        assert_eq!(matched("test://template/{id}/data", "test://template/1/2/data"), None);
        assert_eq!(matched("files://{+path}", "files://a/b/c.txt"), Some(vec![pair("path", "a/b/c.txt")]));
        assert_eq!(
            matched("lcp://notes/{folder}/{name}", "lcp://notes/work/todo"),
            Some(vec![pair("folder", "work"), pair("name", "todo")])
        );
        assert_eq!(matched("test://static-text", "test://static-text"), Some(vec![]));
        assert_eq!(matched("test://static-text", "test://static-text2"), None);
        assert_eq!(percent_decode("a%20b%2Fc%zz"), "a b/c%zz");
        assert_eq!(variables("x://{a}/{+b}"), ["a", "b"]);
    }
}
