//! `--config FILE`: the host's configuration, read by every command (SPEC §7, §11, §12).
//!
//! Owns the file format and where each entry sits in it. The file is JSON when its
//! name ends in `.json`, TOML otherwise (a TOML file that fails to parse but starts
//! with `{` is read as JSON). Every top-level key is optional; any other key is an
//! error, so a typo never goes unnoticed:
//!
//! ```toml
//! autonomy_level = "strict"   # "strict", "safe" (the default) or "full_access"
//!
//! [libraries.weather]         # keyed by library: a library folder's name, else the file stem
//! api_key = "..."
//!
//! [profiles.writer]           # SPEC §11, read by `profile`
//! tools = ["tool_read_file", "tool_write_file"]
//!
//! [tool_policies.tool_write_file]  # SPEC §12: declarations that win over the library's
//! destructive = true
//!
//! [policy]                    # SPEC §12, checked by `policy`
//! allow_destructive = false
//!
//! [mcp]                       # `tools/list` and `lcp export --format mcp`
//! inline_refs = true          # named classes inlined, for clients that cannot resolve `$ref`
//! docs_tools = true           # `lcp serve` adds `docs_index` and `resolve_doc`
//! state_key = "..."           # signs `requestState` (SPEC §16); else `$LCP_STATE_KEY`
//! task_store = "redis://..."  # where MCP tasks live (SPEC §16); else `$LCP_TASK_STORE`, else memory
//! session_idle = 120          # seconds an unused `lcp serve --http` session stays open
//! tool_search = true          # `tools/list` is `search_tools` (SPEC §21); default: above the threshold
//! tool_search_threshold = 200 # tools shown above which `search_tools` is on when `tool_search` is unset
//! always_list = ["tool_x"]    # listed beside `search_tools` when it is on
//!
//! [export]                    # `lcp export`
//! always_loaded = ["tool_x"]  # `--defer` keeps these loaded (SPEC §21)
//! ```
//!
//! `kits/NAME.kit` files beside the config file (beside the current directory without
//! one) are profiles too. Each library's `init_tools_library(config)` receives its
//! `[libraries]` table plus `autonomy_level`, `confirm_handler` and
//! `user_interaction_handler` (SPEC §5, §9).
//! The file is parsed once (`located::Node`) and each table read by a serde struct of
//! its own (`located::Reader`); problems are [`ConfigError`]s naming the file, the
//! line and column (TOML only) and the entry, every one of the file at once. The
//! parsed document is kept, so that a later diagnostic about an entry is placed at
//! it (`Config::place_of`).
//! This module never resolves a profile against tools: `profile` and `view` do.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde::Deserialize;
use serde::de::{self, Deserializer, Unexpected};
use serde_json::Value;

use crate::diag::Diagnostic;
use crate::discovery::extract::{Library, Tool};
use crate::located::{self, Node, Reader, Style, Tree};
use crate::policy::{Declared, HostPolicy};
use crate::sync;

pub(crate) mod auth;
mod defined;
pub(crate) mod profiles;
pub(crate) mod runtime;
mod servers;
mod tools;

use profiles::Profile;
use runtime::RuntimeConfig;

pub use crate::located::{ConfigError, Pos};
pub use auth::AuthConfig;
pub(crate) use servers::names as server_names;
pub use servers::{ServerEntry, Transport};
pub use tools::{DefinedArg, DefinedTool};

/// The top-level keys of a config file.
const KEYS: [&str; 13] = [
    "autonomy_level",
    "libraries",
    "profiles",
    "tools",
    "virtual_tools",
    "tool_policies",
    "python",
    "mcp_servers",
    "policy",
    "mcp",
    "auth",
    "sandbox",
    "export",
];

