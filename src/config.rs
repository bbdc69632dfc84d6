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
//! Problems are [`ConfigError`]s naming the file, the line (TOML only) and the entry.
//! This module never resolves a profile against tools: `profile` and `view` do.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use serde_json::Value;

use crate::extract::Tool;
use crate::policy::{self, Declared, HostPolicy};
use crate::sync;

pub mod auth;
pub mod profiles;
pub mod runtime;
mod servers;
mod tools;

use profiles::Profile;
use runtime::{Autonomy, RuntimeConfig};

pub use crate::located::{ConfigError, Located, pointer};
pub use auth::AuthConfig;
pub use servers::{ServerEntry, Transport, names as server_names};
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
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpConfig {
    /// Inline every named class in `inputSchema` instead of `$defs` and `$ref`, for
    /// clients that cannot resolve references. Default: false.
    pub inline_refs: bool,
    /// The server's name in `initialize` (`serverInfo.name`). Default: `lcp`.
    pub name: Option<String>,
    /// What the server tells clients about its tools (`instructions`). Default: each
    /// library's `TOOL_LIBRARY_DESC`, a line each.
    pub instructions: Option<String>,
    /// `lcp serve` adds seed 000's `docs_index` and `resolve_doc` tools. Default: false.
    pub docs_tools: bool,
    /// The key that signs the `requestState` of a question (SPEC §16): replicas that
    /// share it continue each other's calls. Default: `$LCP_STATE_KEY`, else one made
    /// at start.
    pub state_key: Option<String>,
    /// Where MCP tasks live (SPEC §16): a `redis://` or `rediss://` URL, shared by the
    /// replicas that answer for each other's tasks. Default: `$LCP_TASK_STORE`, else
    /// the server's memory.
    pub task_store: Option<String>,
    /// How long a session of `lcp serve --http` stays open unused (read when the server
    /// starts). Default: [`McpConfig::DEFAULT_SESSION_IDLE`].
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
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportConfig {
    /// The tools `lcp export --defer` keeps loaded (not deferred), merged with
    /// `--always-loaded`. Default: none.
    pub always_loaded: Vec<String>,
}

/// A `[tool_policies.NAME]` table.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolEntry {
    /// The tool, as the table names it.
    pub name: String,
    /// What the table declares about it.
    pub declared: Declared,
    /// The line of the table in the file.
    pub line: Option<u32>,
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
    /// The line of each `[libraries.NAME]` table, where a diagnostic about it points.
    library_lines: HashMap<String, u32>,
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
        let parsed = if is_json { parse_json(&text) } else { parse_toml(&text) };
        let (document, lines) = parsed.map_err(|(line, message)| vec![ConfigError::at(path, line, message)])?;
        let located = Located { file: path.to_path_buf(), lines };
        let mut config = from_document(document, &located)?;
        config.file = Some(path.to_path_buf());
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

    /// The line of the file where `[libraries.NAME]` is, when the file says (a JSON
    /// file's lines are not kept): a diagnostic about the table points there.
    pub fn library_line(&self, name: &str) -> Option<u32> {
        self.library_lines.get(name).copied()
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

    /// What a tool declares once the config file's `[tool_policies.NAME]` is laid over it.
    pub fn declared(&self, tool: &Tool) -> Declared {
        match self.tool_policies.iter().find(|entry| entry.name == tool.name) {
            Some(entry) => entry.declared.over(&tool.policy),
            None => tool.policy.clone(),
        }
    }
}

/// `[sandbox]` (SPEC §18, §20): `writable`, folders every worker may write in too
/// (relative to the config file), `require`, and `infer`.
fn read_sandbox(
    value: &Value,
    at: &Located,
    here: &str,
    base: &Path,
    sandbox: &mut runtime::SandboxSettings,
    errors: &mut Vec<ConfigError>,
) {
    let Value::Object(table) = value else {
        errors.push(at.error(here, "`sandbox` must be a table"));
        return;
    };
    for (name, value) in table {
        match (name.as_str(), value) {
            ("require", Value::Bool(require)) => sandbox.require = *require,
            ("infer", Value::Bool(infer)) => sandbox.infer = *infer,
            ("writable", Value::Array(paths)) => {
                for path in paths {
                    match path.as_str() {
                        Some(text) if !text.trim().is_empty() => sandbox.writable.push(base.join(text.trim())),
                        _ => errors.push(at.error(
                            &pointer(here, name),
                            format!("`sandbox.writable` entries are folders (strings), not {path}"),
                        )),
                    }
                }
            }
            ("require" | "infer", other) => errors
                .push(at.error(&pointer(here, name), format!("`sandbox.{name}` is {other}; expected true or false"))),
            ("writable", other) => errors.push(
                at.error(&pointer(here, name), format!("`sandbox.writable` is {other}; expected a list of folders")),
            ),
            _ => errors.push(at.error(
                &pointer(here, name),
                format!("`sandbox`: unknown key `{name}`; expected writable, require or infer"),
            )),
        }
    }
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

/// `(line, message)` of a file that does not parse.
type ParseError = (Option<u32>, String);

fn parse_json(text: &str) -> Result<(Value, HashMap<String, u32>), ParseError> {
    match serde_json::from_str(text) {
        Ok(value) => Ok((value, HashMap::new())),
        Err(err) => Err((Some(err.line() as u32), format!("invalid JSON: {err}"))),
    }
}

fn parse_toml(text: &str) -> Result<(Value, HashMap<String, u32>), ParseError> {
    match toml::from_str::<Value>(text) {
        Ok(value) => Ok((value, toml_lines(text))),
        Err(_) if text.trim_start().starts_with('{') => parse_json(text),
        Err(err) => {
            let line = err.span().map(|span| LineStarts::new(text).line_of(span.start));
            Err((line, format!("invalid TOML: {}", err.message().trim_end())))
        }
    }
}

/// The line of every key and array item of a TOML document, by JSON pointer.
fn toml_lines(text: &str) -> HashMap<String, u32> {
    use toml::de::{DeTable, DeValue};
    fn walk(value: &DeValue<'_>, at: &str, starts: &LineStarts, lines: &mut HashMap<String, u32>) {
        match value {
            DeValue::Table(table) => {
                for (key, item) in table {
                    let here = pointer(at, key.get_ref());
                    lines.entry(here.clone()).or_insert_with(|| starts.line_of(key.span().start));
                    walk(item.get_ref(), &here, starts, lines);
                }
            }
            DeValue::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    let here = format!("{at}/{index}");
                    lines.insert(here.clone(), starts.line_of(item.span().start));
                    walk(item.get_ref(), &here, starts, lines);
                }
            }
            _ => {}
        }
    }
    let mut lines = HashMap::new();
    if let Ok(table) = DeTable::parse(text) {
        walk(&DeValue::Table(table.into_inner()), "", &LineStarts::new(text), &mut lines);
    }
    lines
}

