//! `lcp serve --config FILE`: the host's configuration for the libraries it serves.
//!
//! The file is JSON when its name ends in `.json`, TOML otherwise (a TOML file that
//! fails to parse but starts with `{` is read as JSON). Two top-level keys, both
//! optional; any other key is an error, so a typo never goes unnoticed:
//!
//! ```toml
//! autonomy_level = "safe"          # any value; passed to every library as is
//!
//! [libraries.weather]              # keyed by library stem (the file name without .py)
//! api_key = "..."
//! ```
//!
//! Each library's `init_tools_library(config)` receives its table plus
//! `autonomy_level` (SPEC §5).

use std::path::Path;

use serde_json::{Map, Value};

#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostConfig {
    pub autonomy_level: Option<Value>,
    /// Per-library configuration, keyed by library stem.
    pub libraries: Map<String, Value>,
}

impl HostConfig {
    pub fn read(path: &Path) -> Result<HostConfig, String> {
        let text = std::fs::read_to_string(path).map_err(|err| format!("{}: {err}", path.display()))?;
        let is_json = path.extension().is_some_and(|ext| ext.eq_ignore_ascii_case("json"));
        let document = if is_json { parse_json(&text) } else { parse_toml(&text) };
        document.and_then(from_document).map_err(|err| format!("{}: {err}", path.display()))
    }

    /// The configuration one library's `init_tools_library` receives: its own table
    /// plus `autonomy_level` (the library's own `autonomy_level` key wins).
    pub fn for_library(&self, stem: &str) -> Map<String, Value> {
        let mut config = match self.libraries.get(stem) {
            Some(Value::Object(table)) => table.clone(),
            _ => Map::new(),
        };
        if let Some(level) = &self.autonomy_level {
            config.entry("autonomy_level").or_insert_with(|| level.clone());
        }
        config
    }
}

fn parse_json(text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|err| format!("invalid JSON: {err}"))
}

fn parse_toml(text: &str) -> Result<Value, String> {
    match toml::from_str::<Value>(text) {
        Ok(value) => Ok(value),
        Err(_) if text.trim_start().starts_with('{') => parse_json(text),
        Err(err) => Err(format!("invalid TOML: {}", err.message())),
    }
}

fn from_document(document: Value) -> Result<HostConfig, String> {
    let Value::Object(mut top) = document else {
        return Err("the configuration must be a table (an object)".to_string());
    };
    let autonomy_level = top.remove("autonomy_level");
    let libraries = match top.remove("libraries") {
        None => Map::new(),
        Some(Value::Object(libraries)) => libraries,
        Some(_) => return Err("`libraries` must be a table keyed by library stem".to_string()),
    };
    for (stem, table) in &libraries {
        if !table.is_object() {
            return Err(format!("`libraries.{stem}` must be a table"));
        }
    }
    if let Some(key) = top.keys().next() {
        return Err(format!("unknown key `{key}`; expected `autonomy_level` or `libraries`"));
    }
    Ok(HostConfig { autonomy_level, libraries })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(document: Value, expected: Result<HostConfig, &str>) {
        assert_eq!(from_document(document), expected.map_err(str::to_string));
    }

    #[test]
    fn documents() {
        check(json!({}), Ok(HostConfig::default()));
        check(
            json!({"autonomy_level": "safe", "libraries": {"weather": {"key": 1}}}),
            Ok(HostConfig {
                autonomy_level: Some(json!("safe")),
                libraries: json!({"weather": {"key": 1}}).as_object().unwrap().clone(),
            }),
        );
        check(json!([]), Err("the configuration must be a table (an object)"));
        check(json!({"libraries": 3}), Err("`libraries` must be a table keyed by library stem"));
        check(json!({"libraries": {"a": 3}}), Err("`libraries.a` must be a table"));
        check(json!({"autonomy": 1}), Err("unknown key `autonomy`; expected `autonomy_level` or `libraries`"));
    }

    #[test]
    fn toml_and_json_read_the_same() {
        let toml = parse_toml("autonomy_level = \"safe\"\n[libraries.weather]\nkey = 1\n").unwrap();
        let json = parse_json(r#"{"autonomy_level": "safe", "libraries": {"weather": {"key": 1}}}"#).unwrap();
        assert_eq!(toml, json);
        assert_eq!(parse_toml(r#"{"autonomy_level": 2}"#).unwrap(), json!({"autonomy_level": 2}));
    }

    #[test]
    fn library_config_gets_the_autonomy_level_unless_it_sets_its_own() {
        let config = from_document(
            json!({"autonomy_level": "safe", "libraries": {"a": {"autonomy_level": "full"}, "b": {"x": 1}}}),
        )
        .unwrap();
        assert_eq!(Value::Object(config.for_library("a")), json!({"autonomy_level": "full"}));
        assert_eq!(Value::Object(config.for_library("b")), json!({"x": 1, "autonomy_level": "safe"}));
        assert_eq!(Value::Object(config.for_library("c")), json!({"autonomy_level": "safe"}));
    }
}
