//! `[mcp_servers.NAME]` and `[mcp] host_configs`: the MCP servers whose tools lcp
//! gathers (SPEC §14).
//!
//! Owns the tables' keys, `${VAR}` taken from lcp's environment, and reading the
//! servers desktop assistants and editors are configured with (Claude Desktop's and
//! Cursor's `mcpServers`, VS Code's `servers`). It never starts a server: `mcp`'s
//! client does, when tools are listed or called.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde::de::{self, Deserializer};
use serde_json::Value;

use crate::host::text_safety::{self, Secrets};
use crate::located::{ConfigError, Entries, Node, Reader, Style};
use crate::policy::Declared;

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

/// Without the values that may be secrets: the URL as `text_safety::shown_url`
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

/// A `[mcp_servers.NAME]` table as written, each string with its `${VAR}`s expanded.
#[derive(Default, Deserialize)]
#[serde(default, expecting = "a table")]
struct ServerTable {
    transport: Option<Kind>,
    command: Option<Expanded>,
    args: Vec<Expanded>,
    env: Entries<Expanded>,
    cwd: Option<Expanded>,
    url: Option<Expanded>,
    headers: Entries<Expanded>,
    prefix: Option<Expanded>,
    #[serde(deserialize_with = "startup_timeout")]
    startup_timeout: Option<Duration>,
    tools: Entries<Declared>,
    pin: bool,
}

/// `transport`.
#[derive(Clone, Copy, PartialEq, Eq, Deserialize)]
enum Kind {
    #[serde(rename = "stdio")]
    Stdio,
    #[serde(rename = "http", alias = "streamable-http", alias = "streamable_http")]
    Http,
}

/// A string with each `${VAR}` replaced by that variable of lcp's environment, and
/// the values put in: secrets of the server's.
#[derive(Default)]
struct Expanded {
    text: String,
    secrets: Vec<String>,
}

impl<'de> Deserialize<'de> for Expanded {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let written = String::deserialize(deserializer)?;
        let mut secrets = Vec::new();
        let text = expand_with(&written, &mut |value| secrets.push(value.to_string()))
            .map_err(|message| de::Error::custom(format!(": {message}")))?;
        Ok(Expanded { text, secrets })
    }
}

fn startup_timeout<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Duration>, D::Error> {
    match Value::deserialize(deserializer)?.as_f64() {
        Some(seconds) if seconds > 0.0 && seconds <= 3600.0 => Ok(Some(Duration::from_secs_f64(seconds))),
        _ => Err(de::Error::invalid_value(de::Unexpected::Other("it"), &"seconds, from 0 to 3600")),
    }
}

/// `[mcp_servers]`: a table of servers keyed by name, in the file's order.
pub(super) fn read(node: &Node, file: &Path, base: &Path, errors: &mut Vec<ConfigError>) -> Vec<ServerEntry> {
    let Some(servers) = node.members() else {
        errors.push(ConfigError::at_pos(file, node.at, "`mcp_servers` must be a table keyed by server name"));
        return Vec::new();
    };
    let mut entries = Vec::new();
    for (name, table) in servers {
        let before = errors.len();
        let mut reader = Reader::new(file, Style::Must, "", errors).prefixed(format!("`mcp_servers.{name}`: "));
        let Some(read) = reader.read::<ServerTable>(table) else { continue };
        if let Some(entry) = entry(name, read, base, table, &mut reader)
            && errors.len() == before
        {
            entries.push(ServerEntry { file: file.to_path_buf(), line: table.at.map(|at| at.line), ..entry });
        }
    }
    // The file's order is the precedence: a TOML table comes sorted by key, its lines do not.
    entries.sort_by_key(|entry| entry.line);
    entries
}

