//! Export formats: one lowering of the registry per target API (SPEC §4).
//!
//! Owns each provider's envelope, its name rules, OpenAI's strict subset and
//! Gemini's OpenAPI subset. Input is the registry, with the descriptions prompt
//! providers gave laid over its tools' own; it never runs Python.
//! A tool a format cannot carry is left out with an error naming the rule,
//! never cut or renamed silently.
//!
//! [`export`] builds a format's document as a `Value`; [`write()`] writes the same
//! document as text without ever holding it: the envelope, then one tool at a time,
//! with the compact text of a schema the format carries unchanged spliced in
//! (`export/splice.rs`), tools lowered on every core and written in order
//! (`src/ordered.rs`). Both lower each tool with the same `entry`; OpenAI's strict
//! subset is `export/strict.rs`, Gemini's OpenAPI subset `export/gemini.rs`; both
//! lower a common schema's text instead of its value in [`write()`] (`export/text.rs`).

mod gemini;
mod splice;
mod strict;
mod text;

pub use gemini::gemini;
pub(crate) use strict::openai_strict;

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::io::{self, Write};
use std::path::Path;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::diag::{Diagnostic, Level};
use crate::discovery::extract::{Hooks, Library, Origin, Resource, Returns, Tool};
use crate::discovery::registry::{Descriptions, Registry};
use crate::discovery::schema;
use crate::fast_paths::FastPath;
use crate::path_json;
use crate::policy::{self, Found};
use text::Lowered;

/// A target of [`export`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenAI Chat Completions `tools`; `strict`: in OpenAI's strict mode.
    Openai {
        /// Every schema lowered to OpenAI's strict subset (`--strict`).
        strict: bool,
    },
    /// OpenAI Responses `tools`; `strict`: in OpenAI's strict mode.
    OpenaiResponses {
        /// Every schema lowered to OpenAI's strict subset (`--strict`).
        strict: bool,
    },
    /// Anthropic Messages `tools`.
    Anthropic,
    /// Gemini `functionDeclarations`.
    Gemini,
    /// An MCP `tools/list` result.
    Mcp {
        /// Every named class inlined instead of a `$defs` entry and `$ref`s, for
        /// clients that cannot resolve them (`[mcp] inline_refs`).
        inline_refs: bool,
    },
    /// lcp's own manifest: libraries, tools and diagnostics.
    Manifest,
}

