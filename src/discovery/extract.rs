//! One file's contribution: tools, prompt providers, metadata and hooks (SPEC §2–§3),
//! prompts, resources and completion functions (SPEC §15, `members`).
//!
//! Owns parsing with `ruff_python_parser`, the module-scope walk (what is reachable as
//! a module attribute), the symbol table the schema needs, and the tool records. The
//! files of one library folder are extracted together (`extract_folder`), so that a
//! type imported relatively from a sibling (`from .models import Item`) resolves in
//! the sibling's own tree: each file is parsed once. It never runs Python. A file that
//! cannot be read safely contributes nothing and says why; problems inside a readable
//! file are warnings next to what it contributes.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ruff_python_ast::{self as ast, Expr, PySourceType, Stmt};
use ruff_text_size::{Ranged, TextRange};
use serde::Serialize;

use crate::diag::{Diagnostic, Level};
use crate::discovery::docstring;
use crate::discovery::scan::SourceFile;
pub use crate::discovery::schema::SchemaText;
use serde_json::{Value, json};

use crate::discovery::schema::Map;
use crate::discovery::schema::{self, Converter, Scope, Siblings};
use crate::discovery::source::{self, Prepared, SourceError};
use crate::policy::{self, Declared};

mod members;
#[cfg(feature = "python")]
pub(crate) use members::COMPLETE_PREFIX;
pub use members::Resource;
#[cfg(feature = "python")]
pub(crate) use members::{listed_values, parameter_names};
pub(crate) use members::{percent_decode, required_names};

/// Parameters the host passes itself; they never appear in a schema.
pub const DEFAULT_INJECTED: &[&str] =
    &["discussion_instance", "lollms_client_instance", "tool_context", "user_interaction_handler"];

/// [`DEFAULT_INJECTED`] as the owned list both [`crate::discovery::registry::Options`] and
/// [`crate::runtime::RuntimeConfig`] start from.
pub(crate) fn default_injected() -> Vec<String> {
    DEFAULT_INJECTED.iter().map(|name| name.to_string()).collect()
}

/// The description of a tool whose docstring gives none.
pub const NO_DESCRIPTION: &str = "No description provided.";

/// One tool file: its metadata, hooks and tools (SPEC §2).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Library {
    /// The file.
    #[serde(serialize_with = "crate::path_json::serialize")]
    pub path: PathBuf,
    /// The library folder `X/` this file belongs to, if any.
    #[serde(skip)]
    pub package: Option<PathBuf>,
    /// The file stem: the library's identifier.
    pub stem: String,
    /// `TOOL_LIBRARY_NAME`, if set.
    pub name: Option<String>,
    /// `TOOL_LIBRARY_DESC`, if set.
    pub description: Option<String>,
    /// What the library says it is, in a paragraph: the summary of `TOOL_LIBRARY_DESC`,
    /// else of the module docstring, read as a tool's docstring is, when not blank. Not in the
    /// manifest, which gives `description` alone.
    #[serde(skip)]
    pub summary: Option<String>,
    /// `TOOL_LIBRARY_ICON`, if set.
    pub icon: Option<String>,
    /// The host hooks the file defines.
    pub hooks: Hooks,
    /// Name of the library-level prompt provider `tool_<stem>_prompt`, if defined.
    pub prompt_provider: Option<String>,
    /// Its tools, in source order.
    pub tools: Vec<Tool>,
    /// Its prompts (`prompt_*`, SPEC §15), in source order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub prompts: Vec<Tool>,
    /// Its resources and resource templates (`resource_*`, SPEC §15), in source order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<Resource>,
    /// Its completion functions (`complete_<prompt or resource>`, SPEC §15).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub completers: Vec<String>,
    /// Where its tools come from and how a call reaches them (SPEC §14).
    #[serde(skip)]
    pub origin: Origin,
}

/// The source a library's tools come from (SPEC §14).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Origin {
    /// A Python tool file of the sources (SPEC §1): a call imports the file.
    #[default]
    File,
    /// A `[[tools]]` entry of the config file (the library's `path`): a call imports
    /// `module` and calls its `function`.
    Config {
        /// The module, as `importlib.import_module` takes it.
        module: String,
        /// The function of the module.
        function: String,
        /// Where the module is looked for before the venv and the standard library:
        /// the config file's folder, then its `[python] path`, absolute.
        path: Vec<PathBuf>,
        /// The declared arguments, in their order.
        parameters: Vec<String>,
    },
    /// A tool of an MCP server of the config (`[mcp_servers.NAME]` or a host
    /// config's): a call is forwarded to it.
    Mcp {
        /// The server's name; a tool's name there is its name here without the
        /// server's `prefix`.
        server: String,
    },
    /// A `[[virtual_tools]]` entry: the embedding host's resolver supplies it, or it is
    /// hidden.
    Virtual,
}

impl Origin {
    /// How the manifest and `lcp list` name it: `file`, `config`, `mcp:<server>`, `virtual`.
    pub fn source(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Origin::File => "file".into(),
            Origin::Config { .. } => "config".into(),
            Origin::Mcp { server } => format!("mcp:{server}").into(),
            Origin::Virtual => "virtual".into(),
        }
    }
}

/// The host hooks a library defines (SPEC §5).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Hooks {
    /// `init_tools_library`: called once, with the library's configuration.
    pub init_tools_library: bool,
    /// `set_confirm_handler`: given the host's confirmation callback.
    pub set_confirm_handler: bool,
}

