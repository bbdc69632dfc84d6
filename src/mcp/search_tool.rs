//! `search_tools` (SPEC §21): when a catalog is large, `tools/list` carries this tool
//! and `[mcp] always_list` instead of every tool; the model finds the others by
//! searching, and calls them by name as ever.
//!
//! Owns the tool's definition, its answer, and the index it searches. An index is one
//! caller's view of one catalog (a search never returns a tool the caller may not
//! see), kept for as long as what it was built from stays the same (the listing's key:
//! the registry's generation, the config as read, the caller's profile; one kept per
//! profile) and updated, once, at the first search after a change: the index of the
//! catalog before is kept for every library that reads the same, and only new or
//! changed libraries are read ([`Index::update`]).

use std::sync::{Arc, Mutex};

use rmcp::model::{CallToolResult, ContentBlock, Tool, ToolAnnotations};
use serde_json::{Map, Value, json};

use super::docs::object;
use super::listing::Key;
use crate::discovery::registry::{Descriptions, Registry};
use crate::host::search::Index;
use crate::sync;

/// The tool's name.
pub(super) const NAME: &str = "search_tools";
/// Tools a search returns when it names no `limit`.
const DEFAULT_LIMIT: usize = 5;
/// The most tools a search returns.
const MAX_LIMIT: usize = 50;

/// What one caller is shown of one catalog, ready to search.
pub(super) struct Catalog {
    /// The view's registry: the tools under the names the caller sees.
    registry: Registry,
    descriptions: Descriptions,
    index: Index,
    /// `[mcp] inline_refs`, for each tool's `inputSchema`.
    inline_refs: bool,
}

impl Catalog {
    /// The catalog of `registry` (a view's), its tools described by `descriptions`;
    /// its index made from the index of `before` (this profile's catalog before a
    /// change) when there is one, reading only what changed.
    pub(super) fn new(
        registry: Registry,
        descriptions: Descriptions,
        inline_refs: bool,
        before: Option<&Catalog>,
    ) -> Catalog {
        let index = match before {
            Some(before) => before.index.update(&registry, &descriptions),
            None => Index::build(&registry, &descriptions),
        };
        Catalog { registry, descriptions, index, inline_refs }
    }
}

/// The last catalog built for each profile callers chose (sessions of different
/// profiles search side by side without building each other's catalog again), with
/// what it was built from.
#[derive(Default)]
pub(super) struct Searches {
    current: Mutex<Vec<(Key, Arc<Catalog>)>>,
}

impl Searches {
    /// The catalog kept for `key`, else the one `build` makes, given the one kept for
    /// `key`'s profile if any (the new one is then kept in its place; `None`: tool
    /// search is off for it, and nothing is kept).
    pub(super) fn catalog(
        &self,
        key: Key,
        build: impl FnOnce(Option<&Catalog>) -> Option<Catalog>,
    ) -> Option<Arc<Catalog>> {
        let mut current = sync::lock(&self.current);
        let kept = current.iter().position(|(built, _)| built.profile == key.profile);
        if let Some(at) = kept
            && current[at].0 == key
        {
            return Some(Arc::clone(&current[at].1));
        }
        let catalog = Arc::new(build(kept.map(|at| &*current[at].1))?);
        match kept {
            Some(at) => current[at] = (key, Arc::clone(&catalog)),
            None => current.push((key, Arc::clone(&catalog))),
        }
        Some(catalog)
    }
}

/// Whether a view of `registry` shows `search_tools` instead of its tools under
/// `config`: tool search is on for its number of tools, and no tool of its own is
/// called `search_tools` (that one wins, and the whole list is shown, saying so).
pub(super) fn is_on(registry: &Registry, config: &crate::host::config::McpConfig) -> bool {
    if !config.tool_search_on(registry.tools().count()) {
        return false;
    }
    let shadowed = registry.tool(NAME).is_some();
    if shadowed {
        eprintln!("lcp: a tool named `{NAME}` is shown, so lcp's own is left out and every tool is listed");
    }
    !shadowed
}