impl Format {
    /// The format's name: `openai`, `openai-responses`, `anthropic`, `gemini`, `mcp`,
    /// `manifest`.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Openai { .. } => "openai",
            Format::OpenaiResponses { .. } => "openai-responses",
            Format::Anthropic => "anthropic",
            Format::Gemini => "gemini",
            Format::Mcp { .. } => "mcp",
            Format::Manifest => "manifest",
        }
    }

    /// Every format in its plain form (not strict, classes as `$defs`).
    pub const ALL: [Format; 6] = [
        Format::Openai { strict: false },
        Format::OpenaiResponses { strict: false },
        Format::Anthropic,
        Format::Gemini,
        Format::Mcp { inline_refs: false },
        Format::Manifest,
    ];

    /// Whether `--strict` means something for the format: OpenAI's strict mode, in
    /// Chat Completions and Responses.
    pub fn has_strict_mode(self) -> bool {
        matches!(self, Format::Openai { .. } | Format::OpenaiResponses { .. })
    }

    /// The same format in OpenAI's strict mode when `strict` (and it has one).
    pub fn strict(self, strict: bool) -> Format {
        match self {
            Format::Openai { .. } => Format::Openai { strict },
            Format::OpenaiResponses { .. } => Format::OpenaiResponses { strict },
            other => other,
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Deepest tool entry exported. JSON readers refuse deeper documents (serde_json at
/// 128 levels), and an entry sits a few levels down in its document (four in an MCP
/// `tools/list` response). Schemas made from Python are bounded when they are made
/// ([`schema::MAX_SCHEMA_DEPTH`]), an MCP server's are not, and inlining definitions
/// (Gemini) can still add up.
const MAX_ENTRY_DEPTH: usize = 120;

/// How many levels down an entry holds its parameters schema, at most (OpenAI's
/// `function.parameters`), counted as [`schema::json_depth`] counts.
const SCHEMA_NESTING: usize = 2;

/// How many levels down an entry holds its output schema, at most (MCP's
/// `outputSchema.properties.result`, see [`mcp_output_schema`]).
const OUTPUT_NESTING: usize = 3;

/// The registry in `format`, each tool with its description in `descriptions` if it
/// has one there, plus the problems of tools it had to leave out.
pub fn export(registry: &Registry, descriptions: &Descriptions, format: Format) -> (Value, Vec<Diagnostic>) {
    let (entries, diagnostics) = entries(registry, descriptions, format);
    let libraries = match format {
        Format::Manifest => registry.libraries().iter().map(|library| json!(manifest_library(library))).collect(),
        _ => Vec::new(),
    };
    (document(registry, format, Value::Array(libraries), Value::Array(entries)), diagnostics)
}

/// The entries of [`export`]'s list of tools, and the problems of those left out.
fn entries(registry: &Registry, descriptions: &Descriptions, format: Format) -> (Vec<Value>, Vec<Diagnostic>) {
    let mut diagnostics = Vec::new();
    let mut entries = Vec::new();
    for (library, tool) in registry.tools() {
        let shown = Shown::of(library, tool, descriptions);
        match lower(format, &shown, carried(format, shown.tool), output(format, shown.tool)) {
            Ok(entry) => entries.push(entry.into_value()),
            Err(problems) => diagnostics.extend(problems),
        }
    }
    (entries, diagnostics)
}

/// The most deferred tools Anthropic's tool search takes in one request.
pub(crate) const ANTHROPIC_MAX_DEFERRED: usize = 10_000;

/// The most tools one OpenAI Responses namespace of [`export_deferred`] holds; a library
/// with more is split into several.
pub(crate) const NAMESPACE_MAX_TOOLS: usize = 50;

/// The tool Anthropic's model searches deferred tools with (BM25).
pub(crate) const ANTHROPIC_TOOL_SEARCH: &str = "tool_search_tool_bm25";

/// [`export`] for a model that searches for its tools (SPEC §21, `lcp export --defer`):
/// every tool marked `"defer_loading": true` but those named in `always_loaded`, and
/// the provider's tool search tool added. `openai-responses` groups the deferred tools
/// in namespaces, one per library ([`NAMESPACE_MAX_TOOLS`] at most each, named after the
/// library, described by its docstring or else by its tools) and adds
/// `{"type": "tool_search"}`; `anthropic` adds its BM25 tool search tool and refuses
/// more than [`ANTHROPIC_MAX_DEFERRED`] deferred tools. When no tool is deferred
/// (every tool exported is always loaded, or none is exported), no search tool is
/// added: the document is the plain export. Other formats have no deferred loading:
/// `Err` says so. Every tool exported appears exactly once.
pub(crate) fn export_deferred(
    registry: &Registry,
    descriptions: &Descriptions,
    format: Format,
    always_loaded: &[String],
) -> Result<Deferred, String> {
    if !matches!(format, Format::Anthropic | Format::OpenaiResponses { .. }) {
        return Err(format!(
            "--defer is deferred loading with the provider's tool search: --format anthropic and openai-responses have it, {format} has not"
        ));
    }
    let (document, diagnostics) = export(registry, descriptions, format);
    let entries = into_array(document);
    let loaded = |entry: &Value| entry["name"].as_str().is_some_and(|name| always_loaded.iter().any(|n| n == name));
    let deferred = entries.iter().filter(|entry| !loaded(entry)).count();
    let always = entries.len() - deferred;
    if deferred == 0 {
        return Ok(Deferred { document: Value::Array(entries), problems: diagnostics, deferred, loaded: always });
    }
    let document = match format {
        Format::Anthropic => {
            if deferred > ANTHROPIC_MAX_DEFERRED {
                return Err(format!(
                    "--defer --format anthropic: {deferred} tools to defer, above the API's limit of {ANTHROPIC_MAX_DEFERRED}; \
                     choose fewer with --profile"
                ));
            }
            if entries.iter().any(|entry| entry["name"] == ANTHROPIC_TOOL_SEARCH) {
                return Err(format!(
                    "--defer --format anthropic: a tool is named `{ANTHROPIC_TOOL_SEARCH}`, the name of Anthropic's tool search tool"
                ));
            }
            let mut tools = vec![json!({ "type": "tool_search_tool_bm25_20251119", "name": ANTHROPIC_TOOL_SEARCH })];
            for mut entry in entries {
                if !loaded(&entry) {
                    entry["defer_loading"] = Value::Bool(true);
                }
                tools.push(entry);
            }
            Value::Array(tools)
        }
        _ => Value::Array(namespaces(registry, entries, &loaded)),
    };
    Ok(Deferred { document, problems: diagnostics, deferred, loaded: always })
}

/// What [`export_deferred`] wrote.
pub(crate) struct Deferred {
    /// The tools, as the provider takes them.
    pub document: Value,
    /// The problems of the tools left out.
    pub problems: Vec<Diagnostic>,
    /// How many tools are deferred.
    pub deferred: usize,
    /// How many tools are always loaded.
    pub loaded: usize,
}

/// OpenAI Responses' tools for [`export_deferred`]: the tools always loaded as they
/// are, then one namespace per library of the deferred ones (split above
/// [`NAMESPACE_MAX_TOOLS`]), then `{"type": "tool_search"}`. A library folder `X/` is
/// one library, all its files' tools in one namespace.
fn namespaces(registry: &Registry, entries: Vec<Value>, loaded: &dyn Fn(&Value) -> bool) -> Vec<Value> {
    let libraries: Vec<&Library> = registry.libraries().iter().map(|library| &**library).collect();
    // Each library file's library: the first file of its folder, else itself.
    let mut first_of_folder: HashMap<&Path, usize> = HashMap::new();
    let library_of: Vec<usize> = (libraries.iter().enumerate())
        .map(|(number, library)| match library.package.as_deref() {
            Some(folder) => *first_of_folder.entry(folder).or_insert(number),
            None => number,
        })
        .collect();
    // Each library's files, under its number.
    let mut files_of: Vec<Vec<&Library>> = vec![Vec::new(); libraries.len()];
    let mut of_tool = HashMap::new();
    for (number, library) in libraries.iter().enumerate() {
        files_of[library_of[number]].push(library);
        for tool in &library.tools {
            of_tool.entry(tool.name.as_str()).or_insert(library_of[number]);
        }
    }
    let mut out = Vec::new();
    // A namespace is named apart from the tools beside it, those always loaded.
    let mut used: Vec<String> = Vec::new();
    // The deferred tools of each library, libraries in the order their first tool comes.
    let mut groups: Vec<(usize, Vec<Value>)> = Vec::new();
    for entry in entries {
        if loaded(&entry) {
            used.extend(entry["name"].as_str().map(str::to_string));
            out.push(entry);
            continue;
        }
        let library = entry["name"].as_str().and_then(|name| of_tool.get(name)).copied().unwrap_or(usize::MAX);
        let mut entry = entry;
        entry["defer_loading"] = Value::Bool(true);
        match groups.iter_mut().find(|(number, _)| *number == library) {
            Some((_, tools)) => tools.push(entry),
            None => groups.push((library, vec![entry])),
        }
    }
    for (number, tools) in groups {
        let files = files_of.get(number).map_or(&[][..], Vec::as_slice);
        let base = namespace_name(&library_name(files));
        let summary = files.iter().find_map(|library| library.summary.as_deref());
        let parts = tools.len().div_ceil(NAMESPACE_MAX_TOOLS);
        let mut tools = tools.into_iter();
        for part in 1..=parts {
            let chunk: Vec<Value> = tools.by_ref().take(NAMESPACE_MAX_TOOLS).collect();
            let mut name = if part == 1 { base.clone() } else { suffixed(&base, part) };
            let mut k = 2;
            while used.contains(&name) {
                name = suffixed(&base, if part == 1 { k } else { part * 100 + k });
                k += 1;
            }
            used.push(name.clone());
            let description = namespace_description(summary, &chunk);
            out.push(json!({ "type": "namespace", "name": name, "description": description, "tools": chunk }));
        }
    }
    out.push(json!({ "type": "tool_search" }));
    out
}

/// The name of the library made of `files` (one file, or the files of a library
/// folder, its main file first): the first `TOOL_LIBRARY_NAME` that is not blank, else
/// the folder's name, else the file's stem.
fn library_name(files: &[&Library]) -> String {
    let named = files.iter().filter_map(|library| library.name.as_deref()).find(|name| !name.trim().is_empty());
    let folder = files.first().and_then(|library| library.package.as_deref()).and_then(Path::file_name);
    match (named, folder, files.first()) {
        (Some(name), _, _) => name.to_string(),
        (None, Some(folder), _) => folder.to_string_lossy().into_owned(),
        (None, None, Some(library)) => library.stem.clone(),
        (None, None, None) => String::new(),
    }
}

/// A namespace's name from a library's: `^[a-zA-Z0-9_-]{1,64}$`, every other character
/// `_`, cut to leave room for a suffix.
fn namespace_name(library: &str) -> String {
    let name: String = library
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .take(56)
        .collect();
    if name.is_empty() { "tools".to_string() } else { name }
}

/// `base_N`.
fn suffixed(base: &str, n: usize) -> String {
    format!("{base}_{n}")
}

/// A namespace's description: its library's summary (the first paragraph of
/// `TOOL_LIBRARY_DESC`, else of its docstring), else the names and descriptions of its
/// tools, at most about a thousand characters.
fn namespace_description(summary: Option<&str>, tools: &[Value]) -> String {
    const MAX: usize = 1000;
    if let Some(summary) = summary {
        return cut_text(summary, MAX);
    }
    let listed: Vec<String> = tools
        .iter()
        .map(|tool| {
            let name = tool["name"].as_str().unwrap_or_default();
            let summary = tool["description"].as_str().unwrap_or_default().lines().next().unwrap_or_default().trim();
            if summary.is_empty() { name.to_string() } else { format!("{name} ({summary})") }
        })
        .collect();
    cut_text(&format!("Tools: {}", listed.join("; ")), MAX)
}

/// `text` in at most `max` characters, `…` standing for what was cut.
fn cut_text(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    text.chars().take(max - 1).chain(['…']).collect()
}

/// How [`write()`] lays its text out: as `serde_json::to_string_pretty` (two-space
/// indents; what `lcp export` prints) or `serde_json::to_string` (`tools/list`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Two-space indents, one value per line.
    Pretty,
    /// No whitespace at all.
    Compact,
}

/// Writes [`export`]'s document to `out`, byte for byte as `serde_json` prints it in
/// `layout`, without building it: the envelope is written around the list of tools,
/// which [`write_entries`] writes one tool at a time. Returns the same problems.
/// With [`FastPath::Splice`] off, the document is built whole and printed.
pub fn write(
    registry: &Registry,
    descriptions: &Descriptions,
    format: Format,
    layout: Layout,
    out: &mut impl Write,
) -> io::Result<Vec<Diagnostic>> {
    if !FastPath::Splice.on() {
        let (document, diagnostics) = export(registry, descriptions, format);
        print(&document, layout, out)?;
        return Ok(diagnostics);
    }
    let mut diagnostics = Vec::new();
    let mut splice = |name: &str, depth: usize, out: &mut dyn Write| {
        match name {
            ENTRIES => {
                diagnostics = write_entries_at(registry, descriptions, format, layout, depth, out)?;
            }
            LIBRARIES => write_libraries(registry, layout, depth, out)?,
            _ => return Ok(false),
        }
        Ok(true)
    };
    let document = document(registry, format, splice::marker(LIBRARIES), splice::marker(ENTRIES));
    splice::write(&document, layout, 0, out, &mut splice)?;
    Ok(diagnostics)
}

/// The list of tools of [`write()`]'s document on its own (MCP's `tools` array), as a
/// document of its own. Tools are lowered and written in chunks, on every core, and
/// the chunks written in order as they are done (`src/ordered.rs`): only a few
/// chunks are ever held. A format that carries the parameters schema unchanged gets
/// its compact text spliced in, so that the schema is never parsed.
pub fn write_entries(
    registry: &Registry,
    descriptions: &Descriptions,
    format: Format,
    layout: Layout,
    out: &mut dyn Write,
) -> io::Result<Vec<Diagnostic>> {
    if !FastPath::Splice.on() {
        let (entries, diagnostics) = entries(registry, descriptions, format);
        print(&entries, layout, out)?;
        return Ok(diagnostics);
    }
    write_entries_at(registry, descriptions, format, layout, 0, out)
}

/// The general path of [`write`] and [`write_entries`]: `value`, built whole, as
/// `serde_json` prints it in `layout`.
fn print(value: &impl serde::Serialize, layout: Layout, out: &mut dyn Write) -> io::Result<()> {
    let printed = match layout {
        Layout::Pretty => serde_json::to_writer_pretty(out, value),
        Layout::Compact => serde_json::to_writer(out, value),
    };
    printed.map_err(io::Error::other)
}

/// A tool as a document shows it: with the description, the kernel's guarantees
/// and the capabilities the host laid over it ([`Descriptions`]).
struct Shown<'r> {
    library: &'r Library,
    tool: &'r Tool,
    description: &'r str,
    enforced: Vec<&'static str>,
    found: Option<&'r Found>,
}

impl<'r> Shown<'r> {
    /// `tool` of `library` as it is shown, with what `descriptions` lays over it.
    fn of(library: &'r Library, tool: &'r Tool, descriptions: &'r Descriptions) -> Shown<'r> {
        let found = descriptions.found(&tool.name);
        let enforced = descriptions.enforced_with(library, tool, found);
        Shown { library, tool, description: descriptions.of(tool), enforced, found }
    }
}

/// [`write_entries`] of `registry`'s tools, as the list is written at `depth`: each
/// is shown (`Shown::of`) by the thread that writes it.
fn write_entries_at(
    registry: &Registry,
    descriptions: &Descriptions,
    format: Format,
    layout: Layout,
    depth: usize,
    out: &mut dyn Write,
) -> io::Result<Vec<Diagnostic>> {
    let tools: Vec<(&Library, &Tool)> = registry.tools().collect();
    let chunks: Vec<&[(&Library, &Tool)]> = tools.chunks(CHUNK).collect();
    let mut diagnostics = Vec::new();
    let mut first = true;
    out.write_all(b"[")?;
    let write_chunk = |i: usize| write_chunk(chunks[i], descriptions, format, layout, depth);
    crate::ordered::run(chunks.len(), write_chunk, |(text, problems)| {
        diagnostics.extend(problems);
        // Every entry of a chunk starts with its comma; the list's first one has none.
        let text = if first { text.get(1..).unwrap_or_default() } else { &text[..] };
        first &= text.is_empty();
        out.write_all(text)
    })?;
    if !first && layout == Layout::Pretty {
        out.write_all(b"\n")?;
        out.write_all(&vec![b' '; depth * 2])?;
    }
    out.write_all(b"]")?;
    Ok(diagnostics)
}

/// Tools lowered and written by one thread at a time.
const CHUNK: usize = 64;

/// The entries of `tools` as [`write_entries`] writes them, each after a comma,
/// and the problems of those left out.
fn write_chunk(
    tools: &[(&Library, &Tool)],
    descriptions: &Descriptions,
    format: Format,
    layout: Layout,
    depth: usize,
) -> (Vec<u8>, Vec<Diagnostic>) {
    let (marker, output_marker) = (splice::marker(CARRIED), splice::marker(OUTPUT));
    let unchanged = takes_schema_unchanged(format);
    let mut diagnostics = Vec::new();
    let (mut text, mut schema_text) = (Vec::new(), Vec::new());
    for &(library, tool) in tools {
        let shown = Shown::of(library, tool, descriptions);
        // A schema whose entry could nest too deep is built as a value, where `lower`
        // measures it (a schema lowered or spliced in as text is a leaf there).
        let shallow = tool.parameters.depth() + SCHEMA_NESTING <= MAX_ENTRY_DEPTH;
        let lowered = if shallow { lowered_text(format, tool) } else { None };
        let (carried, lowered) = match lowered {
            Some(Lowered::Schema(fields)) => (Ok(marker.clone()), Some(fields)),
            Some(Lowered::Nothing) => (Ok(Value::Null), None),
            Some(Lowered::Refused(problems)) => (Err(problems), None),
            None if unchanged && shallow => (Ok(marker.clone()), None),
            None => (carried(format, tool), None),
        };
        let output_shallow =
            tool.output.as_ref().is_some_and(|output| output.depth() + OUTPUT_NESTING <= MAX_ENTRY_DEPTH);
        let output_text = if output_shallow { output_text(format, tool) } else { None };
        let output = match output_text {
            Some(_) => Some(output_marker.clone()),
            None => output(format, tool),
        };
        let entry = match lower(format, &shown, carried, output) {
            Ok(entry) => entry,
            Err(problems) => {
                diagnostics.extend(problems);
                continue;
            }
        };
        text.push(b',');
        if layout == Layout::Pretty {
            text.push(b'\n');
            text.extend(std::iter::repeat_n(b' ', (depth + 1) * 2));
        }
        let mut splice = |name: &str, at: usize, out: &mut dyn Write| {
            schema_text.clear();
            match (name, &lowered, &output_text) {
                (CARRIED, Some(fields), _) => fields.write(layout, at, &mut schema_text),
                (CARRIED, None, _) => splice::schema(&carried_text(format, tool), layout, at, &mut schema_text),
                (OUTPUT, _, Some(output)) => splice::schema(output, layout, at, &mut schema_text),
                _ => return Ok(false),
            }
            out.write_all(&schema_text)?;
            Ok(true)
        };
        // Writing into memory cannot fail.
        let _ = splice::write(&entry, layout, depth + 1, &mut text, &mut splice);
    }
    (text, diagnostics)
}

/// Marker names: where a document's list of tools goes, the manifest's list of
/// libraries, the schema a tool's entry carries, and its output schema.
const ENTRIES: &str = "entries";
const LIBRARIES: &str = "libraries";
const CARRIED: &str = "carried";
const OUTPUT: &str = "output";

/// The schema a tool's entry carries in `format`: MCP's `inputSchema`
/// (`mcp_input_schema`), OpenAI's strict lowering of the parameters in strict mode
/// (or what it cannot express), Gemini's lowering (`null` when it has no property: a
/// declaration then has no parameters), the parameters schema as they are in every
/// other format.
fn carried(format: Format, tool: &Tool) -> Result<Value, Vec<String>> {
    Ok(match format {
        Format::Mcp { inline_refs } => mcp_input_schema(tool, inline_refs),
        Format::Openai { strict: true } | Format::OpenaiResponses { strict: true } => {
            openai_strict(tool.parameters.parse())?
        }
        Format::Gemini => {
            let lowered = gemini(tool.parameters.parse());
            // Gemini refuses an object schema without properties: a tool without
            // parameters simply has none.
            match lowered.get("properties").and_then(Value::as_object) {
                Some(properties) if !properties.is_empty() => lowered,
                _ => Value::Null,
            }
        }
        _ => tool.parameters.parse(),
    })
}

/// [`carried`] lowered on the parameters' text (`export::text`), when `format` lowers
/// them and the lowering on text handles them; `None` otherwise.
fn lowered_text(format: Format, tool: &Tool) -> Option<Lowered<'_>> {
    match format {
        Format::Openai { strict: true } | Format::OpenaiResponses { strict: true } => {
            strict::openai_strict_text(tool.parameters.as_str())
        }
        Format::Gemini => gemini::gemini_text(tool.parameters.as_str()),
        _ => None,
    }
}

/// [`carried`] as compact JSON text, made from the schema's text without parsing it.
fn carried_text(format: Format, tool: &Tool) -> Cow<'_, str> {
    let Format::Mcp { inline_refs } = format else {
        return Cow::Borrowed(tool.parameters.as_str());
    };
    let source = match (&tool.parameters_with_defs, inline_refs) {
        (Some(named), false) => named.as_str(),
        _ => tool.parameters.as_str(),
    };
    if tool.policy.mcp_headers.is_some() {
        return Cow::Owned(mcp_input_schema(tool, inline_refs).to_string());
    }
    // `$schema` goes first, before the schema's own keys (of which `$schema` is none).
    let dialect = format!("{{\"$schema\":\"{JSON_SCHEMA_2020_12}\"");
    match source.strip_prefix('{') {
        Some("}") => Cow::Owned(dialect + "}"),
        Some(rest) if !source.contains("\"$schema\"") => Cow::Owned(dialect + "," + rest),
        _ => Cow::Owned(mcp_input_schema(tool, inline_refs).to_string()),
    }
}