/// `[mcp]`: how tools are described to MCP clients.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, expecting = "a table")]
pub struct McpConfig {
    /// Inline every named class in `inputSchema` instead of `$defs` and `$ref`, for
    /// clients that cannot resolve references. Default: false.
    pub inline_refs: bool,
    /// The server's name in `initialize` (`serverInfo.name`). Default: `lcp`.
    #[serde(deserialize_with = "non_empty")]
    pub name: Option<String>,
    /// What the server tells clients about its tools (`instructions`). Default: each
    /// library's `TOOL_LIBRARY_DESC`, a line each.
    pub instructions: Option<String>,
    /// Host config files whose servers are sources too, as written (`~/` the home
    /// folder, else relative to the config file): [`Config::servers`] has them.
    #[serde(deserialize_with = "paths")]
    pub host_configs: Vec<String>,
    /// `lcp serve` adds seed 000's `docs_index` and `resolve_doc` tools. Default: false.
    pub docs_tools: bool,
    /// The key that signs the `requestState` of a question (SPEC §16): replicas that
    /// share it continue each other's calls. Default: `$LCP_STATE_KEY`, else one made
    /// at start.
    #[serde(deserialize_with = "state_key")]
    pub state_key: Option<String>,
    /// Where MCP tasks live (SPEC §16): a `redis://` or `rediss://` URL, shared by the
    /// replicas that answer for each other's tasks. Default: `$LCP_TASK_STORE`, else
    /// the server's memory.
    #[serde(deserialize_with = "task_store")]
    pub task_store: Option<String>,
    /// How long a session of `lcp serve --http` stays open unused (read when the server
    /// starts). Default: [`McpConfig::DEFAULT_SESSION_IDLE`].
    #[serde(deserialize_with = "session_idle")]
    pub session_idle: Option<std::time::Duration>,
    /// `lcp serve` lists `search_tools` instead of the tools (SPEC §21): `Some(true)`
    /// always, `Some(false)` never. Default (`None`): when more tools are shown than
    /// `tool_search_threshold`.
    pub tool_search: Option<bool>,
    /// How many tools shown turn `search_tools` on when `tool_search` is not set.
    /// Default: [`McpConfig::DEFAULT_TOOL_SEARCH_THRESHOLD`].
    pub tool_search_threshold: Option<usize>,
    /// The tools listed beside `search_tools` when it is on (each still only if
    /// shown). Default: none.
    #[serde(deserialize_with = "tool_names")]
    pub always_list: Vec<String>,
}

impl McpConfig {
    /// How long an unused session stays open when `session_idle` is not set.
    pub const DEFAULT_SESSION_IDLE: std::time::Duration = std::time::Duration::from_secs(120);

    /// The number of tools shown above which `search_tools` is on, when neither
    /// `tool_search` nor `tool_search_threshold` says.
    pub const DEFAULT_TOOL_SEARCH_THRESHOLD: usize = 200;

    /// Whether `lcp serve` lists `search_tools` (and `always_list`) instead of the
    /// tools, for a view of `shown` tools.
    pub fn tool_search_on(&self, shown: usize) -> bool {
        self.tool_search
            .unwrap_or_else(|| shown > self.tool_search_threshold.unwrap_or(McpConfig::DEFAULT_TOOL_SEARCH_THRESHOLD))
    }
}

/// `[export]`: how `lcp export` writes the tools.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, expecting = "a table")]
pub struct ExportConfig {
    /// The tools `lcp export --defer` keeps loaded (not deferred), merged with
    /// `--always-loaded`. Default: none.
    #[serde(deserialize_with = "tool_names")]
    pub always_loaded: Vec<String>,
}

/// A `[tool_policies.NAME]` table.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolEntry {
    /// The tool, as the table names it.
    pub name: String,
    /// What the table declares about it.
    pub declared: Declared,
}

/// The host's configuration. [`Config::default`] is no file: no profiles but the kits
/// of the current directory, nothing declared, a policy that allows everything.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// The file read, if any.
    file: Option<PathBuf>,
    /// The libraries' configuration and autonomy level.
    pub runtime: RuntimeConfig,
    /// `[profiles.*]`, then the kits not shadowed by one of them.
    pub profiles: Vec<Profile>,
    /// `[[tools]]`: the tools the file defines (SPEC §14), in its order.
    pub tools: Vec<DefinedTool>,
    /// `[[virtual_tools]]`: tools the embedding host implements (SPEC §14), in the
    /// file's order.
    pub virtual_tools: Vec<DefinedTool>,
    /// `[python] path`: where their modules are imported from, absolute when the
    /// file's path is.
    pub python_path: Vec<PathBuf>,
    /// `[mcp_servers.NAME]` in the file's order, then the servers of `[mcp]
    /// host_configs`, file by file: the MCP servers whose tools are a source.
    pub servers: Vec<ServerEntry>,
    /// `[tool_policies.NAME]`, in the order of the file.
    pub tool_policies: Vec<ToolEntry>,
    /// `[policy]`: what this host lets a tool do.
    pub policy: HostPolicy,
    /// `[mcp]`: how tools are described to MCP clients.
    pub mcp: McpConfig,
    /// `[export]`: how `lcp export` writes the tools.
    pub export: ExportConfig,
    /// `[auth]`: who may reach `lcp serve --http`.
    pub auth: AuthConfig,
    /// The file as parsed, with where each entry is: where a diagnostic about one points.
    document: Option<Arc<Node>>,
}