/// `registry` with only the tools `names` lists, for `tools/list` beside `search_tools`.
pub(super) fn always_listed(registry: &Registry, names: &[String]) -> Registry {
    let libraries = registry
        .libraries()
        .iter()
        .filter(|library| library.tools.iter().any(|tool| names.contains(&tool.name)))
        .map(|library| {
            let mut library = (**library).clone();
            library.tools.retain(|tool| names.contains(&tool.name));
            Arc::new(library)
        })
        .collect();
    Registry::from_libraries(libraries, Vec::new())
}

/// The tool's definition, as `tools/list` carries it.
pub(super) fn tool() -> Tool {
    let input = json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What the tool should do, in a few words."},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_LIMIT,
                "default": DEFAULT_LIMIT,
                "description": "The most tools to return.",
            },
        },
        "required": ["query"],
        "additionalProperties": false,
    });
    let output = json!({
        "type": "object",
        "properties": {
            "tools": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "description": {"type": "string"},
                        "inputSchema": {"type": "object"},
                    },
                    "required": ["name", "description", "inputSchema"],
                },
            },
        },
        "required": ["tools"],
    });
    let description = "Search this server's tools: the tools that best answer the query, best first, each with \
                       its description and input schema. Call a tool found by its name.";
    let read_only = ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false);
    Tool::new(NAME, description, object(input)).with_raw_output_schema(object(output)).annotate(read_only)
}

/// The answer to a call with `arguments`: the tools found, or what is wrong with the
/// arguments (a tool error the model can read).
pub(super) fn call(arguments: &Map<String, Value>, catalog: &Catalog) -> CallToolResult {
    let (query, limit) = match asked(arguments) {
        Ok(asked) => asked,
        Err(message) => return CallToolResult::error(vec![ContentBlock::text(message)]),
    };
    let tools: Vec<Value> = catalog
        .index
        .search(query, limit)
        .into_iter()
        .filter_map(|hit| {
            let (_, tool) = catalog.registry.tool(&hit.name)?;
            Some(json!({
                "name": hit.name,
                "description": catalog.descriptions.of(tool),
                "inputSchema": crate::export::mcp_input_schema(tool, catalog.inline_refs),
            }))
        })
        .collect();
    let found = json!({ "tools": tools });
    let mut result = CallToolResult::success(vec![ContentBlock::text(found.to_string())]);
    result.structured_content = Some(found);
    result
}

