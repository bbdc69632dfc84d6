//! `[mcp_servers.NAME] pin = true` (SPEC §14, §17): each tool's definition as the
//! server first listed it, recorded in a file beside the config
//! (`<config stem>.pins.json`), so a server that later changes a tool's description,
//! schemas or annotations (a "rug pull") has that tool hidden, with one diagnostic
//! saying what changed, until `lcp check --accept` records the new definition. A tool
//! never seen before is recorded on first sight (trust on first use).
//!
//! The file is JSON in a stable order (keys sorted at every depth):
//! `{"servers": {NAME: {TOOL: {"digest": "sha256:<hex>", "definition": {...}}}}}`,
//! the digest that of the definition's compact text. It is written whole, to a
//! temporary file renamed over it.
//!
//! Must never: list a pinned tool whose definition differs from the recorded one
//! (unless accepting), or lose another server's pins when writing one server's.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::host::config::ServerEntry;
use crate::sync;

/// The parts of a definition a change is named by, in the order they are named.
const PARTS: [&str; 5] = ["title", "description", "inputSchema", "outputSchema", "annotations"];

/// One read-modify-write of a pins file at a time in this process.
static WRITING: Mutex<()> = Mutex::new(());

/// A pinned tool whose listed definition differs from the recorded one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Changed {
    /// Its name on the server.
    pub tool: String,
    /// What differs: some of [`PARTS`].
    pub parts: Vec<&'static str>,
}

/// What checking a listing against the pins found.
#[derive(Debug, Default)]
pub(super) struct Checked {
    /// The tools to hide.
    pub changed: Vec<Changed>,
    /// Problems that hide nothing (the file could not be written).
    pub problems: Vec<String>,
    /// Where the pins are.
    pub file: PathBuf,
}

/// The pins file of a config file: `<stem>.pins.json` beside it.
pub(super) fn file_of(config: &Path) -> PathBuf {
    let stem = config.file_stem().map(|stem| stem.to_string_lossy().into_owned()).unwrap_or_else(|| "lcp".into());
    config.with_file_name(format!("{stem}.pins.json"))
}

/// A listed tool's definition, as pinned: its name, title, description, input and
/// output schemas and annotations as the server sent them, keys sorted.
pub(super) fn definition(listed: &Value) -> Value {
    let mut definition = Map::new();
    definition.insert("name".to_string(), listed["name"].clone());
    for part in PARTS {
        if let Some(value) = listed.get(part).filter(|value| !value.is_null()) {
            definition.insert(part.to_string(), value.clone());
        }
    }
    sorted(&Value::Object(definition))
}

/// `sha256:<hex>` of a definition's compact text.
pub(super) fn digest(definition: &Value) -> String {
    let text = serde_json::to_string(definition).unwrap_or_default();
    let hash = Sha256::digest(text.as_bytes());
    let hex: String = hash.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("sha256:{hex}")
}

/// Checks `listed` (the server's tools as listed) against the pins of `entry`'s
/// server: a tool seen before whose definition differs is [`Changed`]; a tool never
/// seen is recorded. With `accept`, every listed definition is recorded and none is
/// changed. `Err` when the file exists but cannot be read as pins (nothing is then
/// listed: nothing can be compared).
pub(super) fn check(entry: &ServerEntry, listed: &[Value], accept: bool) -> Result<Checked, String> {
    let file = file_of(&entry.file);
    let _writing = sync::lock(&WRITING);
    let mut document = match std::fs::read_to_string(&file) {
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(document @ Value::Object(_)) if document["servers"].is_object() || document.get("servers").is_none() => {
                document
            }
            Ok(_) if accept => json!({}),
            Ok(_) => return Err(format!("its pins `{}` are not a pins file", file.display())),
            Err(_) if accept => json!({}),
            Err(err) => return Err(format!("its pins `{}` are not JSON ({err})", file.display())),
        },
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => json!({}),
        Err(err) => return Err(format!("its pins `{}` cannot be read: {err}", file.display())),
    };
    let pinned = document["servers"][entry.name.as_str()].as_object().cloned().unwrap_or_default();
    let mut recorded = pinned.clone();
    let mut checked = Checked { file: file.clone(), ..Checked::default() };
    let mut accepted = Vec::new();
    for tool in listed {
        let Some(name) = tool["name"].as_str() else { continue };
        let definition = definition(tool);
        let digest = digest(&definition);
        match pinned.get(name) {
            Some(pin) if pin["digest"] == digest.as_str() => {}
            Some(pin) if !accept => {
                let before = &pin["definition"];
                let parts: Vec<&'static str> =
                    PARTS.into_iter().filter(|part| before.get(*part) != definition.get(*part)).collect();
                // A digest that differs with the same definition: the record was edited.
                let parts = if parts.is_empty() { vec!["definition"] } else { parts };
                checked.changed.push(Changed { tool: name.to_string(), parts });
            }
            seen => {
                if seen.is_some() {
                    accepted.push(format!("`{name}`"));
                }
                recorded.insert(name.to_string(), json!({"digest": digest, "definition": definition}));
            }
        }
    }
    if recorded != pinned {
        if !document["servers"].is_object() {
            document["servers"] = json!({});
        }
        document["servers"][entry.name.as_str()] = Value::Object(recorded);
        match write(&file, &sorted(&document)) {
            Err(err) => checked
                .problems
                .push(format!("its tools' definitions could not be recorded in `{}`: {err}", file.display())),
            // `lcp check --accept` says what it accepted.
            Ok(()) if !accepted.is_empty() => eprintln!(
                "lcp: MCP server `{}`: the new definitions of {} are recorded in `{}`",
                entry.name,
                accepted.join(", "),
                file.display()
            ),
            Ok(()) => {}
        }
    }
    Ok(checked)
}