impl Config {
    /// No config file: the kits of the current directory only.
    pub fn without_file() -> Config {
        let mut config = Config::default();
        config.profiles = profiles::read_kits(&config.kits_folder());
        config
    }

    /// Reads a config file and the kits beside it; every problem found in the file
    /// itself is returned (a profile's problems stay with the profile, so that one bad
    /// profile never hides the others).
    pub fn read(path: &Path) -> Result<Config, Vec<ConfigError>> {
        let text = read_regular_file(path).map_err(|err| vec![ConfigError::at(path, None, err)])?;
        let is_json = path.extension().is_some_and(|ext| ext.eq_ignore_ascii_case("json"));
        let root = Node::parse(&text, is_json).map_err(|(at, message)| vec![ConfigError::at_pos(path, at, message)])?;
        let mut config = from_document(&root, path)?;
        config.file = Some(path.to_path_buf());
        config.document = Some(Arc::new(root));
        let kits = profiles::read_kits(&config.kits_folder());
        let shadowed: Vec<Profile> =
            kits.into_iter().filter(|kit| !config.profiles.iter().any(|p| p.name == kit.name)).collect();
        config.profiles.extend(shadowed);
        Ok(config)
    }

    /// The file read, if any.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// Where in the file the entry at `keys` is (`["libraries", "weather"]`), or the
    /// `item`th of the list there, when the file says (a JSON file's places are not
    /// kept): a diagnostic about the entry points there.
    pub fn place_of(&self, keys: &[&str], item: Option<usize>) -> Option<Pos> {
        let mut node = self.document.as_deref()?;
        for key in keys {
            node = node.get(key)?;
        }
        if let Some(item) = item {
            node = match &node.tree {
                Tree::Array(items) => items.get(item)?,
                _ => return None,
            };
        }
        node.at
    }

    /// The folder relative paths of the file are taken from: the file's, else the
    /// current directory (the empty path, so that joined paths stay relative).
    pub fn folder(&self) -> PathBuf {
        self.file.as_deref().and_then(Path::parent).map(Path::to_path_buf).unwrap_or_default()
    }

    /// `kits/` beside the config file.
    pub fn kits_folder(&self) -> PathBuf {
        self.folder().join("kits")
    }

    /// The profile or kit called `name`.
    pub fn profile(&self, name: &str) -> Option<&Profile> {
        self.profiles.iter().find(|profile| profile.name == name)
    }

    /// The tools the file defines (`[[tools]]`, `[[virtual_tools]]`, SPEC §14) as
    /// libraries, one a tool, with the problems of their entries: what
    /// `Registry::define` takes. `injected` are the parameter names the host injects.
    pub fn defined_libraries(&self, injected: &[String]) -> (Vec<Library>, Vec<Diagnostic>) {
        defined::libraries(self, injected)
    }

    /// What a tool declares once the config file's `[tool_policies.NAME]` is laid over it.
    pub fn declared(&self, tool: &Tool) -> Declared {
        match self.tool_policies.iter().find(|entry| entry.name == tool.name) {
            Some(entry) => entry.declared.over(&tool.policy),
            None => tool.policy.clone(),
        }
    }
}

fn state_key<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    let key = String::deserialize(deserializer)?;
    if key.len() < 16 {
        return Err(de::Error::custom(" is a secret string of at least 16 bytes"));
    }
    Ok(Some(key))
}