/// One `tool_*` function, as read from the source.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Tool {
    /// The function's name, which is the tool's.
    pub name: String,
    /// The docstring's summary, or [`NO_DESCRIPTION`].
    pub description: String,
    /// JSON Schema of the arguments object, every named class inlined (SPEC §3).
    pub parameters: SchemaText,
    /// The same schema with each named class in `$defs` under its own name and a
    /// `$ref` where it is used (`schema::named::hoist`), for `tools/list`; `None`
    /// when the parameters use no named class.
    #[serde(skip)]
    pub parameters_with_defs: Option<SchemaText>,
    /// The line of the `def`.
    pub line: u32,
    /// Whether it is an `async def`.
    pub is_async: bool,
    /// The cleaned docstring, if any.
    pub docstring: Option<String>,
    /// What it returns, as written.
    pub returns: Returns,
    /// Name of `tool_<name>_prompt` when the file defines it.
    pub prompt_provider: Option<String>,
    /// JSON Schema of the return value, from the return annotation (SPEC §12); `None`
    /// when there is no annotation or it says nothing (`Any`, `dict`).
    pub output: Option<SchemaText>,
    /// What the library declares about the tool (`TOOL_POLICY`, `TOOL_POLICIES`).
    pub policy: Declared,
    /// Whether its body calls `….become_task(…)`: a task tool that does runs as an
    /// ordinary call until that call (SPEC §16).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub becomes_task: bool,
}

/// A tool's return annotation and documented return value.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Returns {
    /// The return annotation's source text.
    pub annotation: Option<String>,
    /// The docstring's `Returns:` section.
    pub description: Option<String>,
}

/// Reads one file on its own: its library, if the file could be read, and its
/// diagnostics. A relative import finds no sibling here; see `extract_folder`.
pub fn extract(file: &SourceFile, bytes: Vec<u8>, injected: &[String]) -> (Option<Library>, Vec<Diagnostic>) {
    match parse(file, bytes) {
        Ok(parsed) => {
            let (library, diagnostics) = extract_folder(&[(file, &parsed)], injected).remove(0);
            (Some(library), diagnostics)
        }
        Err(diagnostic) => (None, vec![diagnostic]),
    }
}

/// A file's text and syntax tree: parsed once, kept while the files of its library
/// folder are extracted.
pub(crate) struct ParsedFile {
    text: String,
    module: ast::ModModule,
    relative_imports: bool,
}

impl ParsedFile {
    /// Whether the module imports from its own package (`from . import x`,
    /// `from .x import y`): only then do its types depend on its siblings.
    pub fn imports_relatively(&self) -> bool {
        self.relative_imports
    }

    /// Its text, as parsed.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Its syntax tree.
    pub fn module(&self) -> &ast::ModModule {
        &self.module
    }
}

/// Parses one file, or says why it cannot be read safely.
pub(crate) fn parse(file: &SourceFile, bytes: Vec<u8>) -> Result<ParsedFile, Diagnostic> {
    let path = file.path.as_path();
    let refused = |err: SourceError| {
        let (line, col) = err.position();
        Diagnostic::new(path, line, col, Level::Error, err.to_string())
    };
    let Prepared { text, check_tokens } = source::prepare(bytes).map_err(refused)?;
    // The parser grows its own stack; the tree is walked or freed only once its depth
    // is known to be bounded.
    let parsed = ruff_python_parser::parse_unchecked_source(&text, PySourceType::Python);
    if check_tokens && let Err(err) = source::check_token_nesting(&text, parsed.tokens()) {
        drop_deep(parsed);
        return Err(refused(err));
    }
    if let Some(err) = parsed.errors().first() {
        let (line, col) = Lines::new(&text).position(err.location);
        let message = format!("syntax error: {}", err.error);
        return Err(Diagnostic::new(path, line, col, Level::Error, message));
    }
    let module = parsed.into_syntax();
    let relative_imports = imports_relatively(&module.body);
    Ok(ParsedFile { text, module, relative_imports })
}

/// Extracts the files of one library folder (or one loose file), each with its
/// diagnostics, in the order given. A type a file imports relatively is looked up in
/// the others' definitions, by file stem.
pub(crate) fn extract_folder(
    files: &[(&SourceFile, &ParsedFile)],
    injected: &[String],
) -> Vec<(Library, Vec<Diagnostic>)> {
    let mut readers: Vec<Reader> = Vec::with_capacity(files.len());
    let mut modules: Vec<Module> = Vec::with_capacity(files.len());
    for &(file, parsed) in files {
        let mut reader =
            Reader { path: &file.path, text: &parsed.text, lines: Lines::new(&parsed.text), diagnostics: Vec::new() };
        let mut module = Module { docstring: module_docstring(&parsed.module.body), ..Module::default() };
        reader.walk_module(&parsed.module.body, &mut module);
        readers.push(reader);
        modules.push(module);
    }
    // Only a module that imports relatively looks at the others.
    let relative = files.iter().any(|(_, parsed)| parsed.relative_imports);
    let stems: Vec<String> = if relative { files.iter().map(|(file, _)| stem(file)).collect() } else { Vec::new() };
    let siblings: Vec<(&str, &Scope)> =
        stems.iter().map(String::as_str).zip(modules.iter().map(|m| &m.scope)).collect();
    let mut out = Vec::with_capacity(files.len());
    for ((&(file, _), mut reader), module) in files.iter().zip(readers).zip(&modules) {
        let library = reader.library(file, module, &siblings, injected);
        out.push((library, reader.diagnostics));
    }
    out
}