/// Whether [`entry`] carries the schema of [`carried`] exactly as it is in `format`,
/// so that [`write_entries`] can splice its text ([`carried_text`]) instead of parsing
/// it. A format whose lowering comes to change or look into the schema must answer
/// `false`; the exports tests compare both paths on every fixture.
fn takes_schema_unchanged(format: Format) -> bool {
    match format {
        Format::Openai { strict } | Format::OpenaiResponses { strict } => !strict,
        Format::Anthropic | Format::Mcp { .. } | Format::Manifest => true,
        Format::Gemini => false,
    }
}

/// The document of `format` around its list of tool entries (and, for the manifest,
/// of libraries).
fn document(registry: &Registry, format: Format, libraries: Value, entries: Value) -> Value {
    match format {
        Format::Gemini => json!({ "functionDeclarations": entries }),
        Format::Mcp { .. } => {
            let mut document = json!({ "tools": entries });
            add_members(&mut document, registry);
            document
        }
        Format::Manifest => manifest(registry, libraries, entries),
        _ => entries,
    }
}

/// One tool in `format` (with `description`, `carried` as the schema it carries, see
/// [`carried`], and `output` as the output schema, see [`output`]), or the errors that
/// leave it out: a name the provider refuses, a schema nested too deep, what strict
/// mode cannot express.
fn lower<'a>(
    format: Format,
    shown: &'a Shown,
    carried: Result<Value, Vec<String>>,
    output: Option<Value>,
) -> Result<Entry<'a>, Vec<Diagnostic>> {
    let (library, tool) = (shown.library, shown.tool);
    let error = |message: String| Diagnostic::new(&library.path, tool.line, 1, Level::Error, message);
    // A server's tool is named with its server: the config file alone does not say which.
    let named = || match &library.origin {
        Origin::Mcp { server } => format!("tool `{}` of the MCP server `{server}`", tool.name),
        _ => format!("tool `{}`", tool.name),
    };
    if let Err(rule) = check_name(format, &tool.name) {
        return Err(vec![error(format!("{} cannot be exported to {format}: its name {rule}", named()))]);
    }
    match carried.map(|carried| entry(format, shown, carried, output)) {
        // A schema spliced in as text is a leaf here: it is one whose entry stays below
        // this (see `write_chunk`), as it was made or lowered on its text, which does
        // not nest it deeper than that (`export::text`).
        Ok(entry) if entry.depth() > MAX_ENTRY_DEPTH => Err(vec![error(format!(
            "{} cannot be exported to {format}: its schema would be nested more than {MAX_ENTRY_DEPTH} levels deep",
            named()
        ))]),
        Ok(entry) => Ok(entry),
        Err(problems) => Err(problems
            .into_iter()
            .map(|problem| error(format!("{} cannot be exported to {format} --strict: {problem}", named())))
            .collect()),
    }
}