fn task_store<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    match Value::deserialize(deserializer)? {
        Value::String(url) if url.starts_with("redis://") || url.starts_with("rediss://") => Ok(Some(url)),
        _ => Err(de::Error::invalid_value(Unexpected::Other("it"), &"a redis:// or rediss:// URL")),
    }
}

fn session_idle<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Duration>, D::Error> {
    match Value::deserialize(deserializer)?.as_u64() {
        Some(seconds) if seconds >= 1 => Ok(Some(Duration::from_secs(seconds))),
        _ => Err(de::Error::invalid_value(Unexpected::Other("it"), &"a whole number of seconds, at least 1")),
    }
}

/// A string that is not blank, trimmed.
pub(crate) fn non_empty<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    located::text(deserializer, "a non-empty string").map(Some)
}

/// Tool names (`[mcp] always_list`, `[export] always_loaded`).
fn tool_names<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    located::texts(deserializer, "tool names (strings)", "a list of tool names")
}

/// Folders (`[python] path`, `[sandbox] writable`), as written.
pub(crate) fn folders<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<PathBuf>, D::Error> {
    let folders = located::texts(deserializer, "folders (strings)", "a list of folders")?;
    Ok(folders.into_iter().map(PathBuf::from).collect())
}

/// Paths of files (`[mcp] host_configs`), as written.
fn paths<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    located::texts(deserializer, "paths (strings)", "a list of paths")
}

/// Largest config or kit file read.
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// The text of a config or kit file. Anything but a regular file (a FIFO, a device,
/// a folder) is refused before a byte is read, so reading can never block; so is a
/// file over 16 MiB (SPEC §17).
pub(crate) fn read_regular_file(path: &Path) -> Result<String, String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|err| err.to_string())?;
    let metadata = file.metadata().map_err(|err| err.to_string())?;
    if !metadata.is_file() {
        return Err("not a regular file; a config or kit file is never read from a FIFO, a device or a folder".into());
    }
    if metadata.len() > MAX_FILE_BYTES {
        return Err(format!("{} bytes, over the {MAX_FILE_BYTES} a config or kit file may hold", metadata.len()));
    }
    let mut text = String::with_capacity(metadata.len() as usize);
    file.by_ref().take(MAX_FILE_BYTES + 1).read_to_string(&mut text).map_err(|err| err.to_string())?;
    Ok(text)
}

