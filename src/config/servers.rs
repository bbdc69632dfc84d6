//! `[mcp_servers.NAME]` and `[mcp] host_configs`: the MCP servers whose tools lcp
//! gathers (SPEC §14).
//!
//! Owns the tables' keys, `${VAR}` taken from lcp's environment, and reading the
//! servers desktop assistants and editors are configured with (Claude Desktop's and
//! Cursor's `mcpServers`, VS Code's `servers`). It never starts a server: `mcp`'s
//! client does, when tools are listed or called.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::located::{ConfigError, Located, pointer};
use crate::policy::{self, Declared};
use crate::text_safety::{self, Secrets};

/// The keys of a `[mcp_servers.NAME]` table.
const KEYS: [&str; 11] =
    ["transport", "command", "args", "env", "cwd", "url", "headers", "prefix", "startup_timeout", "tools", "pin"];

/// How long a server may take to start and list its tools, unless it says.
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(10);

/// One MCP server whose tools are a source.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerEntry {
    /// Its name: the table's key, or the host config's.
    pub name: String,
    /// How lcp reaches it.
    pub transport: Transport,
    /// Put before each of its tools' names (`time_` makes `time_get_current_time`).
    pub prefix: String,
    /// How long it may take to connect and list its tools.
    pub startup_timeout: Duration,
    /// `[mcp_servers.NAME.tools.T]`: declarations over what the server says of `T`.
    pub tools: Vec<(String, Declared)>,
    /// Where it is configured: the file and the line of its table.
    pub file: PathBuf,
    /// The line, in a TOML file.
    pub line: Option<u32>,
    /// `pin = true`: each tool's definition is recorded on first sight, and a tool
    /// whose definition changed since is hidden until `lcp check --accept`.
    pub pin: bool,
    /// What no message about it may show: every value its `${VAR}`s expanded to, its
    /// URL's userinfo and query values, its header values.
    pub secrets: Secrets,
}

/// How a server is reached.
#[derive(Clone, PartialEq, Eq)]
pub enum Transport {
    /// A command whose standard input and output speak MCP.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set for it, over lcp's environment.
        env: Vec<(String, String)>,
        /// Its working directory; `None`: lcp's.
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        /// The endpoint.
        url: String,
        /// Headers sent with every request (`Authorization`).
        headers: Vec<(String, String)>,
    },
}

/// Without the values that may be secrets: the URL as [`text_safety::shown_url`]
/// shows it, the names of headers and variables without their values.
impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = |pairs: &[(String, String)]| pairs.iter().map(|(name, _)| name.clone()).collect::<Vec<_>>();
        match self {
            Transport::Stdio { command, args, env, cwd } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", &args.len())
                .field("env", &names(env))
                .field("cwd", cwd)
                .finish(),
            Transport::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", &text_safety::shown_url(url))
                .field("headers", &names(headers))
                .finish(),
        }
    }
}

impl ServerEntry {
    /// `text` (a message, a log line, an error about this server) with its secrets
    /// replaced by `***`.
    pub fn redact(&self, text: &str) -> String {
        self.secrets.redacted(text)
    }

    /// What the server declares about `tool` in its `tools` tables, if anything.
    pub fn declared(&self, tool: &str) -> Option<&Declared> {
        self.tools.iter().find(|(name, _)| name == tool).map(|(_, declared)| declared)
    }
}

/// The servers' names as a message shows them: `` `a`, `b` ``.
pub fn names(entries: &[ServerEntry]) -> String {
    entries.iter().map(|entry| format!("`{}`", entry.name)).collect::<Vec<_>>().join(", ")
}