/// The docstring of a module whose statements are `body`.
fn module_docstring(body: &[Stmt]) -> Option<&str> {
    match body.first()? {
        Stmt::Expr(expr) => match &*expr.value {
            Expr::StringLiteral(text) => Some(text.value.to_str()),
            _ => None,
        },
        _ => None,
    }
}

fn stem(file: &SourceFile) -> String {
    file.path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Whether a module-scope statement imports from the module's own package.
fn imports_relatively(suite: &[Stmt]) -> bool {
    suite.iter().any(|stmt| match stmt {
        Stmt::ImportFrom(import) => import.level > 0,
        _ => {
            let mut found = false;
            for_each_block(stmt, |block| found = found || imports_relatively(block));
            found
        }
    })
}

struct Reader<'t> {
    path: &'t Path,
    text: &'t str,
    lines: Lines<'t>,
    diagnostics: Vec<Diagnostic>,
}

/// What the module scope defines, gathered in one walk.
#[derive(Default)]
struct Module<'a> {
    /// The module's docstring: its first statement, when that is a string.
    docstring: Option<&'a str>,
    functions: Vec<&'a ast::StmtFunctionDef>,
    scope: Scope<'a>,
    metadata: Vec<&'a Stmt>,
    /// The values of `TOOL_POLICY`, `TOOL_POLICIES` and `TOOL_RESOURCES` (the first
    /// assignment of each).
    policy: Option<&'a Expr>,
    policies: Option<&'a Expr>,
    resources: Option<&'a Expr>,
}

impl<'a> Module<'a> {
    /// Where the value of `TOOL_POLICY` / `TOOL_POLICIES` / `TOOL_RESOURCES` goes.
    fn declaration_slot(&mut self, name: &str) -> Option<&mut Option<&'a Expr>> {
        match name {
            "TOOL_POLICY" => Some(&mut self.policy),
            "TOOL_POLICIES" => Some(&mut self.policies),
            "TOOL_RESOURCES" => Some(&mut self.resources),
            _ => None,
        }
    }
}