/// A parsed config file as a [`Config`]: each top-level key read by its own struct,
/// every problem of every table reported.
fn from_document(root: &Node, file: &Path) -> Result<Config, Vec<ConfigError>> {
    let Some(top) = root.members() else {
        return Err(vec![ConfigError::at(file, None, "the configuration must be a table (an object)")]);
    };
    let mut config = Config::default();
    let mut errors = Vec::new();
    let base = file.parent().map(Path::to_path_buf).unwrap_or_default();
    for (key, node) in top {
        let table = |errors| Reader::new(file, Style::Is, key, errors);
        let fail =
            |errors: &mut Vec<ConfigError>, message: String| errors.push(ConfigError::at_pos(file, node.at, message));
        match key.as_str() {
            "autonomy_level" => {
                if let Some(level) = table(&mut errors).read(node) {
                    config.runtime.autonomy_level = level;
                }
            }
            "libraries" => match node.members() {
                Some(libraries) => {
                    for (name, library) in libraries {
                        match library.to_json() {
                            Value::Object(table) => {
                                config.runtime.libraries.insert(name.clone(), table);
                            }
                            _ => errors.push(ConfigError::at_pos(
                                file,
                                library.at,
                                format!("`libraries.{name}` must be a table"),
                            )),
                        }
                    }
                }
                None => fail(&mut errors, "`libraries` must be a table keyed by library".to_string()),
            },
            "profiles" => match node.members() {
                Some(profiles) => {
                    for (name, table) in profiles {
                        config.profiles.push(profiles::from_config(name, table, file, &base));
                    }
                }
                None => fail(&mut errors, "`profiles` must be a table keyed by profile name".to_string()),
            },
            "tool_policies" => match node.members() {
                Some(tools) => {
                    for (name, table) in tools {
                        let mut reader = Reader::new(file, Style::Must, "", &mut errors)
                            .prefixed(format!("`tool_policies.{name}`: "));
                        let declared = reader.read::<Declared>(table).unwrap_or_default().based(&base);
                        config.tool_policies.push(ToolEntry { name: name.clone(), declared });
                    }
                }
                None => fail(&mut errors, "`tool_policies` must be a table keyed by tool name".to_string()),
            },
            // Seed 000's `[[tools]]` (config-defined tools, SPEC §14); the tables that
            // declared tools' policies under this key moved to `[tool_policies.NAME]`.
            "tools" => match node.members() {
                Some(tools) => {
                    let names: Vec<&str> = tools.iter().map(|(name, _)| name.as_str()).collect();
                    let first = names.first().copied().unwrap_or("NAME");
                    fail(
                        &mut errors,
                        format!(
                            "`[tools.{first}]` tables are now `[tool_policies.{first}]` (`tools` is the `[[tools]]` array of config-defined tools); rename {}",
                            names.iter().map(|n| format!("`[tools.{n}]`")).collect::<Vec<_>>().join(", ")
                        ),
                    )
                }
                None => config.tools = tools::read(tools::Array::Tools, node, file, &base, &mut errors),
            },
            "virtual_tools" => {
                config.virtual_tools = tools::read(tools::Array::Virtual, node, file, &base, &mut errors)
            }
            "python" => {
                if let Some(python) = table(&mut errors).read::<tools::PythonTable>(node) {
                    config.python_path = python.path.iter().map(|folder| base.join(folder)).collect();
                    // `[python] venv` wins over $VIRTUAL_ENV; `--venv` over both.
                    if let Some(venv) = python.venv {
                        config.runtime.venv = Some(base.join(venv));
                    }
                }
            }
            "mcp_servers" => config.servers = servers::read(node, file, &base, &mut errors),
            "policy" => {
                let mut reader = Reader::new(file, Style::Must, "", &mut errors).prefixed("`policy`: ");
                config.policy = reader.read(node).unwrap_or_default();
            }
            "auth" => config.auth = auth::read(node, &base, table(&mut errors)),
            "sandbox" => {
                let sandbox = &mut config.runtime.sandbox;
                *sandbox = table(&mut errors).read(node).unwrap_or_default();
                sandbox.writable = sandbox.writable.iter().map(|folder| base.join(folder)).collect();
            }
            "mcp" => config.mcp = table(&mut errors).read(node).unwrap_or_default(),
            "export" => config.export = table(&mut errors).read(node).unwrap_or_default(),
            _ => Reader::new(file, Style::Is, "", &mut errors).unknown_key(node.at, key, &KEYS),
        }
    }
    let host_configs: Vec<PathBuf> =
        config.mcp.host_configs.iter().map(|path| servers::host_config_path(path, &base)).collect();
    let imported = servers::read_host_configs(&host_configs, &mut errors);
    config.servers.extend(imported);
    if errors.is_empty() {
        return Ok(config);
    }
    // A file that cannot be used says every problem at once, its profiles' too, in
    // the order of the file (a problem of the file as a whole first).
    errors.extend(config.profiles.iter().flat_map(|profile| profile.problems.iter().cloned()));
    errors.sort_by_key(|error| match error {
        ConfigError::At { line, column, .. } => (line.unwrap_or(0), column.unwrap_or(0)),
        _ => (0, 0),
    });
    Err(errors)
}

/// The config of a running server, read again when its file (or a kit) changes:
/// checked on every call, at the cost of a few `stat`s when nothing changed.
#[derive(Debug)]
pub struct Watched {
    state: Mutex<(Stamp, Arc<Config>)>,
}

/// Sizes and modification times of the config file and the kits.
type Stamp = Vec<(PathBuf, u64, Option<SystemTime>)>;

impl Watched {
    /// `config`, read again by [`Watched::current`] when its files change.
    pub fn new(config: Config) -> Watched {
        Watched { state: Mutex::new((stamp(&config), Arc::new(config))) }
    }

    /// The configuration as the files are now. A file that became invalid is
    /// reported on stderr and the last valid configuration stays.
    pub fn current(&self) -> Arc<Config> {
        let mut state = sync::lock(&self.state);
        let now = stamp(&state.1);
        if now != state.0 {
            let reread = match state.1.file() {
                Some(file) => Config::read(file),
                None => Ok(Config::without_file()),
            };
            match reread {
                Ok(config) => state.1 = Arc::new(config),
                Err(errors) => {
                    for error in errors {
                        eprintln!("lcp: {error}");
                    }
                    eprintln!("lcp: the configuration is unchanged until the file is fixed");
                }
            }
            state.0 = now;
        }
        Arc::clone(&state.1)
    }
}

