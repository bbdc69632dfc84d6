//! Seed 000's documentation tools (SPEC §14): with `[mcp] docs_tools = true`, `lcp
//! serve` lists `docs_index` (each shown tool's and the profile's documentation
//! file) and `resolve_doc(path)` (one of those files, read when asked).
//!
//! Owns their definitions and their answers. `resolve_doc` reads only a path the
//! index lists, exactly as it lists it: it never becomes a way to read any other file.
//! A tool of the same name shown by the host wins; these are then left out, saying so.

use std::path::Path;
use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, Tool, ToolAnnotations};
use serde_json::{Map, Value, json};

use crate::host::view::Doc;

/// The index's tool.
pub(super) const INDEX: &str = "docs_index";
/// The reading tool.
pub(super) const RESOLVE: &str = "resolve_doc";
/// Both, as a call names them.
pub(super) const NAMES: [&str; 2] = [INDEX, RESOLVE];

/// The definitions of the tools not shadowed by one in `shown`, as `tools/list`
/// carries them; a shadowed one is named on stderr.
pub(super) fn tools(shown: &[&str]) -> Vec<Tool> {
    let index = Tool::new(
        INDEX,
        "The documentation files of the tools shown and of the profile, by name; read one with resolve_doc.",
        object(json!({"type": "object", "properties": {}, "additionalProperties": false})),
    )
    .with_raw_output_schema(object(json!({
        "type": "object",
        "properties": {
            "tool_docs": {"type": "object", "additionalProperties": {"type": "string"}},
            "profile_docs": {"type": "object", "additionalProperties": {"type": "string"}},
        },
        "required": ["tool_docs", "profile_docs"],
    })));
    let resolve = Tool::new(
        RESOLVE,
        "The text of one documentation file, named by its path as docs_index lists it.",
        object(json!({
            "type": "object",
            "properties": {"path": {"type": "string", "description": "A path from docs_index."}},
            "required": ["path"],
            "additionalProperties": false,
        })),
    );
    let read_only = ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false);
    [index, resolve]
        .into_iter()
        .filter(|tool| {
            let shadowed = shown.contains(&tool.name.as_ref());
            if shadowed {
                eprintln!("lcp: `[mcp] docs_tools`: a tool named `{}` is shown, so lcp's own is left out", tool.name);
            }
            !shadowed
        })
        .map(|tool| tool.annotate(read_only.clone()))
        .collect()
}

/// The answer to a call of `name` when it is one of these tools, with `docs` the
/// host's documentation and `folder` the one paths are shown relative to.
pub(super) fn call(name: &str, arguments: &Map<String, Value>, docs: &[Doc], folder: &Path) -> Option<CallToolResult> {
    match name {
        INDEX => Some(index(arguments, docs, folder)),
        RESOLVE => Some(resolve(arguments, docs, folder)),
        _ => None,
    }
}

fn index(arguments: &Map<String, Value>, docs: &[Doc], folder: &Path) -> CallToolResult {
    if let Some(key) = arguments.keys().next() {
        return failure(format!("{INDEX} takes no arguments; `{key}` is not one"));
    }
    let (mut tool_docs, mut profile_docs) = (Map::new(), Map::new());
    for doc in docs {
        let listed = if doc.uri.starts_with("docs://profiles/") { &mut profile_docs } else { &mut tool_docs };
        listed.insert(doc.name.clone(), Value::String(shown_path(&doc.path, folder)));
    }
    let index = json!({"tool_docs": tool_docs, "profile_docs": profile_docs});
    let mut result = CallToolResult::success(vec![ContentBlock::text(index.to_string())]);
    result.structured_content = Some(index);
    result
}

fn resolve(arguments: &Map<String, Value>, docs: &[Doc], folder: &Path) -> CallToolResult {
    let path = match arguments.get("path") {
        Some(Value::String(path)) => path,
        Some(other) => return failure(format!("`path` is {other}; expected a string from {INDEX}")),
        None => return failure(format!("{RESOLVE} needs `path`, one of the paths {INDEX} lists")),
    };
    if let Some(key) = arguments.keys().find(|key| *key != "path") {
        return failure(format!("{RESOLVE} takes `path` only; `{key}` is not one of its arguments"));
    }
    let Some(doc) = docs.iter().find(|doc| shown_path(&doc.path, folder) == *path) else {
        return failure(format!("no documentation at `{path}`: {RESOLVE} reads only the paths {INDEX} lists"));
    };
    match std::fs::read_to_string(&doc.path) {
        Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Err(err) => {
            failure(format!("{} (the documentation of {}) cannot be read: {err}", doc.path.display(), doc.name))
        }
    }
}

/// `path` relative to `folder` when it is inside it, else as it is.
fn shown_path(path: &Path, folder: &Path) -> String {
    path.strip_prefix(folder).unwrap_or(path).display().to_string()
}

fn failure(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// A schema written as a JSON object literal, as rmcp's `Tool` takes it.
pub(super) fn object(value: Value) -> Arc<Map<String, Value>> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => unreachable!("tool schemas are written as objects"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn docs(folder: &Path) -> Vec<Doc> {
        vec![
            Doc { uri: "docs://profiles/debug".into(), name: "debug".into(), path: folder.join("docs/debug.md") },
            Doc { uri: "docs://tools/read".into(), name: "read".into(), path: folder.join("docs/read.md") },
        ]
    }

    #[test]
    fn the_index_names_paths_relative_to_the_folder() {
        let folder = PathBuf::from("/cfg");
        let result = index(&Map::new(), &docs(&folder), &folder);
        assert_eq!(
            result.structured_content,
            Some(json!({"tool_docs": {"read": "docs/read.md"}, "profile_docs": {"debug": "docs/debug.md"}}))
        );
    }

    #[test]
    fn only_listed_paths_are_read() {
        let folder = std::env::temp_dir().join(format!("lcp-docs-{}", std::process::id()));
        std::fs::create_dir_all(folder.join("docs")).unwrap();
        std::fs::write(folder.join("docs/read.md"), "# read\n").unwrap();
        std::fs::write(folder.join("secret.txt"), "no").unwrap();
        let docs = docs(&folder);
        let read = |path: &str| {
            let arguments = json!({"path": path}).as_object().unwrap().clone();
            let result = resolve(&arguments, &docs, &folder);
            (result.is_error == Some(true), serde_json::to_value(&result.content).unwrap()[0]["text"].clone())
        };
        assert_eq!(read("docs/read.md"), (false, json!("# read\n")));
        for path in ["secret.txt", "docs/../secret.txt", folder.join("secret.txt").to_str().unwrap()] {
            let (failed, text) = read(path);
            assert!(failed && text.as_str().unwrap().contains("reads only the paths docs_index lists"), "{text}");
        }
        let (failed, text) = read("docs/debug.md");
        assert!(failed && text.as_str().unwrap().contains("cannot be read"), "{text}");
        std::fs::remove_dir_all(&folder).unwrap();
    }

    #[test]
    fn a_shown_tool_of_the_same_name_wins() {
        let names: Vec<String> = tools(&["docs_index"]).into_iter().map(|tool| tool.name.to_string()).collect();
        assert_eq!(names, ["resolve_doc"]);
    }
}