impl<'t> Reader<'t> {
    fn library<'a>(
        &mut self,
        file: &SourceFile,
        module: &Module<'a>,
        siblings: &Siblings<'_, 'a>,
        injected: &[String],
    ) -> Library {
        let stem = stem(file);
        let tools = module.functions.iter().filter(|f| f.name.starts_with("tool_")).count();
        let mut library = Library {
            path: file.path.clone(),
            package: file.package.clone(),
            stem: stem.clone(),
            name: None,
            description: None,
            summary: None,
            icon: None,
            hooks: Hooks::default(),
            prompt_provider: None,
            tools: Vec::with_capacity(tools),
            prompts: Vec::new(),
            resources: Vec::new(),
            completers: Vec::new(),
            origin: Origin::File,
        };
        for stmt in &module.metadata {
            self.metadata(stmt, &mut library);
        }
        library.summary = [library.description.as_deref(), module.docstring]
            .into_iter()
            .flatten()
            .map(|text| docstring::parse(text).summary)
            .find(|summary| !summary.is_empty());

        let mut providers = Vec::new();
        for function in &module.functions {
            let name = function.name.as_str();
            if let Some(duplicate) = duplicate_parameter(&function.parameters) {
                let is_tool = name.starts_with("tool_") && provider_base(name).is_none();
                let consequence = if is_tool { ": the tool is not exported" } else { "" };
                let message = format!(
                    "`{name}` has the parameter `{}` twice, a SyntaxError in Python (the file cannot be imported){consequence}",
                    duplicate.as_str()
                );
                self.report(duplicate.range, Level::Error, message);
                if is_tool {
                    continue;
                }
            }
            match name {
                "init_tools_library" => library.hooks.init_tools_library = true,
                "set_confirm_handler" => library.hooks.set_confirm_handler = true,
                _ if provider_base(name).is_some() => providers.push(*function),
                _ if name.starts_with("tool_") => {
                    if self.defined_again(function, library.tools.iter()) {
                        continue;
                    }
                    let tool = self.tool(function, &module.scope, siblings, injected);
                    library.tools.push(tool);
                }
                _ if name.starts_with(members::PROMPT_PREFIX) && name.len() > members::PROMPT_PREFIX.len() => {
                    if self.defined_again(function, library.prompts.iter()) {
                        continue;
                    }
                    let prompt = self.tool(function, &module.scope, siblings, injected);
                    library.prompts.push(prompt);
                }
                _ if name.starts_with(members::RESOURCE_PREFIX) && name.len() > members::RESOURCE_PREFIX.len() => {
                    if self.defined_again(function, library.resources.iter().map(|r| &r.function)) {
                        continue;
                    }
                    let function = self.tool(function, &module.scope, siblings, injected);
                    let uri = members::default_uri(&stem, &function);
                    library.resources.push(Resource {
                        function,
                        uri,
                        name: None,
                        title: None,
                        mime_type: None,
                        description: None,
                    });
                }
                _ if name.starts_with(members::COMPLETE_PREFIX) && !library.completers.iter().any(|c| c == name) => {
                    library.completers.push(name.to_string());
                }
                _ => {}
            }
        }
        for provider in providers {
            let name = provider.name.as_str();
            let base = provider_base(name).unwrap_or_default();
            let target = format!("tool_{base}");
            let mut matched = false;
            if let Some(tool) = library.tools.iter_mut().find(|t| t.name == target) {
                tool.prompt_provider = Some(name.to_string());
                matched = true;
            }
            if base == stem {
                library.prompt_provider = Some(name.to_string());
                matched = true;
            }
            if !matched {
                let message = format!(
                    "prompt provider `{name}` matches no tool `{target}` of this file and not the library name `{stem}`: ignored"
                );
                self.warning(provider.name.range, message);
            }
        }
        self.resources(module, &mut library.resources);
        self.policies(module, &mut library);
        for completer in &library.completers {
            let target = &completer[members::COMPLETE_PREFIX.len()..];
            let known = library.prompts.iter().any(|p| p.name == target)
                || library.resources.iter().any(|r| r.function.name == target);
            if !known && let Some(function) = module.functions.iter().find(|f| f.name.as_str() == completer) {
                let message = format!(
                    "completion function `{completer}` matches no prompt or resource `{target}` of this file: ignored"
                );
                self.warning(function.name.range, message);
            }
        }
        library
    }

    /// Whether `function` repeats the name of one of `earlier` (a warning says the
    /// first definition is kept).
    fn defined_again<'l>(
        &mut self,
        function: &ast::StmtFunctionDef,
        mut earlier: impl Iterator<Item = &'l Tool>,
    ) -> bool {
        let name = function.name.as_str();
        let Some(first) = earlier.find(|t| t.name == name) else { return false };
        let message = format!("`{name}` is defined again; the first definition (line {}) is kept", first.line);
        self.warning(function.name.range, message);
        true
    }

    /// Lays `TOOL_RESOURCES` over the resources (SPEC §15); a resource whose URI
    /// cannot serve it is left out with an error.
    fn resources(&mut self, module: &Module, resources: &mut Vec<Resource>) {
        if let Some(declarations) = module.resources {
            let converter = Converter::new(&module.scope);
            match converter.literal(declarations) {
                Some(serde_json::Value::Object(entries)) => {
                    for (name, value) in &entries {
                        let Some(resource) = resources.iter_mut().find(|r| &r.function.name == name) else {
                            let message =
                                format!("`TOOL_RESOURCES` names `{name}`, which is not a resource of this file");
                            self.warning(declarations.range(), message);
                            continue;
                        };
                        let (declared, problems) = members::read_declaration(name, value);
                        for problem in problems {
                            self.warning(declarations.range(), problem);
                        }
                        resource.uri = declared.uri.unwrap_or(std::mem::take(&mut resource.uri));
                        resource.name = declared.name;
                        resource.title = declared.title;
                        resource.mime_type = declared.mime_type;
                        resource.description = declared.description;
                    }
                }
                _ => self.warning(
                    declarations.range(),
                    "`TOOL_RESOURCES` is not a literal dict of resource names to dicts: ignored".to_string(),
                ),
            }
        }
        let mut problems = Vec::new();
        resources.retain(|resource| match members::uri_problem(&resource.function, &resource.uri) {
            Some(problem) => {
                problems.push((resource.function.line, format!("{problem}: the resource is not served")));
                false
            }
            None => true,
        });
        for (line, message) in problems {
            self.diagnostics.push(Diagnostic::new(self.path, line, 1, Level::Error, message));
        }
    }

    /// Lays `TOOL_POLICY` and `TOOL_POLICIES` over the tools, prompts and resources
    /// (SPEC §12, §15).
    fn policies(&mut self, module: &Module, library: &mut Library) {
        if module.policy.is_none() && module.policies.is_none() {
            return;
        }
        let converter = Converter::new(&module.scope);
        let base = self.path.parent().unwrap_or(Path::new(""));
        let read = policy::read_library(module.policy, module.policies, |e| converter.literal(e), base);
        for (range, message) in read.warnings {
            self.warning(range, message);
        }
        for (range, message) in read.errors {
            let (line, col) = self.lines.position(range);
            self.diagnostics.push(Diagnostic::new(self.path, line, col, Level::Error, message));
        }
        let mut functions: Vec<&mut Tool> = library
            .tools
            .iter_mut()
            .chain(library.prompts.iter_mut())
            .chain(library.resources.iter_mut().map(|resource| &mut resource.function))
            .collect();
        for tool in functions.iter_mut() {
            tool.policy = read.defaults.clone();
        }
        for (name, range, declared) in read.tools {
            match functions.iter_mut().find(|tool| tool.name == name) {
                Some(tool) => tool.policy = declared.over(&read.defaults),
                None => {
                    self.warning(range, format!("`TOOL_POLICIES` names `{name}`, which is not a tool of this file"))
                }
            }
        }
    }

    /// Statements whose definitions are module attributes: the top level and the
    /// bodies of top-level compound statements.
    fn walk_module<'a>(&mut self, suite: &'a [Stmt], module: &mut Module<'a>) {
        for stmt in suite {
            match stmt {
                Stmt::FunctionDef(function) => {
                    module.functions.push(function);
                    self.warn_nested_tools(&function.body, function.name.as_str(), "function");
                }
                Stmt::ClassDef(class) => {
                    module.scope.classes.insert(class.name.as_str(), class);
                    self.warn_nested_tools(&class.body, class.name.as_str(), "class");
                }
                Stmt::Import(import) => bind_import(&mut module.scope, import),
                Stmt::ImportFrom(import) => bind_import_from(&mut module.scope, import),
                Stmt::Assign(assign) => {
                    if let [Expr::Name(target)] = assign.targets.as_slice() {
                        if target.id.starts_with("TOOL_LIBRARY_") {
                            module.metadata.push(stmt);
                        } else if let Some(slot) = module.declaration_slot(&target.id) {
                            slot.get_or_insert(&assign.value);
                        } else if looks_like_type(&assign.value) {
                            module.scope.aliases.entry(target.id.as_str()).or_insert(alias_value(&assign.value));
                        }
                    }
                }
                Stmt::AnnAssign(assign) => {
                    if let (Expr::Name(target), Some(value)) = (&*assign.target, &assign.value) {
                        if target.id.starts_with("TOOL_LIBRARY_") {
                            module.metadata.push(stmt);
                        } else if let Some(slot) = module.declaration_slot(&target.id) {
                            slot.get_or_insert(value);
                        } else if is_type_alias_annotation(&assign.annotation) {
                            module.scope.aliases.entry(target.id.as_str()).or_insert(value);
                        }
                    }
                }
                Stmt::TypeAlias(alias) => {
                    if let Expr::Name(target) = &*alias.name {
                        module.scope.aliases.entry(target.id.as_str()).or_insert(&alias.value);
                    }
                }
                _ => for_each_block(stmt, |body| self.walk_module(body, module)),
            }
        }
    }

    /// `tool_*` functions inside a function or class body are not module attributes.
    fn warn_nested_tools(&mut self, body: &[Stmt], owner: &str, kind: &str) {
        let mut found = Vec::new();
        nested_tools(body, &mut found);
        for (range, name) in found {
            let message =
                format!("`{name}` is defined inside {kind} `{owner}` and is not exported; define it at module level");
            self.warning(range, message);
        }
    }

    fn metadata(&mut self, stmt: &Stmt, library: &mut Library) {
        let (target, value) = match stmt {
            Stmt::Assign(a) => (&a.targets[0], Some(&*a.value)),
            Stmt::AnnAssign(a) => (&*a.target, a.value.as_deref()),
            _ => return,
        };
        let Expr::Name(target) = target else { return };
        let slot = match target.id.as_str() {
            "TOOL_LIBRARY_NAME" => &mut library.name,
            "TOOL_LIBRARY_DESC" => &mut library.description,
            "TOOL_LIBRARY_ICON" => &mut library.icon,
            _ => return,
        };
        match value {
            Some(Expr::StringLiteral(s)) => {
                slot.get_or_insert_with(|| s.value.to_str().to_string());
            }
            Some(other) => {
                let message = format!("`{}` is not a string literal: ignored", target.id);
                self.warning(other.range(), message);
            }
            None => {}
        }
    }

    fn tool<'a>(
        &mut self,
        function: &ast::StmtFunctionDef,
        scope: &Scope<'a>,
        siblings: &Siblings<'_, 'a>,
        injected: &[String],
    ) -> Tool {
        let name = function.name.as_str().to_string();
        let (raw_doc, doc_range) = match schema::docstring_of(&function.body) {
            Some(s) => (Some(s.value.to_str()), s.range),
            None => (None, function.name.range),
        };
        let mut doc = raw_doc.map(docstring::parse);
        let parameters = self.parameters(function, doc.as_mut(), scope, siblings, injected);
        if let (Some(doc), Some(raw)) = (&doc, raw_doc) {
            self.warn_unknown_documented(function, doc, raw, doc_range, &parameters.keywords);
        }

        let output = function.returns.as_deref().and_then(|annotation| self.output(annotation, scope, siblings, &name));
        let (line, _) = self.lines.position(function.name.range);
        let (text, summary, returns) = match doc {
            Some(d) => (Some(d.text), Some(d.summary), d.returns),
            None => (None, None, None),
        };
        Tool {
            name,
            description: summary.filter(|s| !s.is_empty()).unwrap_or_else(|| NO_DESCRIPTION.to_string()),
            parameters: SchemaText::with_other_names(&parameters.schema, parameters.other_names),
            parameters_with_defs: parameters.with_defs,
            line,
            is_async: function.is_async,
            docstring: text,
            returns: Returns {
                annotation: function.returns.as_deref().map(|r| self.text[r.range()].to_string()),
                description: returns,
            },
            prompt_provider: None,
            output,
            policy: Declared::default(),
            becomes_task: calls_method(&function.body, BECOME_TASK),
        }
    }

    /// Warns of each name the docstring documents that is neither a parameter nor an
    /// unpacked keyword, at the docstring's line for it.
    fn warn_unknown_documented(
        &mut self,
        function: &ast::StmtFunctionDef,
        doc: &docstring::Docstring,
        raw: &str,
        doc_range: TextRange,
        keywords: &[String],
    ) {
        let mut all_params: Vec<&str> = function.parameters.iter().map(|p| p.name().as_str()).collect();
        all_params.extend(keywords.iter().map(String::as_str));
        let (doc_line, _) = self.lines.position(doc_range);
        let skipped = leading_blank_lines(raw);
        for documented in &doc.params {
            if !all_params.contains(&documented.name.as_str()) {
                let line = doc_line + skipped + documented.line as u32;
                let message = format!(
                    "in `{}`: the docstring documents `{}`, which is not a parameter",
                    function.name.as_str(),
                    documented.name
                );
                self.diagnostics.push(Diagnostic::new(self.path, line, 1, Level::Warning, message));
            }
        }
    }

    /// The parameters' JSON Schema: every parameter but the injected ones, documented
    /// from the docstring (else `Annotated`; the descriptions are taken out of `doc`),
    /// with its default; `$defs` shared.
    fn parameters<'a>(
        &mut self,
        function: &ast::StmtFunctionDef,
        mut doc: Option<&mut docstring::Docstring>,
        scope: &Scope<'a>,
        siblings: &Siblings<'_, 'a>,
        injected: &[String],
    ) -> Parameters {
        let name = function.name.as_str();
        let mut converter = Converter::with_siblings(scope, siblings);
        let parameters = function.parameters.as_ref();

        let mut properties = Map::new();
        let mut required = Vec::new();
        let mut other_names = Vec::new();
        for param in parameters.iter_non_variadic_params() {
            let param_name = param.parameter.name.as_str();
            if injected.iter().any(|i| i == param_name) {
                continue;
            }
            let default = param.default.as_deref();
            let annotation = param.parameter.annotation.as_deref();
            let (mut schema, mut explicit_description) = match annotation {
                Some(annotation) => converter.annotation(annotation),
                None => (converter.inferred_from_default(default), None),
            };
            // `x: T = Field(...)` (FastMCP's idiom), `Annotated[T, Field(default=...)]`,
            // `= ...` (required), or a plain default.
            let field = converter.field_spec(annotation, default, &mut schema, &mut explicit_description);
            if field.optional && field.default == Some(Value::Null) {
                schema = schema::nullable(schema);
            }
            let documented = doc
                .as_deref_mut()
                .and_then(|d| d.params.iter_mut().find(|p| p.name == param_name))
                .map(|p| std::mem::take(&mut p.description))
                .filter(|d| !d.is_empty());
            // As pydantic and FastMCP: what the annotation or `Field` says wins.
            if let Some(text) = explicit_description.or(documented) {
                schema::set_description(&mut schema, text);
            }
            let property = field.alias.unwrap_or_else(|| param_name.to_string());
            other_names.extend(field.other_names.into_iter().map(|name| (name, property.clone())));
            if !field.optional {
                required.push(Value::from(property.as_str()));
            }
            if let Some(value) = field.default
                && let Some(object) = schema.as_object_mut()
            {
                object.insert("default".into(), value);
            }
            properties.insert(property, schema);
        }

        // PEP 692: `**kwargs: Unpack[TD]` takes exactly TD's fields as keywords.
        let mut keywords: Vec<String> = Vec::new();
        let unpacked =
            parameters.kwarg.as_ref().and_then(|k| k.annotation.as_deref()).and_then(|a| converter.unpacked(a));
        if let Some((fields, field_required, _)) = &unpacked {
            for (field, mut schema) in fields.clone() {
                if properties.contains_key(&field) {
                    let kwarg = parameters.kwarg.as_deref().map_or(function.name.range, |k| k.name.range);
                    self.warning(
                        kwarg,
                        format!("in `{name}`: `{field}` of the unpacked keywords is already a parameter"),
                    );
                    continue;
                }
                let documented = doc.as_deref_mut().and_then(|d| d.params.iter_mut().find(|p| p.name == field));
                if let Some(text) = documented.map(|p| std::mem::take(&mut p.description)).filter(|d| !d.is_empty()) {
                    schema::set_description(&mut schema, text);
                }
                if field_required.contains(&field) {
                    required.push(Value::from(field.as_str()));
                }
                keywords.push(field.to_string());
                properties.insert(field, schema);
            }
        }

        let mut schema = Map::new();
        schema.insert("type".into(), json!("object"));
        schema.insert("properties".into(), Value::Object(properties));
        schema.insert("required".into(), Value::Array(required));
        if parameters.kwarg.is_none() || unpacked.is_some() {
            schema.insert("additionalProperties".into(), Value::Bool(false));
        }
        if let Some((_, _, extra)) = unpacked {
            schema.extend(extra);
        }
        if !converter.defs.is_empty() {
            schema.insert("$defs".into(), Value::Object(std::mem::take(&mut converter.defs)));
        }
        let schema = Value::Object(schema);
        let classes = converter.named_classes();
        let parameters_with_defs =
            (!classes.is_empty()).then(|| SchemaText::new(&schema::named::hoist(&schema, &classes)));
        for (range, message) in std::mem::take(&mut converter.warnings) {
            self.warning(range, format!("in `{name}`: {message}"));
        }
        Parameters { schema, with_defs: parameters_with_defs, keywords, other_names }
    }

    /// The output schema of a return annotation (SPEC §12): the parameter type rules
    /// (names resolved as for parameters, sibling modules included), and `None` for a
    /// type that says nothing about the value (`Any`, `dict`).
    fn output<'a>(
        &mut self,
        annotation: &Expr,
        scope: &Scope<'a>,
        siblings: &Siblings<'_, 'a>,
        name: &str,
    ) -> Option<SchemaText> {
        let mut converter = Converter::with_siblings(scope, siblings).for_output();
        let (mut schema, _) = converter.annotation(annotation);
        for (range, message) in std::mem::take(&mut converter.warnings) {
            self.warning(range, format!("in the return annotation of `{name}`: {message}"));
        }
        if says_nothing(&schema) {
            return None;
        }
        if !converter.defs.is_empty()
            && let Some(object) = schema.as_object_mut()
        {
            object.insert("$defs".into(), Value::Object(std::mem::take(&mut converter.defs)));
        }
        Some(SchemaText::new(&schema))
    }

    fn warning(&mut self, range: TextRange, message: String) {
        self.report(range, Level::Warning, message);
    }

    fn report(&mut self, range: TextRange, level: Level, message: String) {
        let (line, col) = self.lines.position(range);
        self.diagnostics.push(Diagnostic::new(self.path, line, col, level, message));
    }
}