/// One server's table, read from `node`.
fn entry(name: &str, table: ServerTable, base: &Path, node: &Node, reader: &mut Reader<'_>) -> Option<ServerEntry> {
    // A key given but refused is reported already: it is not missing too.
    let refused = [("url", table.url.is_none()), ("command", table.command.is_none())]
        .map(|(key, unread)| unread && node.get(key).is_some());
    // Every value a `${VAR}` expands to is a secret of this server's.
    let secrets = std::cell::RefCell::new(Secrets::default());
    let expanded = |value: Expanded| {
        for secret in &value.secrets {
            secrets.borrow_mut().add(secret);
        }
        value.text
    };
    let pairs = |pairs: Entries<Expanded>| -> Vec<(String, String)> {
        pairs.0.into_iter().map(|(name, value)| (name, expanded(value))).collect()
    };
    let url = table.url.map(expanded);
    let command = table.command.map(expanded);
    let kind = table.transport.unwrap_or(if url.is_some() && command.is_none() { Kind::Http } else { Kind::Stdio });
    let transport = match kind {
        Kind::Http => {
            let Some(url) = url else {
                if !refused[0] {
                    reader.error(node.at, "an http server needs `url`");
                }
                return None;
            };
            let headers = pairs(table.headers);
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
        }
        Kind::Stdio => {
            let Some(command) = command.filter(|command| !command.trim().is_empty()) else {
                if !refused[1] {
                    reader.error(node.at, "a stdio server needs `command`");
                }
                return None;
            };
            let cwd = table.cwd.map(|dir| base.join(expanded(dir)));
            let args = table.args.into_iter().map(expanded).collect();
            Transport::Stdio { command, args, env: pairs(table.env), cwd }
        }
    };
    let prefix = table.prefix.map(expanded).unwrap_or_default();
    let tools = table.tools.0.into_iter().map(|(tool, declared)| (tool, declared.based(base))).collect();
    Some(ServerEntry {
        name: name.to_string(),
        transport,
        prefix,
        startup_timeout: table.startup_timeout.unwrap_or(STARTUP_TIMEOUT),
        tools,
        file: PathBuf::new(),
        line: None,
        pin: table.pin,
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

/// A server of a host config file: the keys lcp reads of the editors' own (`type` is
/// the transport), the others (`envFile`, `autoApprove`...) kept aside unread.
#[derive(Default, Deserialize)]
#[serde(default)]
struct HostServer {
    #[serde(rename = "type")]
    kind: Option<Value>,
    disabled: Option<Value>,
    command: Option<Expanded>,
    args: Vec<Expanded>,
    env: Entries<Expanded>,
    cwd: Option<Expanded>,
    url: Option<Expanded>,
    headers: Entries<Expanded>,
    #[serde(flatten)]
    _other: serde_json::Map<String, Value>,
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
        let document = match Node::parse(&text, true) {
            Ok(document) => document,
            Err((at, message)) => {
                let message = message.replacen("invalid JSON", "the host config is not JSON", 1);
                errors.push(ConfigError::at_pos(path, at, message));
                continue;
            }
        };
        let servers = document.get("mcpServers").or_else(|| document.get("servers")).and_then(Node::members);
        let Some(servers) = servers else {
            errors.push(ConfigError::at(path, None, "the host config has no `mcpServers` or `servers` table"));
            continue;
        };
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        for (name, table) in servers {
            let before = errors.len();
            let mut reader = Reader::new(path, Style::Must, "", errors).prefixed(format!("server `{name}`: "));
            let Some(server) = reader.read::<HostServer>(table) else { continue };
            if server.disabled.and_then(|disabled| disabled.as_bool()) == Some(true) {
                continue;
            }
            let kind = server.kind.map(|kind| match kind.as_str() {
                Some("sse" | "http" | "streamable-http" | "streamableHttp") => Kind::Http,
                _ => Kind::Stdio,
            });
            let own = ServerTable {
                transport: kind,
                command: server.command,
                args: server.args,
                env: server.env,
                cwd: server.cwd,
                url: server.url,
                headers: server.headers,
                ..ServerTable::default()
            };
            if let Some(entry) = entry(name, own, &base, table, &mut reader)
                && errors.len() == before
            {
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
        let mut errors = Vec::new();
        let mut reader = Reader::new(Path::new("lcp.json"), Style::Must, "", &mut errors).prefixed("`mcp_servers.s`: ");
        let node = Node::from_json(table);
        let read = reader.read::<ServerTable>(&node);
        let entry = read.and_then(|read| entry("s", read, Path::new("."), &node, &mut reader));
        problems.extend(errors.iter().map(|error| error.to_string()));
        entry.filter(|_| problems.is_empty())
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
        assert_eq!(problems, ["lcp.json: `mcp_servers.s`: `pin` must be true or false, not \"yes\""]);
    }
}