/// Where each line of a text starts: a line from an offset in `O(log lines)`, so a
/// file's every key is placed in time linear in its size (SPEC §17).
struct LineStarts(Vec<usize>);

impl LineStarts {
    fn new(text: &str) -> LineStarts {
        LineStarts(memchr::memchr_iter(b'\n', text.as_bytes()).collect())
    }

    /// The line (from 1) of the byte at `offset`.
    fn line_of(&self, offset: usize) -> u32 {
        self.0.partition_point(|&newline| newline < offset) as u32 + 1
    }
}

fn from_document(document: Value, at: &Located) -> Result<Config, Vec<ConfigError>> {
    let Value::Object(top) = document else {
        return Err(vec![at.error("", "the configuration must be a table (an object)")]);
    };
    let mut config = Config::default();
    let mut errors = Vec::new();
    let base = at.file.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut host_configs = Vec::new();
    for (key, value) in top {
        let here = pointer("", &key);
        match key.as_str() {
            "autonomy_level" => match value {
                Value::String(level) if level.parse::<Autonomy>().is_ok() => {
                    config.runtime.autonomy_level = level.parse().unwrap_or_default()
                }
                other => errors.push(at.error(
                    &here,
                    format!("`autonomy_level` is {other}; expected one of {}", Autonomy::NAMES.join(", ")),
                )),
            },
            "libraries" => match value {
                Value::Object(libraries) => {
                    for (name, table) in libraries {
                        match table {
                            Value::Object(table) => {
                                if let Some(line) = at.line(&pointer(&here, &name)) {
                                    config.library_lines.insert(name.clone(), line);
                                }
                                config.runtime.libraries.insert(name, table);
                            }
                            _ => errors
                                .push(at.error(&pointer(&here, &name), format!("`libraries.{name}` must be a table"))),
                        }
                    }
                }
                _ => errors.push(at.error(&here, "`libraries` must be a table keyed by library")),
            },
            "profiles" => match value {
                Value::Object(profiles) => {
                    for (name, table) in profiles {
                        config.profiles.push(profiles::from_config(&name, &table, at, &pointer(&here, &name), &base));
                    }
                }
                _ => errors.push(at.error(&here, "`profiles` must be a table keyed by profile name")),
            },
            "tool_policies" => match value {
                Value::Object(tools) => {
                    for (name, table) in tools {
                        let entry = pointer(&here, &name);
                        let (declared, problems) = policy::from_json(&table, &base);
                        for (key, message) in problems {
                            let place = if key.is_empty() { entry.clone() } else { pointer(&entry, &key) };
                            errors.push(at.error(&place, format!("`tool_policies.{name}`: {message}")));
                        }
                        config.tool_policies.push(ToolEntry { name, declared, line: at.line(&entry) });
                    }
                }
                _ => errors.push(at.error(&here, "`tool_policies` must be a table keyed by tool name")),
            },
            // Seed 000's `[[tools]]` (config-defined tools, SPEC §14); the tables that
            // declared tools' policies under this key moved to `[tool_policies.NAME]`.
            "tools" => match value {
                Value::Object(tools) => {
                    let names: Vec<&str> = tools.keys().map(String::as_str).collect();
                    let first = names.first().copied().unwrap_or("NAME");
                    errors.push(at.error(
                        &here,
                        format!(
                            "`[tools.{first}]` tables are now `[tool_policies.{first}]` (`tools` is the `[[tools]]` array of config-defined tools); rename {}",
                            names.iter().map(|n| format!("`[tools.{n}]`")).collect::<Vec<_>>().join(", ")
                        ),
                    ))
                }
                other => config.tools = tools::read(tools::Array::Tools, &other, at, &here, &base, &mut errors),
            },
            "virtual_tools" => {
                config.virtual_tools = tools::read(tools::Array::Virtual, &value, at, &here, &base, &mut errors)
            }
            "python" => {
                let (path, venv) = tools::read_python(&value, at, &here, &base, &mut errors);
                config.python_path = path;
                // `[python] venv` wins over $VIRTUAL_ENV; `--venv` over both.
                if venv.is_some() {
                    config.runtime.venv = venv;
                }
            }
            "mcp_servers" => config.servers = servers::read(&value, at, &here, &base, &mut errors),
            "policy" => {
                let (policy, problems) = HostPolicy::from_json(&value);
                for (key, message) in problems {
                    let place = if key.is_empty() { here.clone() } else { pointer(&here, &key) };
                    errors.push(at.error(&place, format!("`policy`: {message}")));
                }
                config.policy = policy;
            }
            "auth" => {
                let (auth, problems) = auth::from_json(&value, &base);
                for (key, message) in problems {
                    let place = if key.is_empty() { here.clone() } else { pointer(&here, &key) };
                    errors.push(at.error(&place, message));
                }
                config.auth = auth;
            }
            "sandbox" => read_sandbox(&value, at, &here, &base, &mut config.runtime.sandbox, &mut errors),
            "mcp" => match value {
                Value::Object(table) => {
                    for (name, value) in table {
                        match (name.as_str(), value) {
                            ("inline_refs", Value::Bool(inline)) => config.mcp.inline_refs = inline,
                            ("docs_tools", Value::Bool(docs)) => config.mcp.docs_tools = docs,
                            ("inline_refs" | "docs_tools", other) => errors.push(at.error(
                                &pointer(&here, &name),
                                format!("`mcp.{name}` is {other}; expected true or false"),
                            )),
                            ("name", Value::String(text)) if !text.trim().is_empty() => {
                                config.mcp.name = Some(text.trim().to_string());
                            }
                            ("instructions", Value::String(text)) => config.mcp.instructions = Some(text),
                            ("state_key", Value::String(text)) if text.len() >= 16 => {
                                config.mcp.state_key = Some(text);
                            }
                            ("state_key", _) => errors.push(at.error(
                                &pointer(&here, &name),
                                "`mcp.state_key` is a secret string of at least 16 bytes".to_string(),
                            )),
                            ("task_store", Value::String(text))
                                if text.starts_with("redis://") || text.starts_with("rediss://") =>
                            {
                                config.mcp.task_store = Some(text);
                            }
                            ("task_store", other) => errors.push(at.error(
                                &pointer(&here, &name),
                                format!("`mcp.task_store` is {other}; expected a redis:// or rediss:// URL"),
                            )),
                            ("session_idle", Value::Number(seconds))
                                if seconds.as_u64().is_some_and(|seconds| seconds >= 1) =>
                            {
                                let seconds = seconds.as_u64().unwrap_or(1);
                                config.mcp.session_idle = Some(std::time::Duration::from_secs(seconds));
                            }
                            ("session_idle", other) => errors.push(at.error(
                                &pointer(&here, &name),
                                format!(
                                    "`mcp.session_idle` is {other}; expected a whole number of seconds, at least 1"
                                ),
                            )),
                            ("host_configs", Value::Array(paths)) => {
                                for path in paths {
                                    match path.as_str() {
                                        Some(text) if !text.trim().is_empty() => {
                                            host_configs.push(servers::host_config_path(text.trim(), &base))
                                        }
                                        _ => errors.push(at.error(
                                            &pointer(&here, &name),
                                            format!("`mcp.host_configs` entries are paths (strings), not {path}"),
                                        )),
                                    }
                                }
                            }
                            ("host_configs", other) => errors.push(at.error(
                                &pointer(&here, &name),
                                format!("`mcp.host_configs` is {other}; expected a list of paths"),
                            )),
                            ("name" | "instructions", other) => errors.push(at.error(
                                &pointer(&here, &name),
                                format!("`mcp.{name}` is {other}; expected a non-empty string"),
                            )),
                            ("tool_search", Value::Bool(on)) => config.mcp.tool_search = Some(on),
                            ("tool_search", other) => errors.push(at.error(
                                &pointer(&here, &name),
                                format!("`mcp.tool_search` is {other}; expected true or false"),
                            )),
                            ("tool_search_threshold", Value::Number(count)) if count.as_u64().is_some() => {
                                let count = count.as_u64().unwrap_or_default();
                                config.mcp.tool_search_threshold = Some(usize::try_from(count).unwrap_or(usize::MAX));
                            }
                            ("tool_search_threshold", other) => errors.push(at.error(
                                &pointer(&here, &name),
                                format!("`mcp.tool_search_threshold` is {other}; expected a whole number of tools"),
                            )),
                            ("always_list", value) => {
                                config.mcp.always_list =
                                    names_list(&value, "mcp.always_list", at, &pointer(&here, &name), &mut errors)
                            }
                            _ => errors.push(unknown_key(at, &pointer(&here, &name), "mcp", &name, &MCP_KEYS)),
                        }
                    }
                }
                _ => errors.push(at.error(&here, "`mcp` must be a table")),
            },
            "export" => match value {
                Value::Object(table) => {
                    for (name, value) in table {
                        match name.as_str() {
                            "always_loaded" => {
                                config.export.always_loaded =
                                    names_list(&value, "export.always_loaded", at, &pointer(&here, &name), &mut errors)
                            }
                            _ => errors.push(unknown_key(
                                at,
                                &pointer(&here, &name),
                                "export",
                                &name,
                                &["always_loaded"],
                            )),
                        }
                    }
                }
                _ => errors.push(at.error(&here, "`export` must be a table")),
            },
            _ => errors.push(at.error(&here, format!("unknown key `{key}`; expected one of {}", KEYS.join(", ")))),
        }
    }
    let imported = servers::read_host_configs(&host_configs, &mut errors);
    config.servers.extend(imported);
    if errors.is_empty() { Ok(config) } else { Err(errors) }
}