/// The second use of a parameter name in one signature, if any. Names are compared as
/// the parser gives them, already NFKC-normalised as Python does (`ﬁ` is `fi`).
/// A tool's parameters, as [`Reader::parameters`] reads them.
struct Parameters {
    /// The JSON Schema of the arguments object, named classes inlined.
    schema: Value,
    /// The same with named classes in `$defs` ([`Tool::parameters_with_defs`]).
    with_defs: Option<SchemaText>,
    /// The keywords of an unpacked `**kwargs: Unpack[TD]`.
    keywords: Vec<String>,
    /// The other names of parameters (`AliasChoices`): `(name, property)`.
    other_names: Vec<(String, String)>,
}

/// `import a.b as c` binds `c` to `a.b`; `import a.b` binds `a`. The first binding
/// of a name wins.
fn bind_import<'a>(scope: &mut Scope<'a>, import: &'a ast::StmtImport) {
    for alias in &import.names {
        let full = alias.name.as_str();
        match &alias.asname {
            Some(asname) => scope.imports.entry(asname.as_str()).or_insert_with(|| full.to_string()),
            None => {
                let top = full.split('.').next().unwrap_or(full);
                scope.imports.entry(top).or_insert_with(|| top.to_string())
            }
        };
    }
}

/// `from m import x as y` binds `y` to `m.x`. Relative imports keep their dots:
/// `from . import m` → `.m`, `from .m import x` → `.m.x`; `*` is remembered as a
/// module to look in.
fn bind_import_from<'a>(scope: &mut Scope<'a>, import: &'a ast::StmtImportFrom) {
    let dots = ".".repeat(import.level as usize);
    let from = import.module.as_ref().map(|m| m.as_str()).unwrap_or_default();
    if import.level == 0 && matches!(from, "typing" | "typing_extensions") {
        scope.typing_star |= import.names.iter().any(|alias| alias.name.as_str() == "*");
    }
    let prefix = if from.is_empty() { dots } else { format!("{dots}{from}.") };
    for alias in &import.names {
        let name = alias.name.as_str();
        if name == "*" {
            scope.star_imports.push(prefix.trim_end_matches('.').to_string());
            continue;
        }
        let local = alias.asname.as_ref().unwrap_or(&alias.name).as_str();
        scope.imports.entry(local).or_insert_with(|| format!("{prefix}{name}"));
    }
}