/// A tool's entry in some format: a value, or one of the entries with more members
/// than a schema (the manifest's, MCP's), stated once as types that `write_chunk`
/// serializes as they are and [`export`] makes values of.
#[derive(Serialize)]
#[serde(untagged)]
enum Entry<'a> {
    Value(Value),
    Manifest(ManifestEntry<'a>),
    Mcp(McpEntry<'a>),
}

impl Entry<'_> {
    /// The entry as a value.
    fn into_value(self) -> Value {
        match self {
            Entry::Value(value) => value,
            // Strings, numbers and schemas: nothing `serde_json` cannot hold.
            typed => serde_json::to_value(&typed).unwrap_or(Value::Null),
        }
    }

    /// Its levels of nesting, as [`schema::json_depth`] counts them, when that can
    /// come near [`MAX_ENTRY_DEPTH`]: the members of the manifest's and MCP's entries
    /// other than schemas (policy, annotations, capabilities) are four levels at most,
    /// so their depth is the deepest schema's plus one.
    fn depth(&self) -> usize {
        let schemas: [Option<&Value>; 2] = match self {
            Entry::Value(value) => return schema::json_depth(value),
            Entry::Manifest(entry) => [Some(&entry.parameters), entry.output_schema.as_ref()],
            Entry::Mcp(entry) => [Some(&entry.input_schema), entry.output_schema.as_ref()],
        };
        1 + schemas.into_iter().flatten().map(schema::json_depth).max().unwrap_or(0)
    }
}