/// The message of a hidden tool.
pub(super) fn hidden_message(changed: &Changed, file: &Path) -> String {
    format!(
        "its tool `{}` is hidden: its {} changed since it was pinned in `{}` (`lcp check --accept` records the new definition)",
        changed.tool,
        changed.parts.join(", "),
        file.display()
    )
}

/// `value` with the keys of every object sorted.
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(fields) => {
            let mut keys: Vec<&String> = fields.keys().collect();
            keys.sort();
            Value::Object(keys.into_iter().map(|key| (key.clone(), sorted(&fields[key]))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// Writes `document` to `file` through a temporary file beside it, renamed over it.
fn write(file: &Path, document: &Value) -> std::io::Result<()> {
    let mut text = serde_json::to_string_pretty(document).map_err(std::io::Error::other)?;
    text.push('\n');
    let name = file.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let temporary = file.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let written = std::fs::write(&temporary, text)
        .and_then(|()| std::fs::File::open(&temporary).and_then(|f| f.sync_all()))
        .and_then(|()| std::fs::rename(&temporary, file));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(dir: &Path) -> ServerEntry {
        ServerEntry {
            name: "srv".to_string(),
            transport: crate::host::config::Transport::Stdio {
                command: "x".to_string(),
                args: Vec::new(),
                env: Vec::new(),
                cwd: None,
            },
            prefix: String::new(),
            startup_timeout: std::time::Duration::from_secs(1),
            tools: Vec::new(),
            file: dir.join("lcp.toml"),
            line: None,
            pin: true,
            secrets: Default::default(),
        }
    }

    #[test]
    fn a_tool_is_recorded_on_first_sight_and_a_changed_one_is_named_until_accepted() {
        let dir = std::env::temp_dir().join(format!("lcp-pins-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let entry = entry(&dir);
        let tool = |description: &str| json!({"name": "probe", "description": description, "inputSchema": {"type": "object", "properties": {}}});
        let first = check(&entry, &[tool("Reads.")], false).unwrap();
        assert!(first.changed.is_empty() && first.problems.is_empty(), "{first:?}");
        let text = std::fs::read_to_string(dir.join("lcp.pins.json")).unwrap();
        let document: Value = serde_json::from_str(&text).unwrap();
        let pin = &document["servers"]["srv"]["probe"];
        assert_eq!(pin["definition"]["description"], "Reads.");
        assert_eq!(pin["digest"], digest(&definition(&tool("Reads."))));
        // Keys in order, at every depth.
        assert!(text.find("\"definition\"").unwrap() < text.find("\"digest\"").unwrap(), "{text}");

        assert!(check(&entry, &[tool("Reads.")], false).unwrap().changed.is_empty());
        let changed = check(&entry, &[tool("Reads, then sends it away.")], false).unwrap();
        assert_eq!(changed.changed, [Changed { tool: "probe".to_string(), parts: vec!["description"] }]);
        // Still changed: nothing was recorded.
        assert_eq!(check(&entry, &[tool("Reads, then sends it away.")], false).unwrap().changed.len(), 1);
        assert!(check(&entry, &[tool("Reads, then sends it away.")], true).unwrap().changed.is_empty());
        assert!(check(&entry, &[tool("Reads, then sends it away.")], false).unwrap().changed.is_empty());

        std::fs::write(dir.join("lcp.pins.json"), "not json").unwrap();
        assert!(check(&entry, &[tool("Reads.")], false).unwrap_err().contains("not JSON"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