/// `[mcp_servers]`: a table of servers keyed by name, in the file's order.
pub(super) fn read(
    value: &Value,
    at: &Located,
    here: &str,
    base: &Path,
    errors: &mut Vec<ConfigError>,
) -> Vec<ServerEntry> {
    let Value::Object(servers) = value else {
        errors.push(at.error(here, "`mcp_servers` must be a table keyed by server name"));
        return Vec::new();
    };
    let mut entries = Vec::new();
    for (name, table) in servers {
        let place = pointer(here, name);
        let mut fail = |key: &str, message: String| {
            let at_key = if key.is_empty() { place.clone() } else { pointer(&place, key) };
            errors.push(at.error(&at_key, format!("`mcp_servers.{name}`: {message}")));
        };
        let Some(table) = table.as_object() else {
            fail("", "must be a table".to_string());
            continue;
        };
        if let Some(entry) = entry(name, table, base, &mut fail) {
            entries.push(ServerEntry { file: at.file.clone(), line: at.line(&place), ..entry });
        }
    }
    // The file's order is the precedence: a TOML table comes sorted by key, its lines do not.
    entries.sort_by_key(|entry| entry.line);
    entries
}

/// One server's table; `fail` hears each problem with its key.
fn entry(
    name: &str,
    table: &Map<String, Value>,
    base: &Path,
    fail: &mut dyn FnMut(&str, String),
) -> Option<ServerEntry> {
    let mut ok = true;
    let mut problem = |key: &str, message: String| {
        ok = false;
        fail(key, message)
    };
    for key in table.keys().filter(|key| !KEYS.contains(&key.as_str())) {
        problem(key, format!("unknown key `{key}`; expected one of {}", KEYS.join(", ")));
    }
    // Every value a `${VAR}` expands to is a secret of this server's.
    let secrets = std::cell::RefCell::new(Secrets::default());
    let expand = |text: &str| {
        expand_with(text, &mut |value| {
            if let Ok(mut secrets) = secrets.try_borrow_mut() {
                secrets.add(value)
            }
        })
    };
    let string = |key: &str, problem: &mut dyn FnMut(&str, String)| match table.get(key) {
        None => None,
        Some(Value::String(text)) => match expand(text) {
            Ok(text) => Some(text),
            Err(message) => {
                problem(key, format!("`{key}`: {message}"));
                None
            }
        },
        Some(other) => {
            problem(key, format!("`{key}` must be a string, not {other}"));
            None
        }
    };
    let strings = |key: &str, problem: &mut dyn FnMut(&str, String)| -> Vec<String> {
        match table.get(key) {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|item| match item.as_str().map(expand) {
                    Some(Ok(text)) => Some(text),
                    Some(Err(message)) => {
                        problem(key, format!("`{key}`: {message}"));
                        None
                    }
                    None => {
                        problem(key, format!("`{key}` must be a list of strings, not {item}"));
                        None
                    }
                })
                .collect(),
            Some(other) => {
                problem(key, format!("`{key}` must be a list of strings, not {other}"));
                Vec::new()
            }
        }
    };
    let pairs = |key: &str, problem: &mut dyn FnMut(&str, String)| -> Vec<(String, String)> {
        match table.get(key) {
            None => Vec::new(),
            Some(Value::Object(items)) => items
                .iter()
                .filter_map(|(name, value)| match value.as_str().map(expand) {
                    Some(Ok(text)) => Some((name.clone(), text)),
                    Some(Err(message)) => {
                        problem(key, format!("`{key}.{name}`: {message}"));
                        None
                    }
                    None => {
                        problem(key, format!("`{key}.{name}` must be a string, not {value}"));
                        None
                    }
                })
                .collect(),
            Some(other) => {
                problem(key, format!("`{key}` must be a table of strings, not {other}"));
                Vec::new()
            }
        }
    };
    let url = string("url", &mut problem);
    let command = string("command", &mut problem);
    let transport = match string("transport", &mut problem).as_deref() {
        Some("stdio") => "stdio",
        Some("http" | "streamable-http" | "streamable_http") => "http",
        None if url.is_some() && command.is_none() => "http",
        None => "stdio",
        Some(other) => {
            problem("transport", format!("`transport` is `{other}`; expected stdio or http"));
            "stdio"
        }
    };
    let transport = if transport == "http" {
        let Some(url) = url else {
            problem("url", "an http server needs `url`".to_string());
            return None;
        };
        let headers = pairs("headers", &mut problem);
        let mut secrets = secrets.borrow_mut();
        secrets.add_url(&url);
        for (_, value) in &headers {
            secrets.add(value);
            // `Authorization: Bearer <token>`: the token alone is a secret too.
            if let Some((_, token)) = value.split_once(' ') {
                secrets.add(token.trim());
            }
        }
        Transport::Http { url, headers }
    } else {
        let Some(command) = command.filter(|command| !command.trim().is_empty()) else {
            problem("command", "a stdio server needs `command`".to_string());
            return None;
        };
        let cwd = string("cwd", &mut problem).map(|dir| base.join(dir));
        Transport::Stdio { command, args: strings("args", &mut problem), env: pairs("env", &mut problem), cwd }
    };
    let prefix = string("prefix", &mut problem).unwrap_or_default();
    let pin = match table.get("pin") {
        None => false,
        Some(Value::Bool(pin)) => *pin,
        Some(other) => {
            problem("pin", format!("`pin` must be true or false, not {other}"));
            false
        }
    };
    let startup_timeout = match table.get("startup_timeout") {
        None => STARTUP_TIMEOUT,
        Some(value) => match value.as_f64() {
            Some(seconds) if seconds > 0.0 && seconds <= 3600.0 => Duration::from_secs_f64(seconds),
            _ => {
                problem("startup_timeout", format!("`startup_timeout` is {value}; expected seconds, from 0 to 3600"));
                STARTUP_TIMEOUT
            }
        },
    };
    let mut tools = Vec::new();
    match table.get("tools") {
        None => {}
        Some(Value::Object(tables)) => {
            for (tool, table) in tables {
                let (declared, problems) = policy::from_json(table, base);
                for (key, message) in problems {
                    problem(
                        "tools",
                        format!(
                            "`tools.{tool}`{}: {message}",
                            if key.is_empty() { String::new() } else { format!(".{key}") }
                        ),
                    );
                }
                tools.push((tool.clone(), declared));
            }
        }
        Some(other) => problem("tools", format!("`tools` must be a table keyed by tool name, not {other}")),
    }
    ok.then(|| ServerEntry {
        name: name.to_string(),
        transport,
        prefix,
        startup_timeout,
        tools,
        file: PathBuf::new(),
        line: None,
        pin,
        secrets: secrets.into_inner(),
    })
}