/// A tool in the manifest.
#[derive(Serialize)]
struct ManifestEntry<'a> {
    name: &'a str,
    description: &'a str,
    parameters: Value,
    library: &'a str,
    source: Cow<'a, str>,
    path: Cow<'a, str>,
    line: u32,
    is_async: bool,
    docstring: &'a Option<String>,
    returns: &'a Returns,
    prompt_provider: &'a Option<String>,
    output_schema: Option<Value>,
    policy: policy::Manifested<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    capabilities: Option<&'a Found>,
}

/// A tool as MCP's `tools/list` lists it.
#[derive(Serialize)]
struct McpEntry<'a> {
    name: &'a str,
    description: &'a str,
    #[serde(rename = "inputSchema")]
    input_schema: Value,
    #[serde(rename = "outputSchema", skip_serializing_if = "Option::is_none")]
    output_schema: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    annotations: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    execution: Option<Execution>,
    #[serde(rename = "_meta", skip_serializing_if = "McpMeta::is_empty")]
    meta: McpMeta<'a>,
}

/// MCP's `execution` of a tool that can run as a task.
#[derive(Serialize)]
struct Execution {
    #[serde(rename = "taskSupport")]
    task_support: &'static str,
}

/// What lcp says of a tool in MCP's `_meta`.
#[derive(Serialize)]
struct McpMeta<'a> {
    /// The declarations the kernel enforces when lcp runs it (SPEC §18).
    #[serde(rename = "lcp/enforced", skip_serializing_if = "<[_]>::is_empty")]
    enforced: &'a [&'static str],
    /// The declarations `[sandbox] infer` gave it (SPEC §20).
    #[serde(rename = "lcp/inferred", skip_serializing_if = "<[_]>::is_empty")]
    inferred: &'a [&'static str],
    /// What its code can do (SPEC §20): `{"can": [capability, ...], "unknown": [dotted call, ...]}`.
    #[serde(rename = "lcp/capabilities", skip_serializing_if = "Option::is_none")]
    capabilities: Option<&'a Found>,
}

impl McpMeta<'_> {
    fn is_empty(&self) -> bool {
        self.enforced.is_empty() && self.inferred.is_empty() && self.capabilities.is_none()
    }
}

