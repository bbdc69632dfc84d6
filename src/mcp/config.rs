//! `lcp serve --config FILE`: the host's configuration of the libraries it serves.
//!
//! The file is JSON when its name ends in `.json`, TOML otherwise (a TOML file that
//! fails to parse but starts with `{` is read as JSON). Two top-level keys, both
//! optional; any other key is an error, so a typo never goes unnoticed:
//!
//! ```toml
//! autonomy_level = "ask"      # "safe" (the default), "ask" or "full_access"
//!
//! [libraries.weather]         # keyed by library: a library folder's name, else the file stem
//! api_key = "..."
//! ```
//!
//! Each library's `init_tools_library(config)` receives its table plus
//! `autonomy_level` and `confirm_handler` (SPEC §5).

use std::path::Path;

use serde_json::Value;

use crate::runtime::RuntimeConfig;

/// The values `autonomy_level` may take (the same as `lcp call --autonomy`).
pub const AUTONOMY_LEVELS: [&str; 3] = ["safe", "ask", "full_access"];

pub fn read(path: &Path) -> Result<RuntimeConfig, String> {
    let text = std::fs::read_to_string(path).map_err(|err| format!("{}: {err}", path.display()))?;
    let is_json = path.extension().is_some_and(|ext| ext.eq_ignore_ascii_case("json"));
    let document = if is_json { parse_json(&text) } else { parse_toml(&text) };
    document.and_then(from_document).map_err(|err| format!("{}: {err}", path.display()))
}

fn parse_json(text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|err| format!("invalid JSON: {err}"))
}

fn parse_toml(text: &str) -> Result<Value, String> {
    match toml::from_str::<Value>(text) {
        Ok(value) => Ok(value),
        Err(_) if text.trim_start().starts_with('{') => parse_json(text),
        Err(err) => Err(format!("invalid TOML: {}", err.message().trim_end())),
    }
}

fn from_document(document: Value) -> Result<RuntimeConfig, String> {
    let Value::Object(mut top) = document else {
        return Err("the configuration must be a table (an object)".to_string());
    };
    let mut config = RuntimeConfig::default();
    match top.remove("autonomy_level") {
        None => {}
        Some(Value::String(level)) if AUTONOMY_LEVELS.contains(&level.as_str()) => config.autonomy_level = level,
        Some(other) => {
            return Err(format!("`autonomy_level` is {other}; expected one of {}", AUTONOMY_LEVELS.join(", ")));
        }
    }
    match top.remove("libraries") {
        None => {}
        Some(Value::Object(libraries)) => {
            for (key, table) in libraries {
                let Value::Object(table) = table else { return Err(format!("`libraries.{key}` must be a table")) };
                config.libraries.insert(key, table);
            }
        }
        Some(_) => return Err("`libraries` must be a table keyed by library".to_string()),
    }
    if let Some(key) = top.keys().next() {
        return Err(format!("unknown key `{key}`; expected `autonomy_level` or `libraries`"));
    }
    Ok(config)
}

/// The parts of a configuration a test compares.
#[cfg(test)]
fn summary(config: &RuntimeConfig) -> (String, Value) {
    let libraries: serde_json::Map<String, Value> =
        config.libraries.iter().map(|(key, table)| (key.clone(), Value::Object(table.clone()))).collect();
    (config.autonomy_level.clone(), Value::Object(libraries))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(document: Value, expected: Result<(&str, Value), &str>) {
        let actual = from_document(document).map(|config| summary(&config));
        assert_eq!(actual, expected.map(|(level, libraries)| (level.to_string(), libraries)).map_err(str::to_string));
    }

    #[test]
    fn documents() {
        check(json!({}), Ok(("safe", json!({}))));
        check(
            json!({"autonomy_level": "ask", "libraries": {"weather": {"key": 1}}}),
            Ok(("ask", json!({"weather": {"key": 1}}))),
        );
        check(json!([]), Err("the configuration must be a table (an object)"));
        check(
            json!({"autonomy_level": "all"}),
            Err("`autonomy_level` is \"all\"; expected one of safe, ask, full_access"),
        );
        check(json!({"libraries": 3}), Err("`libraries` must be a table keyed by library"));
        check(json!({"libraries": {"a": 3}}), Err("`libraries.a` must be a table"));
        check(json!({"autonomy": 1}), Err("unknown key `autonomy`; expected `autonomy_level` or `libraries`"));
    }

    #[test]
    fn toml_and_json_read_the_same() {
        let toml = parse_toml("autonomy_level = \"ask\"\n[libraries.weather]\nkey = 1\n").unwrap();
        let json = parse_json(r#"{"autonomy_level": "ask", "libraries": {"weather": {"key": 1}}}"#).unwrap();
        assert_eq!(toml, json);
        assert_eq!(parse_toml(r#"{"autonomy_level": "ask"}"#).unwrap(), json!({"autonomy_level": "ask"}));
        assert!(parse_toml("autonomy_level = \n").unwrap_err().starts_with("invalid TOML: "));
    }
}