fn duplicate_parameter(parameters: &ast::Parameters) -> Option<&ast::Identifier> {
    // Signatures are short: the names before, kept on the stack, are compared one by
    // one, which costs less than hashing; a long signature falls back to a set.
    let mut before: [&str; 16] = [""; 16];
    let mut seen = std::collections::HashSet::new();
    for (index, name) in parameters.iter().map(|parameter| parameter.name()).enumerate() {
        let name_str = name.as_str();
        let repeated = match before.get_mut(index) {
            Some(slot) => {
                *slot = name_str;
                before[..index].contains(&name_str)
            }
            None => {
                if seen.is_empty() {
                    seen.extend(before);
                }
                !seen.insert(name_str)
            }
        };
        if repeated {
            return Some(name);
        }
    }
    None
}

/// `{}` (any value), or an object with any keys and values (`dict`, `dict[str, Any]`).
fn says_nothing(schema: &Value) -> bool {
    let Some(object) = schema.as_object() else { return false };
    object.iter().all(|(key, value)| match key.as_ref() {
        "type" => value == "object",
        "additionalProperties" => value == &Value::Bool(true) || value == &json!({}),
        "description" => true,
        _ => false,
    })
}

/// `tool_<base>_prompt` → `base` (non-empty).
fn provider_base(name: &str) -> Option<&str> {
    name.strip_prefix("tool_")?.strip_suffix("_prompt").filter(|base| !base.is_empty())
}