fn entry<'a>(format: Format, shown: &'a Shown, carried: Value, output: Option<Value>) -> Entry<'a> {
    let (library, tool, description) = (shown.library, shown.tool, shown.description);
    let parameters = &carried;
    let name = &tool.name;
    let inferred = shown.found.map_or(&[][..], |found| &found.inferred[..]);
    // A lowered schema is moved into its place (`null` in `json!`, which would copy it).
    Entry::Value(match format {
        Format::Openai { strict: true } => {
            let mut entry = json!({
                "type": "function",
                "function": { "name": name, "description": description, "parameters": null, "strict": true }
            });
            entry["function"]["parameters"] = carried;
            entry
        }
        Format::Openai { strict: false } => json!({
            "type": "function",
            "function": { "name": name, "description": description, "parameters": parameters }
        }),
        Format::OpenaiResponses { strict } => {
            let mut entry = json!({ "type": "function", "name": name, "description": description, "parameters": null, "strict": strict });
            entry["parameters"] = carried;
            entry
        }
        Format::Anthropic => json!({ "name": name, "description": description, "input_schema": parameters }),
        Format::Gemini => {
            let mut declaration = json!({ "name": name, "description": description });
            if !carried.is_null() {
                declaration["parameters"] = carried;
            }
            declaration
        }
        Format::Mcp { .. } => {
            return Entry::Mcp(McpEntry {
                name,
                description,
                input_schema: carried,
                output_schema: output,
                annotations: tool.policy.annotations(),
                execution: tool.policy.task.map(|task| Execution { task_support: task.as_str() }),
                meta: McpMeta { enforced: &shown.enforced, inferred, capabilities: shown.found },
            });
        }
        Format::Manifest => {
            return Entry::Manifest(ManifestEntry {
                name,
                description,
                parameters: carried,
                library: &library.stem,
                source: library.origin.source(),
                path: path_json::encode(&library.path),
                line: tool.line,
                is_async: tool.is_async,
                docstring: &tool.docstring,
                returns: &tool.returns,
                prompt_provider: &tool.prompt_provider,
                output_schema: output,
                policy: policy::manifest(&tool.policy, &shown.enforced, inferred),
                capabilities: shown.found,
            });
        }
    })
}

/// The output schema a tool's entry carries in `format`: the manifest's as it is,
/// MCP's `outputSchema` ([`mcp_output_schema`]); none in other formats.
fn output(format: Format, tool: &Tool) -> Option<Value> {
    let schema = tool.output.as_ref()?;
    match format {
        Format::Manifest => Some(schema.parse()),
        Format::Mcp { .. } => Some(mcp_output_schema(schema.parse())),
        _ => None,
    }
}

/// [`output`] as compact JSON text, made from the output schema's text without
/// building it; `None` when there is none, or when MCP's would need to move its
/// `$defs` out of the schema it wraps.
fn output_text(format: Format, tool: &Tool) -> Option<Cow<'_, str>> {
    let text = tool.output.as_ref()?.as_str();
    match format {
        Format::Manifest => Some(Cow::Borrowed(text)),
        Format::Mcp { .. } => {
            /// The members of a schema that say whether and how MCP wraps it.
            #[derive(serde::Deserialize)]
            struct Top<'t> {
                #[serde(rename = "type", borrow)]
                kind: Option<&'t RawValue>,
                #[serde(rename = "$defs", borrow)]
                defs: Option<&'t RawValue>,
            }
            let top: Top = serde_json::from_str(text).ok()?;
            match (top.kind.map(RawValue::get), top.defs) {
                (Some("\"object\""), _) => Some(Cow::Borrowed(text)),
                (_, Some(_)) => None,
                _ => Some(Cow::Owned(format!(
                    r#"{{"type":"object","properties":{{"result":{text}}},"required":["result"]}}"#
                ))),
            }
        }
        _ => None,
    }
}

/// The JSON Schema dialect MCP's `inputSchema` names (SEP-1613).
pub const JSON_SCHEMA_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// MCP's `inputSchema` of a tool: its dialect (`$schema`), then each named class in
/// `$defs` with a `$ref` where it is used, as pydantic makes it; `inline`: every
/// class inlined instead, for clients that cannot resolve `$ref`.
pub(crate) fn mcp_input_schema(tool: &Tool, inline: bool) -> Value {
    let parameters = match (&tool.parameters_with_defs, inline) {
        (Some(named), false) => named.parse(),
        _ => tool.parameters.parse(),
    };
    let mut schema = Map::new();
    schema.insert("$schema".to_string(), Value::String(JSON_SCHEMA_2020_12.to_string()));
    if let Value::Object(fields) = parameters {
        schema.extend(fields);
    }
    // The arguments that travel in a header too (SPEC §16), each marked on its property.
    for (parameter, header) in tool.policy.mcp_headers.iter().flatten() {
        if let Some(Value::Object(property)) =
            schema.get_mut("properties").and_then(|properties| properties.get_mut(parameter))
        {
            property.insert("x-mcp-header".to_string(), Value::String(header.clone()));
        }
    }
    Value::Object(schema)
}

/// Every tool of an `mcp` document with its classes inlined (`mcp_input_schema`),
/// for clients that cannot resolve `$ref`; `registry` holds the tools under the
/// names the document lists.
pub fn inline_mcp_classes(document: &mut Value, registry: &Registry) {
    for entry in document["tools"].as_array_mut().into_iter().flatten() {
        if let Some((_, tool)) = entry["name"].as_str().and_then(|name| registry.tool(name)) {
            entry["inputSchema"] = mcp_input_schema(tool, true);
        }
    }
}

/// MCP's `outputSchema` of a tool's output schema: an object type as it is; any other
/// wrapped as `{"result": <schema>}` ([`mcp_output_wraps`]), the shape its
/// `structuredContent` then takes. `$defs` stay at the root, where `$ref`s find them.
/// [`output_text`] makes the same on a schema's text.
pub(crate) fn mcp_output_schema(schema: Value) -> Value {
    if !mcp_output_wraps(&schema) {
        return schema;
    }
    let mut inner = schema;
    let defs = inner.as_object_mut().and_then(|object| object.remove("$defs"));
    let mut wrapped = json!({
        "type": "object",
        "properties": { "result": inner },
        "required": ["result"],
    });
    if let Some(defs) = defs {
        wrapped["$defs"] = defs;
    }
    wrapped
}

/// Whether [`mcp_output_schema`] wraps `schema`: whether it is not an object type.
pub(crate) fn mcp_output_wraps(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) != Some("object")
}

fn manifest(registry: &Registry, libraries: Value, tools: Value) -> Value {
    let mut document = json!({ "libraries": libraries, "tools": tools });
    add_members(&mut document, registry);
    document["diagnostics"] = json!(registry.diagnostics());
    document
}