fn stamp(config: &Config) -> Stamp {
    let mut files: Vec<PathBuf> = config.file().map(Path::to_path_buf).into_iter().collect();
    if let Ok(entries) = std::fs::read_dir(config.kits_folder()) {
        files.extend(entries.flatten().map(|entry| entry.path()).filter(|path| profiles::is_kit(path)));
    }
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let meta = std::fs::metadata(&path).ok();
            let (len, modified) = meta.map_or((0, None), |meta| (meta.len(), meta.modified().ok()));
            (path, len, modified)
        })
        .collect()
}

/// The parts of a configuration a test compares.
#[cfg(test)]
fn summary(config: &Config) -> (String, Value) {
    let libraries: serde_json::Map<String, Value> =
        config.runtime.libraries.iter().map(|(key, table)| (key.clone(), Value::Object(table.clone()))).collect();
    (config.runtime.autonomy_level.to_string(), Value::Object(libraries))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(document: Value, expected: Result<(&str, Value), &str>) {
        let actual = from_document(&Node::from_json(document), Path::new("lcp.json"))
            .map(|config| summary(&config))
            .map_err(|errors| errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"));
        let expected = expected
            .map(|(level, libraries)| (level.to_string(), libraries))
            .map_err(|message| format!("lcp.json: {message}"));
        assert_eq!(actual, expected);
    }

    #[test]
    fn documents() {
        check(json!({}), Ok(("safe", json!({}))));
        check(
            json!({"autonomy_level": "strict", "libraries": {"weather": {"key": 1}}}),
            Ok(("strict", json!({"weather": {"key": 1}}))),
        );
        check(json!([]), Err("the configuration must be a table (an object)"));
        check(
            json!({"autonomy_level": "all"}),
            Err("`autonomy_level` is \"all\"; expected one of strict, safe, full_access"),
        );
        check(json!({"libraries": 3}), Err("`libraries` must be a table keyed by library"));
        check(json!({"mcp": {"inline_refs": 1}}), Err("`mcp.inline_refs` is 1; expected true or false"));
        for idle in [json!(0), json!(1.5), json!("2m")] {
            let message = format!("`mcp.session_idle` is {idle}; expected a whole number of seconds, at least 1");
            check(json!({"mcp": {"session_idle": idle}}), Err(message.as_str()));
        }
        check(
            json!({"mcp": {"inline": true}}),
            Err(
                "`mcp`: unknown key `inline`; expected inline_refs, name, instructions, host_configs, docs_tools, state_key, task_store, session_idle, tool_search, tool_search_threshold or always_list; did you mean `inline_refs`?",
            ),
        );
        check(json!({"libraries": {"a": 3}}), Err("`libraries.a` must be a table"));
        check(
            json!({"autonomy": 1}),
            Err(
                "unknown key `autonomy`; expected autonomy_level, libraries, profiles, tools, virtual_tools, tool_policies, python, mcp_servers, policy, mcp, auth, sandbox or export; did you mean `autonomy_level`?",
            ),
        );
        // `[tools.NAME]` declarations moved to `[tool_policies.NAME]` (SPEC §12).
        check(
            json!({"tools": {"tool_a": {"read_only": true}, "tool_b": {}}}),
            Err(
                "`[tools.tool_a]` tables are now `[tool_policies.tool_a]` (`tools` is the `[[tools]]` array of config-defined tools); rename `[tools.tool_a]`, `[tools.tool_b]`",
            ),
        );
        check(
            json!({"tools": [{"name": "x"}]}),
            Err(
                "`[[tools]]` `x`: needs `module` (the module to import, as `os.path`)\nlcp.json: `[[tools]]` `x`: needs `function` (the module's function to call)",
            ),
        );
        check(
            json!({"tools": [{"name": "x", "module": "m", "function": "f", "grade_w": 4}]}),
            Err("`[[tools]]` `x`: `grade_w` is 4; a grade level is an integer from 0 to 3"),
        );
        check(
            json!({"tools": [{"name": "x", "module": "m", "function": "f", "args": [{"name": "a b"}]}]}),
            Err("`[[tools]]` `x`: `args[0].name` `a b` is not a Python identifier"),
        );
        check(
            json!({"tools": [{"name": "x", "module": "m", "function": "f", "provider": "mcp"}]}),
            Err("`[[tools]]` `x`: unknown provider `mcp`; the only one is `python`"),
        );
        check(json!({"python": {"path": [1]}}), Err("`python.path` entries are folders (strings), not 1"));
        check(
            json!({"tool_policies": {"tool_a": {"read_only": 1}}}),
            Err("`tool_policies.tool_a`: `read_only` must be true or false, not 1"),
        );
        check(
            json!({"policy": {"allow": true}}),
            Err(
                "`policy`: unknown key `allow`; expected allow_destructive, allow_open_world or max_grade; did you mean `allow_open_world`, `allow_destructive`?",
            ),
        );
    }

    #[test]
    fn every_problem_of_a_file_is_reported_at_its_line_and_column() {
        let text = "autonomy_level = \"all\"\n[mcp]\ninline_refs = 1\ninline = true\n\n[mcp_servers.a]\ncommand = \"x\"\npin = \"yes\"\ncolour = 1\n\n[mcp_servers.b]\ncommand = 3\n\n[tool_policies.t]\ngrade = { w = 4, d = 0 }\n";
        let starts = [
            "lcp.toml:1:1: `autonomy_level` is \"all\"; expected one of strict, safe, full_access",
            "lcp.toml:3:1: `mcp.inline_refs` is 1; expected true or false",
            "lcp.toml:4:1: `mcp`: unknown key `inline`; expected inline_refs, name, instructions, host_configs,",
            "lcp.toml:8:1: `mcp_servers.a`: `pin` must be true or false, not \"yes\"",
            "lcp.toml:9:1: `mcp_servers.a`: unknown key `colour`; expected transport, command,",
            "lcp.toml:12:1: `mcp_servers.b`: `command` must be a string, not 3",
            "lcp.toml:15:11: `tool_policies.t`: `grade.w` is 4; a grade is an integer from 0 to 3",
        ];
        let messages = problems_starting(text, &starts);
        assert!(messages[2].ends_with("did you mean `inline_refs`?"), "{}", messages[2]);
    }

    #[test]
    fn a_file_with_problems_says_its_profiles_problems_too_in_the_files_order() {
        let text =
            "[policy]\nallow_destructiv = false\n\n[profiles.p]\ntool = [\"tool_a\"]\n\n[mcp]\ninline_ref = true\n";
        let starts = [
            "lcp.toml:2:1: `policy`: unknown key `allow_destructiv`",
            "lcp.toml:5:1: profile `p`: unknown key `tool`",
            "lcp.toml:8:1: `mcp`: unknown key `inline_ref`",
        ];
        problems_starting(text, &starts);
    }

    /// The problems of the TOML `text` as `lcp.toml`, once seen to be as many as
    /// `starts` and each to start with its own, in order.
    fn problems_starting(text: &str, starts: &[&str]) -> Vec<String> {
        let errors = from_document(&Node::parse(text, false).unwrap(), Path::new("lcp.toml")).unwrap_err();
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(messages.len(), starts.len(), "{messages:#?}");
        for (message, start) in messages.iter().zip(starts) {
            assert!(message.starts_with(start), "{message}\nshould start with\n{start}");
        }
        messages
    }

    #[test]
    fn a_library_table_is_placed_at_its_own_line() {
        let text = "autonomy_level = \"strict\"\n\n[libraries.weather]\nkey = 1\n\n[libraries.csvstat]\nrows = 2\n";
        let dir = std::env::temp_dir().join(format!("lcp-config-lines-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("lcp.toml");
        std::fs::write(&path, text).unwrap();
        let config = Config::read(&path).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let line = |name| config.place_of(&["libraries", name], None).map(|at| at.line);
        assert_eq!(line("weather"), Some(3));
        assert_eq!(line("csvstat"), Some(6));
        assert_eq!(line("absent"), None);
    }
}
