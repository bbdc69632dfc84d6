//! An MCP server's prompts, resources and resource templates as lcp's (SPEC §14, §15).
//!
//! Owns turning what a server lists into lcp's records: a prompt as a function named
//! with the server's `prefix` whose parameters are its arguments (strings, as MCP
//! has them), a resource or template under the URI the server gave (its function is
//! named by that URI, which the registry keeps unique), and a template's URI made
//! again from the variables a read matched. Every text lcp relays of them has its
//! control, bidi and zero-width characters stripped. Must never: rename a URI.

use serde_json::{Map, Value, json};

use crate::discovery::extract::{Resource, Returns, SchemaText, Tool};
use crate::host::config::ServerEntry;
use crate::host::text_safety;
use crate::policy::Declared;

/// `text` without control, bidi and zero-width characters.
fn plain(text: &str) -> String {
    text_safety::strip_invisible(text).into_owned()
}

/// A listed text field, stripped; `None` when absent or not a string.
fn field(listed: &Value, key: &str) -> Option<String> {
    listed.get(key).and_then(Value::as_str).map(plain)
}

/// One of the server's prompts as lcp's: named with the server's `prefix`, its
/// arguments as string parameters (required when the server says so).
pub(super) fn prompt(entry: &ServerEntry, listed: &Value) -> Option<Tool> {
    let name = listed["name"].as_str()?;
    let mut properties = Map::new();
    let mut required = Vec::new();
    for argument in listed["arguments"].as_array().into_iter().flatten() {
        let Some(argument_name) = argument["name"].as_str() else { continue };
        let mut property = json!({ "type": "string" });
        if let Some(description) = field(argument, "description") {
            property["description"] = json!(description);
        }
        properties.insert(argument_name.to_string(), property);
        if argument["required"] == true {
            required.push(argument_name.to_string());
        }
    }
    let mut schema = json!({ "type": "object", "properties": properties });
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    let description = field(listed, "description").or_else(|| field(listed, "title"));
    Some(function(entry, format!("{}{name}", entry.prefix), name, description, &schema))
}

/// One of the server's resources (`template` false, its `uri`) or resource templates
/// (its `uriTemplate`) as lcp's: the URI as the server gave it, each variable a
/// required string parameter.
pub(super) fn resource(entry: &ServerEntry, listed: &Value, template: bool) -> Option<Resource> {
    let uri = listed[if template { "uriTemplate" } else { "uri" }].as_str()?;
    let mut properties = Map::new();
    let variables: Vec<String> = expressions(uri).into_iter().map(|(_, _, name)| name.to_string()).collect();
    for variable in &variables {
        properties.insert(variable.clone(), json!({ "type": "string" }));
    }
    let mut schema = json!({ "type": "object", "properties": properties });
    if !variables.is_empty() {
        schema["required"] = json!(variables);
    }
    let description = field(listed, "description");
    Some(Resource {
        function: function(entry, uri.to_string(), uri, description.clone(), &schema),
        uri: uri.to_string(),
        name: field(listed, "name"),
        title: field(listed, "title"),
        mime_type: field(listed, "mimeType"),
        description,
    })
}

/// The function record of a prompt or resource: `name` in lcp, `declared_as` the key
/// of the server's `tools` tables that declares it (its name, or its URI).
fn function(entry: &ServerEntry, name: String, declared_as: &str, description: Option<String>, schema: &Value) -> Tool {
    let policy = match entry.declared(declared_as) {
        Some(declared) => declared.over(&Declared::default()),
        None => Declared::default(),
    };
    Tool {
        name,
        description: description.unwrap_or_else(|| crate::discovery::extract::NO_DESCRIPTION.to_string()),
        parameters: SchemaText::new(schema),
        parameters_with_defs: None,
        line: entry.line.unwrap_or(1),
        is_async: false,
        docstring: None,
        returns: Returns::default(),
        prompt_provider: None,
        output: None,
        policy,
        becomes_task: false,
    }
}

/// The expressions of a URI template: where each is (its braces included), whether
/// it is a reserved expansion (`{+name}`), and the variable's name.
fn expressions(template: &str) -> Vec<(std::ops::Range<usize>, bool, &str)> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(open) = template[from..].find('{').map(|at| from + at) {
        let Some(close) = template[open..].find('}').map(|at| open + at) else { break };
        let inside = &template[open + 1..close];
        let (reserved, name) = match inside.strip_prefix('+') {
            Some(name) => (true, name),
            None => (false, inside),
        };
        found.push((open..close + 1, reserved, name));
        from = close + 1;
    }
    found
}

/// The URI a template gives for `arguments` (RFC 6570 levels 1 and 2): `{name}` with
/// everything but unreserved characters percent-encoded, `{+name}` keeping reserved
/// ones too.
pub(super) fn expand(template: &str, arguments: &Map<String, Value>) -> String {
    let mut uri = String::with_capacity(template.len());
    let mut at = 0;
    for (range, reserved, name) in expressions(template) {
        uri.push_str(&template[at..range.start]);
        let value = match arguments.get(name) {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        for byte in value.bytes() {
            let kept = byte.is_ascii_alphanumeric()
                || b"-._~".contains(&byte)
                || (reserved && b":/?#[]@!$&'()*+,;=%".contains(&byte));
            if kept {
                uri.push(byte as char);
            } else {
                uri.push_str(&format!("%{byte:02X}"));
            }
        }
        at = range.end;
    }
    uri.push_str(&template[at..]);
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_is_expanded_as_rfc_6570_says() {
        let args = |value: &str| Map::from_iter([("id".to_string(), json!(value))]);
        assert_eq!(expand("demo://text/{id}", &args("12")), "demo://text/12");
        assert_eq!(expand("demo://text/{id}/x", &args("a b/c")), "demo://text/a%20b%2Fc/x");
        assert_eq!(expand("files://{+id}", &args("a/b c")), "files://a/b%20c");
        assert_eq!(expand("plain://fixed", &Map::new()), "plain://fixed");
    }
}