/// The registry's prompts, resources and resource templates as MCP lists them (SPEC
/// §15), each list added to `document` when it is not empty.
fn add_members(document: &mut Value, registry: &Registry) {
    let prompts: Vec<Value> = registry.prompts().map(|(_, prompt)| mcp_prompt(prompt)).collect();
    let (templates, resources): (Vec<&Resource>, Vec<&Resource>) =
        registry.resources().map(|(_, resource)| resource).partition(|resource| resource.is_template());
    let lists = [
        ("prompts", prompts),
        ("resources", resources.into_iter().map(mcp_resource).collect()),
        ("resourceTemplates", templates.into_iter().map(mcp_resource).collect()),
    ];
    for (key, list) in lists {
        if !list.is_empty() {
            document[key] = Value::Array(list);
        }
    }
}

/// One prompt as `prompts/list` lists it: its name, description and arguments (each
/// parameter, with its description and whether it is required).
pub(crate) fn mcp_prompt(prompt: &Tool) -> Value {
    let schema = prompt.parameters.value();
    let required = crate::discovery::extract::required_names(prompt);
    let arguments: Vec<Value> = schema["properties"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, property)| {
            let mut argument = json!({ "name": name, "required": required.contains(name) });
            if let Some(description) = property.get("description").and_then(Value::as_str) {
                argument["description"] = json!(description);
            }
            argument
        })
        .collect();
    json!({ "name": prompt.name, "description": prompt.description, "arguments": arguments })
}

/// One resource as `resources/list` lists it (`uri`), or one resource template as
/// `resources/templates/list` does (`uriTemplate`).
pub(crate) fn mcp_resource(resource: &Resource) -> Value {
    let key = if resource.is_template() { "uriTemplate" } else { "uri" };
    let mut entry = json!({ key: resource.uri, "name": resource.shown_name(), "description": resource.description() });
    if let Some(title) = &resource.title {
        entry["title"] = json!(title);
    }
    if let Some(mime_type) = &resource.mime_type {
        entry["mimeType"] = json!(mime_type);
    }
    entry
}

/// One library of the manifest.
#[derive(Serialize)]
struct LibraryEntry<'a> {
    path: Cow<'a, str>,
    source: Cow<'a, str>,
    stem: &'a str,
    name: &'a Option<String>,
    description: &'a Option<String>,
    icon: &'a Option<String>,
    hooks: &'a Hooks,
    dynamic_prompt: bool,
    prompt_provider: &'a Option<String>,
    tools: Names<'a, Tool>,
    #[serde(skip_serializing_if = "Names::is_empty")]
    prompts: Names<'a, Tool>,
    #[serde(skip_serializing_if = "Names::is_empty")]
    resources: Names<'a, Resource>,
}

fn manifest_library(library: &Library) -> LibraryEntry<'_> {
    LibraryEntry {
        path: path_json::encode(&library.path),
        source: library.origin.source(),
        stem: &library.stem,
        name: &library.name,
        description: &library.description,
        icon: &library.icon,
        hooks: &library.hooks,
        dynamic_prompt: library.prompt_provider.is_some(),
        prompt_provider: &library.prompt_provider,
        tools: Names(&library.tools),
        prompts: Names(&library.prompts),
        resources: Names(&library.resources),
    }
}

/// The names of tools, prompts or resources, serialized as a list of them.
struct Names<'a, T>(&'a [T]);

impl<T> Names<'_, T> {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for Names<'_, Tool> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|tool| &tool.name))
    }
}

impl Serialize for Names<'_, Resource> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|resource| &resource.function.name))
    }
}

/// The manifest's libraries at `depth`, one at a time.
fn write_libraries(registry: &Registry, layout: Layout, depth: usize, out: &mut dyn Write) -> io::Result<()> {
    out.write_all(b"[")?;
    let mut text = Vec::new();
    for (i, library) in registry.libraries().iter().enumerate() {
        text.clear();
        if i > 0 {
            text.push(b',');
        }
        if layout == Layout::Pretty {
            text.push(b'\n');
            text.extend(std::iter::repeat_n(b' ', (depth + 1) * 2));
        }
        splice::write(&manifest_library(library), layout, depth + 1, &mut text, &mut |_, _, _| Ok(false))?;
        out.write_all(&text)?;
    }
    if !registry.libraries().is_empty() && layout == Layout::Pretty {
        out.write_all(b"\n")?;
        out.write_all(&vec![b' '; depth * 2])?;
    }
    out.write_all(b"]")
}

/// Each provider's rule for tool names; `Err` says which rule a name breaks. The one
/// copy of the rules: a profile's aliases are checked against every format's.
pub(crate) fn check_name(format: Format, name: &str) -> Result<(), String> {
    let (max, extra, first_letter): (usize, &str, bool) = match format {
        Format::Openai { .. } | Format::OpenaiResponses { .. } => (64, "_-", false),
        Format::Anthropic => (128, "_-", false),
        Format::Gemini => (64, "_.:-", true),
        Format::Mcp { .. } => (128, "_.-", false),
        Format::Manifest => return Ok(()),
    };
    let allowed = |c: char| c.is_ascii_alphanumeric() || extra.contains(c);
    if name.is_empty() || name.chars().count() > max {
        return Err(format!("must be 1 to {max} characters long"));
    }
    if let Some(c) = name.chars().find(|&c| !allowed(c)) {
        return Err(format!("has `{c}`; only ASCII letters, digits and `{extra}` are allowed"));
    }
    if first_letter && !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        return Err("must start with a letter or `_`".to_string());
    }
    Ok(())
}

/// The keywords of an object schema, none if it is not one.
fn into_object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(object) => object,
        _ => Map::new(),
    }
}

/// The schemas of a list of them, none if it is not a list.
fn into_array(value: Value) -> Vec<Value> {
    match value {
        Value::Array(values) => values,
        _ => Vec::new(),
    }
}

/// A fixed-length tuple for a target without positions: the item types as one union,
/// and a note saying their order.
fn positions_as_union(items: Vec<Value>) -> (Value, String) {
    let order: Vec<String> = items.iter().map(type_label).collect();
    let mut unique: Vec<Value> = Vec::new();
    for item in items {
        if !unique.contains(&item) {
            unique.push(item);
        }
    }
    let union = if unique.len() == 1 { unique.remove(0) } else { json!({ "anyOf": unique }) };
    (union, format!("Items in order: {}.", order.join(", ")))
}

