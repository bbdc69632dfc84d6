//! Profiles as defined (SPEC §11, seed 000): the three forms of `[profiles.NAME]` in the
//! config file (a list of tool names, an `alias = "tool"` mapping, an `alias = { tool =
//! "..." }` nested mapping) with `extra_tools`, `description` and `docs`, and `kits/NAME.kit`
//! files (front matter, then one tool per line). A problem stays with its profile, naming
//! the file, the line and the entry: one bad profile never hides another. Plain data read
//! from files; checking a profile against the tools found is `profile::select`'s.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::located::{At, ConfigError, Node, Reader, Style, Tree};

/// The name of the empty profile (seed 000): no tools but `--extra-tools`.
pub const NONE: &str = "none";

/// A profile as defined, before it is checked against the tools.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// The name `--profile` takes.
    pub name: String,
    /// What the profile is for, if it says.
    pub description: Option<String>,
    /// Documentation of the profile, resolved against the config file's folder.
    pub docs: Option<PathBuf>,
    /// The tools, in the order given; `extra_tools` come last, under their own names.
    pub entries: Vec<Entry>,
    /// Where it is defined.
    pub origin: Origin,
    /// Problems of the definition itself (a bad alias, broken front matter).
    pub problems: Vec<ConfigError>,
}

/// One tool of a profile, as the model sees it (`alias`) and as it is (`tool`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The name the model sees.
    pub alias: String,
    /// The tool's own name.
    pub tool: String,
    /// Where the entry is written, when that is a line of a file.
    pub line: Option<u32>,
    /// From `--extra-tools` rather than from the profile's definition.
    pub extra: bool,
}

/// Where a profile is defined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A config file's `[profiles.NAME]` (at `line`) or a kit file.
    File {
        /// The config file or the kit.
        path: PathBuf,
        /// The line of the definition, when the file has lines (TOML).
        line: Option<u32>,
    },
    /// `--profile a,b,c` or `--profile none`.
    Option,
}

impl Profile {
    pub(crate) fn new(name: &str, origin: Origin) -> Profile {
        Profile {
            name: name.to_string(),
            description: None,
            docs: None,
            entries: Vec::new(),
            origin,
            problems: Vec::new(),
        }
    }

    /// An error about this profile at `line` of its file (or its option).
    pub(crate) fn error(&self, entry: &Entry, message: String) -> ConfigError {
        let message = format!("profile `{}`: {message}", self.name);
        match (&self.origin, entry.extra) {
            (_, true) => ConfigError::Option { option: "--extra-tools", message },
            (Origin::File { path, .. }, false) => ConfigError::at(path, entry.line, message),
            (Origin::Option, false) => ConfigError::Option { option: "--profile", message },
        }
    }

    pub(crate) fn push(&mut self, alias: &str, tool: &str, line: Option<u32>) {
        self.entries.push(Entry { alias: alias.to_string(), tool: tool.to_string(), line, extra: false });
    }

    /// Where the profile is written, for listings: `path:line`, or `--profile`.
    pub fn place(&self) -> String {
        match &self.origin {
            Origin::File { path, line: Some(line) } => format!("{}:{line}", path.display()),
            Origin::File { path, line: None } => path.display().to_string(),
            Origin::Option => "--profile".to_string(),
        }
    }
}

/// A name a tool may be given: what every export format accepts (SPEC §4's name
/// rules): 1 to 64 ASCII letters, digits, `_` and `-`, starting with a letter or `_`.
/// `export` checks that this is the meet of its formats' rules.
pub fn is_valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// `[profiles.NAME]` as a table.
#[derive(Default, Deserialize)]
#[serde(default, expecting = "a table or a list of tool names")]
struct ProfileTable {
    description: Option<String>,
    #[serde(deserialize_with = "super::non_empty")]
    docs: Option<String>,
    tools: Tools,
    extra_tools: Vec<At<String>>,
}

/// A profile's `tools`: a list of names, or a table of aliases.
#[derive(Default)]
enum Tools {
    #[default]
    None,
    Names(Vec<At<String>>),
    Aliases(Vec<(String, At<String>)>),
}

impl<'de> Deserialize<'de> for Tools {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Tools, D::Error> {
        struct Seen;
        impl<'de> Visitor<'de> for Seen {
            type Value = Tools;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of tool names or a table of aliases")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Tools, A::Error> {
                let mut names = Vec::new();
                while let Some(name) = items.next_element()? {
                    names.push(name);
                }
                Ok(Tools::Names(names))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Tools, A::Error> {
                let mut aliases = Vec::new();
                while let Some((alias, tool)) = map.next_entry::<String, At<Target>>()? {
                    aliases.push((alias, At { at: tool.at, value: tool.value.0 }));
                }
                Ok(Tools::Aliases(aliases))
            }
        }
        deserializer.deserialize_any(Seen)
    }
}