/// The query and limit of a call's arguments.
fn asked(arguments: &Map<String, Value>) -> Result<(&str, usize), String> {
    if let Some(key) = arguments.keys().find(|key| !matches!(key.as_str(), "query" | "limit")) {
        return Err(format!("{NAME} takes `query` and `limit`; `{key}` is not one of its arguments"));
    }
    let query = match arguments.get("query") {
        Some(Value::String(query)) if !query.trim().is_empty() => query,
        Some(Value::String(_)) => return Err(format!("{NAME}: `query` is empty; say what the tool should do")),
        Some(other) => return Err(format!("{NAME}: `query` is {other}; expected a string")),
        None => return Err(format!("{NAME} needs `query`: what the tool should do, in a few words")),
    };
    let limit = match arguments.get("limit") {
        None | Some(Value::Null) => DEFAULT_LIMIT,
        // A whole number written with a fraction (`5.0`) is an integer to JSON Schema.
        Some(Value::Number(n)) => {
            match n.as_u64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && *f >= 1.0).map(|f| f as u64)) {
                Some(limit @ 1..) if limit <= MAX_LIMIT as u64 => limit as usize,
                _ => return Err(format!("{NAME}: `limit` is {n}; expected a whole number from 1 to {MAX_LIMIT}")),
            }
        }
        Some(other) => {
            return Err(format!("{NAME}: `limit` is {other}; expected a whole number from 1 to {MAX_LIMIT}"));
        }
    };
    Ok((query, limit))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arguments(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    fn catalog() -> Registry {
        let folder = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/search/catalog");
        let sources = crate::discovery::registry::Sources { folders: vec![folder], files: Vec::new() };
        Registry::load(&sources, &crate::discovery::registry::Options::default())
    }

    #[test]
    fn tool_search_is_on_when_set_else_above_the_threshold() {
        let registry = catalog();
        let shown = registry.tools().count();
        let config = |tool_search: Option<bool>, threshold: Option<usize>| crate::host::config::McpConfig {
            tool_search,
            tool_search_threshold: threshold,
            ..Default::default()
        };
        assert!(!is_on(&registry, &config(None, None)), "{shown} tools, under the default 200");
        assert!(is_on(&registry, &config(None, Some(shown - 1))));
        assert!(!is_on(&registry, &config(None, Some(shown))));
        assert!(is_on(&registry, &config(Some(true), Some(1000))));
        assert!(!is_on(&registry, &config(Some(false), Some(0))));
    }

    #[test]
    fn always_listed_keeps_only_the_tools_named_in_discovery_order() {
        let names = ["tool_send_email", "tool_read_text", "tool_nowhere"].map(String::from);
        let listed = always_listed(&catalog(), &names);
        let kept: Vec<&str> = listed.tools().map(|(_, tool)| tool.name.as_str()).collect();
        assert_eq!(kept, ["tool_read_text", "tool_send_email"]);
    }

    #[test]
    fn a_catalog_is_kept_for_its_key_and_profile_and_built_again_for_another_key() {
        let searches = Searches::default();
        let config = Arc::new(crate::host::config::Config::default());
        let key = |generation: u64| Key { generation, config: Arc::clone(&config), profile: None };
        let builds = std::cell::Cell::new(0);
        // Whether each build was given the catalog kept before it for its profile.
        let given = std::cell::RefCell::new(Vec::new());
        let build = |before: Option<&Catalog>| {
            builds.set(builds.get() + 1);
            given.borrow_mut().push(before.is_some());
            Some(Catalog::new(catalog(), Descriptions::default(), false, before))
        };
        let first = searches.catalog(key(0), build).unwrap();
        let again = searches.catalog(key(0), build).unwrap();
        assert!(Arc::ptr_eq(&first, &again) && builds.get() == 1);
        let next = searches.catalog(key(1), build).unwrap();
        assert!(!Arc::ptr_eq(&first, &next) && builds.get() == 2);
        // Off for a key: nothing kept, the last catalog stays.
        assert!(searches.catalog(key(2), |_| None).is_none());
        assert!(Arc::ptr_eq(&searches.catalog(key(1), build).unwrap(), &next));
        // Another profile's catalog is kept beside it.
        let other = Key { profile: Some("mail".to_string()), ..key(1) };
        let mail = searches.catalog(other.clone(), build).unwrap();
        assert!(Arc::ptr_eq(&searches.catalog(key(1), build).unwrap(), &next));
        assert!(Arc::ptr_eq(&searches.catalog(other, build).unwrap(), &mail) && builds.get() == 3);
        // The catalog of a new key is made from its profile's catalog before, if any.
        assert_eq!(*given.borrow(), [false, true, false]);
    }

    #[test]
    fn limit_defaults_to_five_and_stays_within_one_to_fifty() {
        assert_eq!(asked(&arguments(json!({"query": "weather"}))), Ok(("weather", DEFAULT_LIMIT)));
        assert_eq!(asked(&arguments(json!({"query": "weather", "limit": 50}))), Ok(("weather", 50)));
        assert_eq!(asked(&arguments(json!({"query": "weather", "limit": 2.0}))), Ok(("weather", 2)));
        for limit in [json!(0), json!(51), json!(2.5), json!(50.5), json!(0.0), json!(-1), json!(-2.0), json!("5")] {
            let refused = asked(&arguments(json!({"query": "weather", "limit": limit}))).unwrap_err();
            assert!(refused.contains("`limit` is"), "{refused}");
        }
    }

    #[test]
    fn a_call_without_a_query_or_with_another_argument_is_refused_saying_why() {
        assert!(asked(&arguments(json!({}))).unwrap_err().contains("needs `query`"));
        assert!(asked(&arguments(json!({"query": 3}))).unwrap_err().contains("expected a string"));
        assert!(asked(&arguments(json!({"query": "  "}))).unwrap_err().contains("empty"));
        assert!(asked(&arguments(json!({"query": "x", "top": 3}))).unwrap_err().contains("`top` is not one"));
    }
}