/// `text` with each `${VAR}` replaced by that variable of lcp's environment.
#[cfg(test)]
fn expand(text: &str) -> Result<String, String> {
    expand_with(text, &mut |_| {})
}

/// [`expand`], each value put in telling `expanded`.
fn expand_with(text: &str, expanded: &mut dyn FnMut(&str)) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("`${{` without its `}}` in `{text}`"));
        };
        let name = &after[..end];
        match std::env::var(name) {
            Ok(value) => {
                expanded(&value);
                out.push_str(&value)
            }
            Err(_) => return Err(format!("`${{{name}}}` is not set in lcp's environment")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The servers of each host config file (`[mcp] host_configs`), after the file's own:
/// Claude Desktop's and Cursor's `mcpServers`, VS Code's `servers`. `~/` is the home
/// folder; a relative path is the config file's folder's.
pub(super) fn read_host_configs(paths: &[PathBuf], errors: &mut Vec<ConfigError>) -> Vec<ServerEntry> {
    let mut entries = Vec::new();
    for path in paths {
        let text = match super::read_regular_file(path) {
            Ok(text) => text,
            Err(err) => {
                errors.push(ConfigError::at(path, None, format!("the host config cannot be read: {err}")));
                continue;
            }
        };
        let document: Value = match serde_json::from_str(&text) {
            Ok(document) => document,
            Err(err) => {
                errors.push(ConfigError::at(
                    path,
                    Some(err.line() as u32),
                    format!("the host config is not JSON: {err}"),
                ));
                continue;
            }
        };
        let servers = document.get("mcpServers").or_else(|| document.get("servers"));
        let Some(Value::Object(servers)) = servers else {
            errors.push(ConfigError::at(path, None, "the host config has no `mcpServers` or `servers` table"));
            continue;
        };
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        for (name, table) in servers {
            let mut fail = |key: &str, message: String| {
                let key = if key.is_empty() { String::new() } else { format!(".{key}") };
                errors.push(ConfigError::at(path, None, format!("server `{name}`{key}: {message}")))
            };
            let Some(table) = table.as_object() else {
                fail("", "must be an object".to_string());
                continue;
            };
            // The editors' own keys: `type` is the transport, and entries say more
            // than lcp reads (`disabled`, `envFile`, `autoApprove`...).
            if table.get("disabled").and_then(Value::as_bool) == Some(true) {
                continue;
            }
            let mut own = Map::new();
            for (key, value) in table {
                match key.as_str() {
                    "type" => {
                        let transport = match value.as_str() {
                            Some("sse" | "http" | "streamable-http" | "streamableHttp") => "http",
                            _ => "stdio",
                        };
                        own.insert("transport".to_string(), Value::String(transport.to_string()));
                    }
                    "command" | "args" | "env" | "cwd" | "url" | "headers" => {
                        own.insert(key.clone(), value.clone());
                    }
                    _ => {}
                }
            }
            if let Some(entry) = entry(name, &own, &base, &mut fail) {
                entries.push(ServerEntry { file: path.clone(), ..entry });
            }
        }
    }
    entries
}

/// A host config's path as written: `~/` is the home folder, a relative path is
/// taken from `base`.
pub(super) fn host_config_path(text: &str, base: &Path) -> PathBuf {
    match text.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default().join(rest),
        None => base.join(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_come_from_the_environment() {
        assert_eq!(expand("a${HOME}b").unwrap(), format!("a{}b", std::env::var("HOME").unwrap()));
        assert_eq!(
            expand("${LCP_SURELY_NOT_SET_ANYWHERE}").unwrap_err(),
            "`${LCP_SURELY_NOT_SET_ANYWHERE}` is not set in lcp's environment"
        );
        assert!(expand("${OPEN").unwrap_err().contains("without its"));
    }

    fn entry_of(table: Value, problems: &mut Vec<String>) -> Option<ServerEntry> {
        let mut fail = |key: &str, message: String| problems.push(format!("{key}: {message}"));
        entry("s", table.as_object().unwrap(), Path::new("."), &mut fail)
    }

    #[test]
    fn a_servers_secrets_are_its_expanded_values_url_userinfo_and_query_values_and_header_values() {
        let home = std::env::var("HOME").unwrap();
        let table = serde_json::json!({
            "url": "http://name:pa55@127.0.0.1:9/mcp?key=qv&x",
            "headers": {"Authorization": "Bearer tok3n", "X-Other": "hv", "X-Home": "at ${HOME}"},
            "pin": true,
        });
        let mut problems = Vec::new();
        let entry = entry_of(table, &mut problems).unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        assert!(entry.pin);
        let debug = format!("{entry:?}");
        for secret in ["pa55", "tok3n", "qv", "hv", home.as_str()] {
            assert!(!debug.contains(secret), "{debug}");
        }
        let said = entry.redact(&format!("name pa55 qv Bearer tok3n, tok3n hv {home}, and 127.0.0.1:9/mcp?key= stays"));
        assert_eq!(said, "*** *** *** ***, *** *** ***, and 127.0.0.1:9/mcp?key= stays");
        let mut problems = Vec::new();
        assert!(entry_of(serde_json::json!({"command": "x", "pin": "yes"}), &mut problems).is_none());
        assert_eq!(problems, ["pin: `pin` must be true or false, not \"yes\""]);
    }
}