/// The keys of `[mcp]`.
const MCP_KEYS: [&str; 11] = [
    "inline_refs",
    "name",
    "instructions",
    "host_configs",
    "docs_tools",
    "state_key",
    "task_store",
    "session_idle",
    "tool_search",
    "tool_search_threshold",
    "always_list",
];

/// `` `table`: unknown key `name` ``, with the nearest of `keys` and the list of them.
fn unknown_key(at: &Located, here: &str, table: &str, name: &str, keys: &[&str]) -> ConfigError {
    let near = crate::suggest::closest(name, keys.iter().copied(), |_| None);
    let expected = match keys {
        [one] => one.to_string(),
        [most @ .., last] => format!("{} or {last}", most.join(", ")),
        [] => String::new(),
    };
    at.error(
        here,
        format!("`{table}`: unknown key `{name}`; expected {expected}{}", crate::suggest::did_you_mean(&near)),
    )
}

/// A list of tool names (`[mcp] always_list`, `[export] always_loaded`); an entry that
/// is not a non-empty string is an error naming `key`.
fn names_list(value: &Value, key: &str, at: &Located, here: &str, errors: &mut Vec<ConfigError>) -> Vec<String> {
    let Value::Array(items) = value else {
        errors.push(at.error(here, format!("`{key}` is {value}; expected a list of tool names")));
        return Vec::new();
    };
    let mut names = Vec::new();
    for (index, item) in items.iter().enumerate() {
        match item.as_str().map(str::trim) {
            Some(name) if !name.is_empty() => names.push(name.to_string()),
            _ => errors.push(
                at.error(&format!("{here}/{index}"), format!("`{key}` entries are tool names (strings), not {item}")),
            ),
        }
    }
    names
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
        let at = Located { file: PathBuf::from("lcp.json"), lines: HashMap::new() };
        let actual = from_document(document, &at)
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
                "unknown key `autonomy`; expected one of autonomy_level, libraries, profiles, tools, virtual_tools, tool_policies, python, mcp_servers, policy, mcp, auth, sandbox, export",
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
            Err("`policy`: unknown key `allow`; expected one of allow_destructive, allow_open_world, max_grade"),
        );
    }

    #[test]
    fn toml_and_json_read_the_same() {
        let toml = parse_toml("autonomy_level = \"strict\"\n[libraries.weather]\nkey = 1\n").unwrap().0;
        let json = parse_json(r#"{"autonomy_level": "strict", "libraries": {"weather": {"key": 1}}}"#).unwrap().0;
        assert_eq!(toml, json);
        assert_eq!(parse_toml(r#"{"autonomy_level": "strict"}"#).unwrap().0, json!({"autonomy_level": "strict"}));
        let (line, message) = parse_toml("\nautonomy_level = \n").unwrap_err();
        assert!(message.starts_with("invalid TOML: "), "{message}");
        assert_eq!(line, Some(2));
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
        assert_eq!(config.library_line("weather"), Some(3));
        assert_eq!(config.library_line("csvstat"), Some(6));
        assert_eq!(config.library_line("absent"), None);
    }

    #[test]
    fn toml_entries_have_lines() {
        let text = "[profiles.a]\ntools = [\n  \"x\",\n  \"y\",\n]\n\n[profiles.b.tools]\nr = \"x\"\n";
        let at = Located { file: PathBuf::from("c.toml"), lines: toml_lines(text) };
        assert_eq!(at.line("/profiles/a"), Some(1));
        assert_eq!(at.line("/profiles/a/tools/1"), Some(4));
        assert_eq!(at.line("/profiles/b/tools/r"), Some(8));
        assert_eq!(at.line("/profiles/b/tools/r/tool"), Some(8));
        assert_eq!(at.line("/nothing"), None);
    }
}