/// An alias's tool: `alias = "tool_x"` or `alias = { tool = "tool_x" }`.
struct Target(String);

impl<'de> Deserialize<'de> for Target {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Target, D::Error> {
        struct Seen;
        impl<'de> Visitor<'de> for Seen {
            type Value = Target;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a tool: `alias = \"tool_x\"` or `alias = { tool = \"tool_x\" }`")
            }
            fn visit_str<E: de::Error>(self, tool: &str) -> Result<Target, E> {
                Ok(Target(tool.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Target, A::Error> {
                match (map.next_entry::<String, String>()?, map.next_key::<String>()?) {
                    (Some((key, tool)), None) if key == "tool" => Ok(Target(tool)),
                    _ => Err(de::Error::invalid_type(de::Unexpected::Map, &self)),
                }
            }
        }
        deserializer.deserialize_any(Seen)
    }
}

/// `[profiles.NAME]` of a config `file`; `base` is the folder for `docs`.
pub(super) fn from_config(name: &str, node: &Node, file: &Path, base: &Path) -> Profile {
    let mut profile = Profile::new(name, Origin::File { path: file.to_path_buf(), line: node.at.map(|at| at.line) });
    let mut problems = Vec::new();
    let mut reader = Reader::new(file, Style::Must, "", &mut problems).prefixed(format!("profile `{name}`: "));
    let table = match node.tree {
        Tree::Array(_) => reader.read::<Tools>(node).map(|tools| ProfileTable { tools, ..ProfileTable::default() }),
        _ => reader.read::<ProfileTable>(node),
    };
    if let Some(table) = table {
        profile.description = table.description;
        profile.docs = table.docs.map(|docs| base.join(docs));
        let named = |names: Vec<At<String>>| names.into_iter().map(|name| (name.value.clone(), name, false));
        let entries: Vec<(String, At<String>, bool)> = match table.tools {
            Tools::None => Vec::new(),
            Tools::Names(names) => named(names).collect(),
            Tools::Aliases(aliases) => aliases.into_iter().map(|(alias, tool)| (alias, tool, true)).collect(),
        };
        // `extra_tools` come after the tools, whatever the order of the keys.
        for (alias, tool, aliased) in entries.into_iter().chain(named(table.extra_tools)) {
            if aliased && !is_valid_name(&alias) {
                reader.error(
                    tool.at,
                    format!("alias `{alias}` is not a valid tool name (1 to 64 ASCII letters, digits, `_` or `-`, starting with a letter or `_`)"),
                );
                continue;
            }
            profile.push(&alias, &tool.value, tool.at.map(|at| at.line));
        }
    }
    profile.problems = problems;
    profile
}

/// Whether a path names a kit file (`*.kit`).
pub fn is_kit(path: &Path) -> bool {
    path.extension().is_some_and(|ext| ext == "kit")
}

/// Every `*.kit` file of a folder, sorted by name; a missing folder has none.
pub fn read_kits(folder: &Path) -> Vec<Profile> {
    let Ok(entries) = std::fs::read_dir(folder) else { return Vec::new() };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|entry| entry.path()).filter(|path| is_kit(path)).collect();
    paths.sort();
    let base = folder.parent().map(Path::to_path_buf).unwrap_or_default();
    paths
        .into_iter()
        .map(|path| match super::read_regular_file(&path) {
            Ok(text) => parse_kit(&path, &text, &base),
            Err(err) => {
                let mut profile = Profile::new(&kit_name(&path), Origin::File { path: path.clone(), line: None });
                profile.problems.push(ConfigError::at(&path, None, format!("cannot be read: {err}")));
                profile
            }
        })
        .collect()
}

fn kit_name(path: &Path) -> String {
    path.file_stem().map(|stem| stem.to_string_lossy().into_owned()).unwrap_or_default()
}

/// A kit file (seed 000):
///
/// ```text
/// ---
/// name: filesystem
/// description: Read, write, and search files
/// docs: docs/kits/filesystem.md
/// ---
/// tool_read_file
/// # a comment
/// tool_write_file
/// ```
///
/// The front matter is optional; `docs` is relative to `base` (the config file's folder).
pub fn parse_kit(path: &Path, text: &str, base: &Path) -> Profile {
    let name = kit_name(path);
    let mut profile = Profile::new(&name, Origin::File { path: path.to_path_buf(), line: None });
    let error =
        |line: usize, message: String| ConfigError::at(path, Some(line as u32), format!("kit `{name}`: {message}"));
    let meaningful = |line: &str| !line.trim().is_empty() && !line.trim_start().starts_with('#');
    let lines: Vec<(usize, &str)> = text.lines().enumerate().map(|(i, line)| (i + 1, line)).collect();
    let mut body = &lines[..];
    if let Some(start) = lines.iter().position(|(_, line)| meaningful(line))
        && lines[start].1.trim() == "---"
    {
        let opened = lines[start].0;
        let Some(length) = lines[start + 1..].iter().position(|(_, line)| line.trim() == "---") else {
            profile.problems.push(error(opened, "the front matter opened here is never closed by `---`".to_string()));
            return profile;
        };
        for &(number, line) in &lines[start + 1..start + 1 + length] {
            if !meaningful(line) {
                continue;
            }
            let Some((key, value)) = line.split_once(':') else {
                profile
                    .problems
                    .push(error(number, format!("front matter line `{}` is not `key: value`", line.trim())));
                continue;
            };
            let value = unquote(value.trim());
            match key.trim() {
                "name" if value != name => profile
                    .problems
                    .push(error(number, format!("the front matter names it `{value}`, but the file is `{name}.kit`"))),
                "name" => {}
                "description" => profile.description = Some(value.to_string()),
                "docs" if !value.is_empty() => profile.docs = Some(base.join(value)),
                other => profile.problems.push(error(
                    number,
                    format!("unknown front matter key `{other}`; expected name, description or docs"),
                )),
            }
        }
        body = &lines[start + length + 2..];
    }
    for &(number, line) in body {
        if !meaningful(line) {
            continue;
        }
        let tool = line.trim();
        if tool.contains(char::is_whitespace) || tool == "---" {
            profile.problems.push(error(number, format!("`{tool}` is not a tool name (one name per line)")));
            continue;
        }
        profile.push(tool, tool, Some(number as u32));
    }
    profile
}

fn unquote(value: &str) -> &str {
    for quote in ['"', '\''] {
        if let Some(inner) = value.strip_prefix(quote).and_then(|v| v.strip_suffix(quote)) {
            return inner;
        }
    }
    value
}

/// The text of a kit file for `lcp profile create`.
pub fn kit_text(name: &str, description: Option<&str>, tools: &[String]) -> String {
    let mut text = format!("---\nname: {name}\n");
    if let Some(description) = description {
        text.push_str(&format!("description: {}\n", description.replace('\n', " ")));
    }
    text.push_str("---\n");
    for tool in tools {
        text.push_str(tool);
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kit(text: &str) -> Profile {
        parse_kit(Path::new("kits/files.kit"), text, Path::new("/cfg"))
    }

    fn problems(profile: &Profile) -> Vec<String> {
        profile.problems.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn kits() {
        let files = kit(
            "---\nname: files\ndescription: \"Read and write\"\ndocs: docs/files.md\n---\n# reading\ntool_read\n\ntool_write\n",
        );
        assert_eq!(problems(&files), Vec::<String>::new());
        assert_eq!(files.description.as_deref(), Some("Read and write"));
        assert_eq!(files.docs, Some(PathBuf::from("/cfg/docs/files.md")));
        let tools: Vec<(&str, Option<u32>)> = files.entries.iter().map(|e| (e.tool.as_str(), e.line)).collect();
        assert_eq!(tools, [("tool_read", Some(7)), ("tool_write", Some(9))]);
        assert_eq!(kit("tool_a\ntool_b\n").entries.len(), 2);
        assert_eq!(
            problems(&kit("---\nname: files\ntool_a\n")),
            ["kits/files.kit:1: kit `files`: the front matter opened here is never closed by `---`"]
        );
        assert_eq!(
            problems(&kit("---\nname: other\ncolour: red\nplain\n---\ntool a\n")),
            [
                "kits/files.kit:2: kit `files`: the front matter names it `other`, but the file is `files.kit`",
                "kits/files.kit:3: kit `files`: unknown front matter key `colour`; expected name, description or docs",
                "kits/files.kit:4: kit `files`: front matter line `plain` is not `key: value`",
                "kits/files.kit:6: kit `files`: `tool a` is not a tool name (one name per line)",
            ]
        );
    }

    #[test]
    fn created_kits_read_back() {
        let text = kit_text("files", Some("Read"), &["tool_a".to_string(), "tool_b".to_string()]);
        let read = kit(&text);
        assert_eq!(problems(&read), Vec::<String>::new());
        assert_eq!(read.description.as_deref(), Some("Read"));
        assert_eq!(read.entries.iter().map(|e| e.tool.as_str()).collect::<Vec<_>>(), ["tool_a", "tool_b"]);
    }

    #[test]
    fn valid_names() {
        for name in ["read", "_r", "read-file", "a1"] {
            assert!(is_valid_name(name), "{name}");
        }
        for name in ["", "1a", "read file", "read.file", "é", &"a".repeat(65)] {
            assert!(!is_valid_name(name), "{name}");
        }
    }
}