/// The schema's own description followed by what the target could not say otherwise.
fn describe_with_notes(out: &mut Map<String, Value>, description: Option<Value>, notes: Vec<String>) {
    let text = match description {
        // Without notes, the description is moved as it is.
        Some(Value::String(text)) if notes.is_empty() => text,
        Some(Value::String(text)) => std::iter::once(text).chain(notes).collect::<Vec<_>>().join(" "),
        _ => notes.join(" "),
    };
    if !text.is_empty() {
        out.insert("description".into(), Value::String(text));
    }
}

fn type_label(schema: &Value) -> String {
    match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        _ => "value".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A parameters schema `depth` levels deep, as `schema::json_depth` counts.
    fn nested(depth: usize) -> Value {
        let mut schema = json!({ "type": "integer" });
        for _ in 0..depth - 4 {
            schema = json!({ "type": "array", "items": schema });
        }
        json!({ "type": "object", "properties": { "a": schema }, "required": ["a"] })
    }

    /// A library file `name` of `count` tools, `tool_0` on: `(a: int) -> int`.
    fn tools_file(name: &str, count: usize) -> Library {
        let file = crate::discovery::scan::SourceFile { path: name.into(), package: None };
        let source =
            (0..count).map(|i| format!("def tool_{i}(a: int) -> int:\n    \"\"\"Tool {i}.\"\"\"\n    return a\n\n"));
        let (library, _) = crate::discovery::extract::extract(&file, source.collect::<String>().into_bytes(), &[]);
        library.expect("the file has tools")
    }

    /// [`export`]'s document and problems of `registry` in `format`, once [`write`] is
    /// seen to write that document byte for byte, in both layouts, with the same problems.
    fn written_as_document(registry: &Registry, format: Format) -> (Value, Vec<Diagnostic>) {
        let descriptions = Descriptions::default();
        let (document, problems) = export(registry, &descriptions, format);
        for (layout, expected) in [
            (Layout::Pretty, serde_json::to_string_pretty(&document).unwrap()),
            (Layout::Compact, serde_json::to_string(&document).unwrap()),
        ] {
            let mut written = Vec::new();
            let streamed = write(registry, &descriptions, format, layout, &mut written).unwrap();
            assert!(String::from_utf8(written).unwrap() == expected, "{format}, {layout:?}: the text differs");
            assert_eq!(streamed, problems, "{format}, {layout:?}");
        }
        (document, problems)
    }

    #[test]
    fn a_schema_nested_past_what_an_entry_may_hold_is_written_as_the_document_says_in_every_format() {
        let mut library = tools_file("deep.py", 4);
        // As an MCP server may give them: as deep as an entry may hold, and deeper.
        let depths = [MAX_ENTRY_DEPTH - SCHEMA_NESTING, MAX_ENTRY_DEPTH - 1, MAX_ENTRY_DEPTH + 5, 5];
        for (tool, depth) in library.tools.iter_mut().zip(depths) {
            tool.parameters = schema::SchemaText::new(&nested(depth));
            assert_eq!(tool.parameters.depth(), depth);
        }
        let registry = Registry::from_libraries(vec![std::sync::Arc::new(library)], Vec::new());
        for format in Format::ALL.into_iter().chain([Format::Openai { strict: true }]) {
            let (_, problems) = written_as_document(&registry, format);
            let too_deep = problems.iter().filter(|problem| problem.message.contains("levels deep")).count();
            assert!(too_deep >= 1, "{format}: {problems:?}");
        }
    }

    /// A list schema `depth` levels deep, as `schema::json_depth` counts.
    fn nested_list(depth: usize) -> Value {
        let mut schema = json!({ "type": "integer" });
        for _ in 0..depth - 2 {
            schema = json!({ "type": "array", "items": schema });
        }
        schema
    }

    #[test]
    fn output_schemas_are_written_as_the_document_says_however_deep_and_whatever_their_shape() {
        let outputs = [
            nested(MAX_ENTRY_DEPTH - OUTPUT_NESTING),
            nested(MAX_ENTRY_DEPTH + 1),
            nested_list(MAX_ENTRY_DEPTH - OUTPUT_NESTING),
            nested_list(MAX_ENTRY_DEPTH - 1),
            nested_list(MAX_ENTRY_DEPTH + 5),
            json!({ "type": "array", "items": { "$ref": "#/$defs/A" }, "$defs": { "A": { "type": "integer" } } }),
            json!({ "type": "object", "properties": { "a": { "$ref": "#/$defs/A" } }, "$defs": { "A": { "type": "integer" } } }),
            json!(true),
            json!({}),
        ];
        let mut library = tools_file("out.py", outputs.len());
        for (tool, output) in library.tools.iter_mut().zip(&outputs) {
            tool.output = Some(schema::SchemaText::new(output));
        }
        let registry = Registry::from_libraries(vec![std::sync::Arc::new(library)], Vec::new());
        for format in [Format::Manifest, Format::Mcp { inline_refs: false }, Format::Mcp { inline_refs: true }] {
            let (document, problems) = written_as_document(&registry, format);
            // The two deepest in every format, and in MCP the one its wrapping takes past the limit.
            let too_deep = problems.iter().filter(|problem| problem.message.contains("levels deep")).count();
            let expected = if format == Format::Manifest { 2 } else { 3 };
            assert_eq!(too_deep, expected, "{format}: {problems:?}");
            let listed = document["tools"].as_array().unwrap();
            assert_eq!(listed.len(), outputs.len() - expected, "{format}");
            if let Format::Mcp { .. } = format {
                // The list with `$defs` is wrapped, its `$defs` moved to the root where `$ref` finds them.
                let wrapped = listed.iter().find(|tool| tool["name"] == "tool_5").unwrap();
                assert_eq!(wrapped["outputSchema"]["$defs"], json!({ "A": { "type": "integer" } }));
                assert_eq!(wrapped["outputSchema"]["properties"]["result"]["items"], json!({ "$ref": "#/$defs/A" }));
            }
        }
    }

    #[test]
    fn a_profile_name_is_a_name_every_format_takes() {
        let names = ["read", "_r", "read-file", "a1", "", "1a", "read file", "read.file", "a:b", "é", "-x"];
        let long = ["a".repeat(64), "a".repeat(65), "b".repeat(128)];
        for name in names.iter().copied().chain(long.iter().map(String::as_str)) {
            let everywhere = Format::ALL.iter().all(|&format| check_name(format, name).is_ok());
            assert_eq!(crate::host::config::profiles::is_valid_name(name), everywhere, "{name:?}");
        }
    }
}