/// Values that can stand for a type in an alias assignment.
fn looks_like_type(value: &Expr) -> bool {
    match value {
        Expr::Subscript(_) | Expr::Name(_) | Expr::Attribute(_) | Expr::NoneLiteral(_) => true,
        Expr::BinOp(b) => b.op == ast::Operator::BitOr,
        Expr::Call(call) => {
            let callee = match &*call.func {
                Expr::Name(n) => n.id.as_str(),
                Expr::Attribute(a) => a.attr.as_str(),
                _ => return false,
            };
            // pydantic's constrained types: `Port = conint(ge=1, le=65535)`.
            (callee == "NewType" && call.arguments.args.len() == 2)
                || matches!(
                    callee,
                    "conint"
                        | "confloat"
                        | "constr"
                        | "conbytes"
                        | "conlist"
                        | "conset"
                        | "confrozenset"
                        | "condecimal"
                        | "condate"
                )
        }
        _ => false,
    }
}

/// `NewType("UserId", int)` stands for `int`.
fn alias_value(value: &Expr) -> &Expr {
    match value {
        Expr::Call(call)
            if call.arguments.args.len() == 2 && matches!(&*call.func, Expr::Name(n) if n.id.as_str() == "NewType") =>
        {
            &call.arguments.args[1]
        }
        other => other,
    }
}

fn is_type_alias_annotation(annotation: &Expr) -> bool {
    match annotation {
        Expr::Name(n) => n.id.as_str() == "TypeAlias",
        Expr::Attribute(a) => a.attr.as_str() == "TypeAlias",
        _ => false,
    }
}

/// Lines `inspect.cleandoc` drops from the start of a raw docstring.
fn leading_blank_lines(raw: &str) -> u32 {
    raw.lines().take_while(|line| line.trim().is_empty()).count() as u32
}

/// Collects the `tool_*` definitions at any depth inside `body`, in source order.
/// Only statements can define a function, so expressions are never visited.
fn nested_tools(body: &[Stmt], found: &mut Vec<(TextRange, String)>) {
    for stmt in body {
        match stmt {
            Stmt::FunctionDef(function) => {
                if function.name.starts_with("tool_") && provider_base(function.name.as_str()).is_none() {
                    found.push((function.name.range, function.name.to_string()));
                }
                nested_tools(&function.body, found);
            }
            Stmt::ClassDef(class) => nested_tools(&class.body, found),
            _ => for_each_block(stmt, |block| nested_tools(block, found)),
        }
    }
}

/// Each block of statements a compound statement other than `def` and `class` holds
/// (`if`, `try`, `with`, `for`, `while`, `match`), in source order: what runs in the
/// scope around it.
fn for_each_block<'a>(stmt: &'a Stmt, mut visit: impl FnMut(&'a [Stmt])) {
    match stmt {
        Stmt::If(s) => {
            visit(&s.body);
            s.elif_else_clauses.iter().for_each(|clause| visit(&clause.body));
        }
        Stmt::Try(s) => {
            visit(&s.body);
            for handler in &s.handlers {
                let ast::ExceptHandler::ExceptHandler(handler) = handler;
                visit(&handler.body);
            }
            visit(&s.orelse);
            visit(&s.finalbody);
        }
        Stmt::With(s) => visit(&s.body),
        Stmt::For(s) => {
            visit(&s.body);
            visit(&s.orelse);
        }
        Stmt::While(s) => {
            visit(&s.body);
            visit(&s.orelse);
        }
        Stmt::Match(s) => s.cases.iter().for_each(|case| visit(&case.body)),
        _ => {}
    }
}

/// 1-based line and column (in characters) of offsets into one text. Lines are
/// counted on from the last position asked, as positions are mostly asked in source
/// order; an earlier one counts from the start again.
struct Lines<'t> {
    text: &'t str,
    /// The start of a line and its number.
    cursor: std::cell::Cell<(usize, u32)>,
}

impl<'t> Lines<'t> {
    fn new(text: &'t str) -> Self {
        Lines { text, cursor: std::cell::Cell::new((0, 1)) }
    }

    fn position(&self, range: TextRange) -> (u32, u32) {
        let offset = usize::from(range.start()).min(self.text.len());
        let (mut start, mut line) = self.cursor.get();
        if offset < start {
            (start, line) = (0, 1);
        }
        let between = &self.text.as_bytes()[start..offset];
        if let Some(last) = memchr::memrchr(b'\n', between) {
            let newlines = memchr::memchr_iter(b'\n', between).count();
            line = line.saturating_add(u32::try_from(newlines).unwrap_or(u32::MAX));
            start += last + 1;
        }
        self.cursor.set((start, line));
        let column = self.text.get(start..offset).map_or(0, |before| before.chars().count());
        (line, u32::try_from(column + 1).unwrap_or(u32::MAX))
    }
}

/// Frees a syntax tree too deep for the current stack on a thread whose stack is
/// sized for it (freeing recurses once per level).
fn drop_deep<T: Send + 'static>(tree: T) {
    let slot = Arc::new(Mutex::new(Some(tree)));
    let shared = Arc::clone(&slot);
    let spawned = std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(move || drop(shared.lock().ok().and_then(|mut s| s.take())));
    match spawned {
        Ok(handle) => {
            let _ = handle.join();
        }
        // Without a thread to free it safely, keep the memory rather than crash.
        Err(_) => std::mem::forget(slot),
    }
}

/// The host object method after which a task tool's call is a task.
const BECOME_TASK: &str = "become_task";

/// Whether `body` calls a method named `method` (on anything, at any depth).
fn calls_method(body: &[Stmt], method: &str) -> bool {
    use ruff_python_ast::visitor::{Visitor, walk_expr};
    struct Finder<'m> {
        method: &'m str,
        found: bool,
    }
    impl<'a> Visitor<'a> for Finder<'_> {
        fn visit_expr(&mut self, expr: &'a Expr) {
            if let Expr::Call(call) = expr
                && let Expr::Attribute(attribute) = call.func.as_ref()
                && attribute.attr.as_str() == self.method
            {
                self.found = true;
            }
            if !self.found {
                walk_expr(self, expr);
            }
        }
    }
    let mut finder = Finder { method, found: false };
    finder.visit_body(body);
    finder.found
}
