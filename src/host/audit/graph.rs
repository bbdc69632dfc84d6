//! A library folder's own code as a call graph: a node per module-level function,
//! class, method and module-level variable, and one per module for what its import
//! runs; each with what its code does directly (through [`tables`]) and the nodes it
//! can reach. Nothing is run: the files are read with the parser discovery uses, or
//! taken from the trees discovery parsed (`analyse_given`, through `read`).
//!
//! The rules, chosen so a capability written in the library's code is never missed:
//! - a function's nested functions, lambdas and classes are part of it;
//! - inside a function, a reference to a function, class or variable of the library
//!   is an edge whether or not it is called there (callbacks, `functools.partial`,
//!   decorators, dispatch tables held in variables);
//! - a class reaches all its methods and its bases (an instance may call any);
//! - a module's import reaches what its top level calls and the imports of the
//!   sibling modules it imports; every tool reaches its module's import;
//! - a name of another package is looked up by its dotted name (`import subprocess as
//!   sp` makes `sp.run` `subprocess.run`); one without a table is `unknown`;
//! - a method called on a value of unknown type counts only when its name says what
//!   it does whatever the type (`tables::method`).

use crate::discovery::registry::{FastMap as HashMap, FastSet as HashSet};
use std::path::{Path, PathBuf};

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, ExprContext, PySourceType, Stmt};
use ruff_text_size::{Ranged, TextSize};

use super::Capability;
use super::tables::{self, Entry};
use crate::located::LineStarts;

/// Something a node's own code does.
#[derive(Debug, Clone)]
pub(crate) struct Effect {
    pub capability: Capability,
    pub line: u32,
    pub via: String,
    /// A deletion (or truncation): what `destructive: false` rules out.
    pub deletes: bool,
    /// The `if PARAM:` branches it is in: (parameter, the value it runs with).
    pub guards: Vec<(String, bool)>,
}

/// An argument a call passes as a literal `True` or `False`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Literal {
    Position(usize),
    Keyword(String),
}

/// A call of a node made inside `if PARAM:` branches or with literal booleans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Guarded {
    pub to: usize,
    pub guards: Vec<(String, bool)>,
    pub literals: Vec<(Literal, bool)>,
}

/// A function, class, method, variable or module import of the library.
#[derive(Debug, Default)]
pub(crate) struct Node {
    pub module: usize,
    /// `helper`, `Client.fetch`, `HANDLERS`, or `<module>` for the import.
    pub name: String,
    pub effects: Vec<Effect>,
    /// Dotted names of calls lcp has no table for, with their lines.
    pub unknown: Vec<(String, u32)>,
    pub edges: Vec<usize>,
    /// Calls inside guarded branches or with literal booleans.
    pub guarded: Vec<Guarded>,
    /// A function's parameters, in order (what a positional literal binds), kept only
    /// when a call passes one.
    pub parameters: Vec<String>,
}

/// Whether code under `guards` runs in a call binding `context`.
pub(crate) fn runs(guards: &[(String, bool)], context: &[(String, bool)]) -> bool {
    guards.iter().all(|(name, value)| context.iter().all(|(bound, given)| bound != name || given == value))
}

/// One module of the folder.
#[derive(Debug)]
pub(crate) struct ModuleInfo {
    pub path: PathBuf,
    pub stem: String,
    /// The node of what importing it runs.
    pub init: usize,
    /// Module-level functions by name (a tool is one).
    pub functions: HashMap<String, usize>,
}

/// The folder's graph.
#[derive(Debug, Default)]
pub(crate) struct Package {
    pub modules: Vec<ModuleInfo>,
    pub nodes: Vec<Node>,
    /// Each module's index by its path.
    pub by_path: HashMap<PathBuf, usize>,
    /// Files that could not be read, with why: their code is unseen.
    pub unreadable: Vec<(PathBuf, String)>,
}

impl Package {
    /// The module of `path`, if it was read.
    pub fn module(&self, path: &Path) -> Option<usize> {
        self.by_path.get(path).copied()
    }

    /// How a chain names a node seen from a tool of module `from`.
    pub fn display(&self, node: usize, from: usize) -> String {
        let node = &self.nodes[node];
        let module = &self.modules[node.module];
        if node.name == "<module>" {
            format!("{} (module level)", module.stem)
        } else if node.module == from {
            node.name.clone()
        } else {
            format!("{}.{}", module.stem, node.name)
        }
    }
}

/// One file as the graph reads it: its text and syntax tree, parsed here or given
/// by discovery, which parsed it already.
struct Parsed<'t> {
    path: PathBuf,
    stem: String,
    text: &'t str,
    /// Where each line starts, counted when a line is first asked for.
    lines: std::cell::OnceCell<LineStarts<'t>>,
    module: &'t ast::ModModule,
}

/// A file this module parsed itself.
struct Owned {
    text: String,
    module: ast::ModModule,
}

/// Reads `files` (one library folder, or one file) as one package.
pub(crate) fn analyse(files: &[PathBuf]) -> Package {
    analyse_given(files, |_| None)
}

/// [`analyse`], taking the text and tree of each file `given` has (discovery's
/// parse) and parsing only the others.
pub(crate) fn analyse_given<'t>(
    files: &[PathBuf],
    given: impl Fn(&Path) -> Option<(&'t str, &'t ast::ModModule)>,
) -> Package {
    let mut unreadable = Vec::new();
    let given: Vec<Option<(&str, &ast::ModModule)>> = files.iter().map(|path| given(path)).collect();
    let owned: Vec<Option<Owned>> = files
        .iter()
        .zip(&given)
        .map(|(path, given)| match given {
            Some(_) => None,
            None => parse(path).map_err(|why| unreadable.push((path.clone(), why))).ok(),
        })
        .collect();
    let mut parsed = Vec::with_capacity(files.len());
    for ((path, given), own) in files.iter().zip(given).zip(&owned) {
        let (text, module) = match (given, own) {
            (Some(given), _) => given,
            (None, Some(file)) => (file.text.as_str(), &file.module),
            (None, None) => continue,
        };
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        parsed.push(Parsed { path: path.clone(), stem, text, lines: std::cell::OnceCell::new(), module });
    }
    let mut builder = Builder::new(&parsed);
    builder.collect();
    let mut package = builder.walk();
    package.by_path = package.modules.iter().enumerate().map(|(index, module)| (module.path.clone(), index)).collect();
    package.unreadable = unreadable;
    package
}

/// Why `path` cannot be read as code, if it cannot: what a package it is in lists
/// it with.
pub(crate) fn unreadable(path: &Path) -> Option<String> {
    parse(path).err()
}

fn parse(path: &Path) -> Result<Owned, String> {
    let bytes = std::fs::read(path).map_err(|err| err.to_string())?;
    let prepared = crate::discovery::source::prepare(bytes).map_err(|err| err.to_string())?;
    let text = prepared.text;
    let parsed = ruff_python_parser::parse_unchecked_source(&text, PySourceType::Python);
    if prepared.check_tokens
        && let Err(err) = crate::discovery::source::check_token_nesting(&text, parsed.tokens())
    {
        // A tree this deep is not walked, nor freed by recursion.
        std::mem::forget(parsed);
        return Err(err.to_string());
    }
    if let Some(err) = parsed.errors().first() {
        return Err(format!("syntax error: {}", err.error));
    }
    let module = parsed.into_syntax();
    Ok(Owned { text, module })
}

/// What a name is bound to at a module's top level (or by an import in a function).
#[derive(Debug, Clone)]
enum Raw {
    External(String),
    Module(usize),
    From(usize, String),
    Node(usize),
    Class(usize),
}

/// What a name resolves to.
#[derive(Debug, Clone)]
enum Target {
    External(String),
    Module(usize),
    Node(usize),
    Class(usize),
    Unresolved(String),
}

enum Body<'a> {
    Init(&'a [Stmt]),
    Function(&'a ast::StmtFunctionDef, Option<usize>),
    Class(usize, &'a ast::StmtClassDef),
    Var(&'a Expr),
}

struct Class {
    node: usize,
    methods: HashMap<String, usize>,
}

enum Star {
    Local(usize),
    External(String),
}

struct Builder<'a> {
    files: &'a [Parsed<'a>],
    bindings: Vec<HashMap<&'a str, Vec<Raw>>>,
    stars: Vec<Vec<Star>>,
    imports: Vec<Vec<usize>>,
    classes: Vec<Class>,
    bodies: Vec<(usize, String, Body<'a>)>,
    modules: Vec<ModuleInfo>,
}

impl<'a> Builder<'a> {
    fn new(files: &'a [Parsed<'a>]) -> Self {
        Builder {
            files,
            bindings: Vec::new(),
            stars: Vec::new(),
            imports: Vec::new(),
            classes: Vec::new(),
            bodies: Vec::new(),
            modules: Vec::new(),
        }
    }

    fn sibling(&self, name: &str) -> Option<usize> {
        self.files.iter().position(|f| f.stem == name)
    }

    fn node(&mut self, module: usize, name: String, body: Body<'a>) -> usize {
        self.bodies.push((module, name, body));
        self.bodies.len() - 1
    }

    fn collect(&mut self) {
        for (index, file) in self.files.iter().enumerate() {
            // A node for what importing it runs, and mostly one a statement.
            self.bodies.reserve(1 + file.module.body.len());
            let init = self.node(index, "<module>".into(), Body::Init(&file.module.body));
            self.modules.push(ModuleInfo {
                path: file.path.clone(),
                stem: file.stem.clone(),
                init,
                functions: HashMap::default(),
            });
            self.bindings.push(HashMap::default());
            self.stars.push(Vec::new());
            self.imports.push(Vec::new());
            self.top_level(index, &file.module.body);
        }
    }

    fn bind(&mut self, module: usize, name: &'a str, raw: Raw) {
        if let Raw::Module(i) | Raw::From(i, _) = raw {
            self.imports[module].push(i);
        }
        self.bindings[module].entry(name).or_default().push(raw);
    }

    fn top_level(&mut self, module: usize, body: &'a [Stmt]) {
        for stmt in body {
            match stmt {
                Stmt::FunctionDef(def) => {
                    let node = self.node(module, def.name.to_string(), Body::Function(def, None));
                    self.modules[module].functions.insert(def.name.to_string(), node);
                    self.bind(module, def.name.as_str(), Raw::Node(node));
                }
                Stmt::ClassDef(class) => {
                    let index = self.class(module, class);
                    self.bind(module, class.name.as_str(), Raw::Class(index));
                }
                Stmt::Assign(assign) => {
                    for target in &assign.targets {
                        self.bind_targets(module, target, &assign.value);
                    }
                }
                Stmt::AnnAssign(assign) => {
                    if let Some(value) = &assign.value {
                        self.bind_targets(module, &assign.target, value);
                    }
                }
                Stmt::AugAssign(assign) => self.bind_targets(module, &assign.target, &assign.value),
                Stmt::Import(_) | Stmt::ImportFrom(_) => {
                    for (name, raw) in self.import_bindings(stmt) {
                        self.bind(module, name, raw);
                    }
                    if let Stmt::ImportFrom(from) = stmt
                        && from.names.iter().any(|a| a.name.as_str() == "*")
                    {
                        let star = self.star(from);
                        self.stars[module].push(star);
                    }
                }
                Stmt::If(s) => {
                    self.top_level(module, &s.body);
                    for clause in &s.elif_else_clauses {
                        self.top_level(module, &clause.body);
                    }
                }
                Stmt::Try(s) => {
                    self.top_level(module, &s.body);
                    for handler in &s.handlers {
                        let ast::ExceptHandler::ExceptHandler(h) = handler;
                        self.top_level(module, &h.body);
                    }
                    self.top_level(module, &s.orelse);
                    self.top_level(module, &s.finalbody);
                }
                Stmt::With(s) => self.top_level(module, &s.body),
                Stmt::For(s) => {
                    self.top_level(module, &s.body);
                    self.top_level(module, &s.orelse);
                }
                Stmt::While(s) => {
                    self.top_level(module, &s.body);
                    self.top_level(module, &s.orelse);
                }
                _ => {}
            }
        }
    }

    fn bind_targets(&mut self, module: usize, target: &'a Expr, value: &'a Expr) {
        match target {
            Expr::Name(name) => {
                let node = self.node(module, name.id.to_string(), Body::Var(value));
                self.bind(module, name.id.as_str(), Raw::Node(node));
            }
            Expr::Tuple(t) => t.elts.iter().for_each(|e| self.bind_targets(module, e, value)),
            Expr::List(t) => t.elts.iter().for_each(|e| self.bind_targets(module, e, value)),
            Expr::Starred(s) => self.bind_targets(module, &s.value, value),
            _ => {}
        }
    }

    fn class(&mut self, module: usize, class: &'a ast::StmtClassDef) -> usize {
        let index = self.classes.len();
        let node = self.node(module, class.name.to_string(), Body::Class(index, class));
        self.classes.push(Class { node, methods: HashMap::default() });
        let mut defs = Vec::new();
        methods_of(&class.body, &mut defs);
        for def in defs {
            let name = format!("{}.{}", class.name, def.name);
            let method = self.node(module, name, Body::Function(def, Some(index)));
            self.classes[index].methods.entry(def.name.to_string()).or_insert(method);
        }
        index
    }

    /// The names an import statement binds.
    fn import_bindings(&self, stmt: &'a Stmt) -> Vec<(&'a str, Raw)> {
        let mut out = Vec::new();
        match stmt {
            Stmt::Import(import) => {
                for alias in &import.names {
                    let dotted = alias.name.as_str();
                    let root = dotted.split('.').next().unwrap_or(dotted);
                    let bound = alias.asname.as_ref().map_or(root, |a| a.as_str());
                    let target = if alias.asname.is_some() { dotted } else { root };
                    let raw = match self.sibling(target) {
                        Some(i) if !target.contains('.') => Raw::Module(i),
                        _ => Raw::External(target.to_string()),
                    };
                    out.push((bound, raw));
                }
            }
            Stmt::ImportFrom(from) => {
                let module = from.module.as_ref().map(|m| m.as_str());
                for alias in &from.names {
                    let name = alias.name.as_str();
                    if name == "*" {
                        continue;
                    }
                    let bound = alias.asname.as_ref().map_or(name, |a| a.as_str());
                    let raw = match (from.level, module) {
                        (1, None) => match (self.sibling(name), self.sibling("__init__")) {
                            (Some(i), _) => Raw::Module(i),
                            (None, Some(init)) => Raw::From(init, name.to_string()),
                            (None, None) => Raw::External(format!(".{name}")),
                        },
                        (level, Some(m)) if level <= 1 && !m.contains('.') && self.sibling(m).is_some() => {
                            Raw::From(self.sibling(m).unwrap_or_default(), name.to_string())
                        }
                        (0, Some(m)) => Raw::External(format!("{m}.{name}")),
                        (level, m) => {
                            let dots = ".".repeat(level as usize);
                            Raw::External(format!(
                                "{dots}{}{}{name}",
                                m.unwrap_or(""),
                                if m.is_some() { "." } else { "" }
                            ))
                        }
                    };
                    out.push((bound, raw));
                }
            }
            _ => {}
        }
        out
    }

    fn star(&self, from: &ast::StmtImportFrom) -> Star {
        let module = from.module.as_ref().map_or("", |m| m.as_str());
        match self.sibling(module) {
            Some(i) if from.level <= 1 && !module.contains('.') => Star::Local(i),
            _ => Star::External(format!("{}{module}", ".".repeat(from.level as usize))),
        }
    }

    fn raw_targets(&self, raws: &[Raw], depth: usize, out: &mut Vec<Target>) {
        for raw in raws {
            match raw {
                Raw::External(d) => out.push(Target::External(d.clone())),
                Raw::Module(i) => out.push(Target::Module(*i)),
                Raw::Node(n) => out.push(Target::Node(*n)),
                Raw::Class(c) => out.push(Target::Class(*c)),
                Raw::From(i, name) => {
                    let found = self.resolve(*i, name, depth + 1);
                    if !found.is_empty() {
                        out.extend(found);
                    } else if let Some(sub) = self.sibling(name).filter(|_| self.files[*i].stem == "__init__") {
                        out.push(Target::Module(sub));
                    } else {
                        out.push(Target::Unresolved(format!("{}.{name}", self.files[*i].stem)));
                    }
                }
            }
        }
    }

    /// What `name` is at the top level of `module`: everything it may be bound to.
    fn resolve(&self, module: usize, name: &str, depth: usize) -> Vec<Target> {
        let mut out = Vec::new();
        if depth > 12 {
            return out;
        }
        if let Some(raws) = self.bindings[module].get(name) {
            self.raw_targets(raws, depth, &mut out);
            return out;
        }
        for star in &self.stars[module] {
            match star {
                Star::Local(i) => out.extend(self.resolve(*i, name, depth + 1)),
                Star::External(m) => out.push(Target::External(format!("{m}.{name}"))),
            }
        }
        out
    }

    fn walk(self) -> Package {
        let mut nodes = Vec::with_capacity(self.bodies.len());
        for (index, (module, name, body)) in self.bodies.iter().enumerate() {
            let file = &self.files[*module];
            let mut walker = Walker {
                b: &self,
                file,
                module: *module,
                class: None,
                self_name: None,
                locals: HashSet::default(),
                local_imports: HashMap::default(),
                assigned: HashMap::default(),
                init: false,
                guardable: Vec::new(),
                guards: Vec::new(),
                node: Node { module: *module, name: name.clone(), ..Node::default() },
            };
            match body {
                Body::Init(stmts) => {
                    walker.init = true;
                    walker.init_body(stmts);
                    walker.node.edges.extend(self.imports[*module].iter().map(|&i| self.modules[i].init));
                }
                Body::Function(def, class) => {
                    walker.class = *class;
                    walker.function(def);
                }
                Body::Class(class, def) => {
                    walker.node.edges.extend(self.classes[*class].methods.values().copied());
                    if let Some(arguments) = &def.arguments {
                        walker.visit_arguments(arguments);
                    }
                    walker.decorators(&def.decorator_list);
                    walker.class_body(&def.body);
                }
                Body::Var(value) => walker.visit_expr(value),
            }
            let mut node = walker.node;
            node.edges.retain(|&e| e != index);
            node.edges.sort_unstable();
            node.edges.dedup();
            nodes.push(node);
        }
        // A function's parameters are read only to bind what a call passes as a literal
        // by position: only the functions such a call reaches keep them (a method's
        // none, as its positional arguments start after `self`).
        let bound: HashSet<usize> = nodes
            .iter()
            .flat_map(|node| &node.guarded)
            .filter(|call| call.literals.iter().any(|(literal, _)| matches!(literal, Literal::Position(_))))
            .map(|call| call.to)
            .collect();
        for index in bound {
            if let (_, _, Body::Function(def, None)) = &self.bodies[index] {
                let parameters = &def.parameters;
                let positional = parameters.posonlyargs.iter().chain(&parameters.args).chain(&parameters.kwonlyargs);
                nodes[index].parameters = positional.map(|p| p.parameter.name.to_string()).collect();
            }
        }
        Package { modules: self.modules, nodes, by_path: HashMap::default(), unreadable: Vec::new() }
    }
}

/// The functions of a class body (through `if` and `try` blocks).
fn methods_of<'a>(body: &'a [Stmt], out: &mut Vec<&'a ast::StmtFunctionDef>) {
    for stmt in body {
        match stmt {
            Stmt::FunctionDef(def) => out.push(def),
            Stmt::If(s) => {
                methods_of(&s.body, out);
                s.elif_else_clauses.iter().for_each(|c| methods_of(&c.body, out));
            }
            Stmt::Try(s) => {
                methods_of(&s.body, out);
                methods_of(&s.orelse, out);
                methods_of(&s.finalbody, out);
            }
            _ => {}
        }
    }
}

/// Names that hold a builtin capability when nothing else binds them.
const BUILTINS: &[&str] = &["open", "eval", "exec", "compile", "__import__", "globals", "locals", "vars", "breakpoint"];

struct Walker<'b, 'a> {
    b: &'b Builder<'a>,
    file: &'a Parsed<'a>,
    module: usize,
    class: Option<usize>,
    self_name: Option<&'a str>,
    locals: HashSet<&'a str>,
    local_imports: HashMap<&'a str, Vec<Raw>>,
    /// What the function assigns to each of its names.
    assigned: HashMap<&'a str, Vec<&'a Expr>>,
    /// Walking what an import runs: references are not calls there.
    init: bool,
    /// The function's own parameters never assigned in it: what `if PARAM:` tests.
    guardable: Vec<&'a str>,
    /// The `if PARAM:` branches being walked.
    guards: Vec<(&'a str, bool)>,
    node: Node,
}

/// How a name used in a function resolves.
enum Base {
    /// A local variable or parameter of the function.
    Local,
    Targets(Vec<Target>),
    Builtin(&'static str),
    Nothing,
}

impl<'a> Walker<'_, 'a> {
    /// The line of the offset `at`, for what is recorded of a node.
    fn line(&self, at: TextSize) -> u32 {
        self.file.lines.get_or_init(|| LineStarts::new(self.file.text)).line(at.to_usize())
    }

    /// A node this one reaches, under the branches being walked.
    fn edge(&mut self, to: usize, literals: Vec<(Literal, bool)>) {
        if self.guards.is_empty() && literals.is_empty() {
            self.node.edges.push(to);
        } else {
            let guards = self.guards.iter().map(|(n, v)| (n.to_string(), *v)).collect();
            self.node.guarded.push(Guarded { to, guards, literals });
        }
    }

    /// `PARAM` or `not PARAM` of a parameter `if` may test: the branch's guard.
    fn guard(&self, test: &'a Expr) -> Option<(&'a str, bool)> {
        match test {
            Expr::Name(name) if self.guardable.contains(&name.id.as_str()) => Some((name.id.as_str(), true)),
            Expr::UnaryOp(op) if op.op == ast::UnaryOp::Not => self.guard(&op.operand).map(|(n, v)| (n, !v)),
            _ => None,
        }
    }

    fn effect(&mut self, capability: Capability, at: TextSize, via: &str, deletes: bool) {
        let line = self.line(at);
        let via = via.strip_prefix("builtins.").unwrap_or(via).to_string();
        let guards = self.guards.iter().map(|(n, v)| (n.to_string(), *v)).collect();
        self.node.effects.push(Effect { capability, line, via, deletes, guards });
    }

    fn function(&mut self, def: &'a ast::StmtFunctionDef) {
        let mut scope = Scope::default();
        scope.parameters(&def.parameters);
        if self.class.is_some() {
            self.self_name = first_parameter(&def.parameters);
        }
        let own: Vec<&'a str> = def
            .parameters
            .posonlyargs
            .iter()
            .chain(&def.parameters.args)
            .chain(&def.parameters.kwonlyargs)
            .map(|p| p.parameter.name.as_str())
            .collect();
        scope.visit_body(&def.body);
        self.guardable = own.into_iter().filter(|p| !scope.stored.contains(p)).collect();
        for name in &scope.globals {
            scope.names.remove(name);
        }
        self.locals = scope.names;
        self.assigned = scope.assigned;
        for stmt in scope.imports {
            for (name, raw) in self.b.import_bindings(stmt) {
                self.local_imports.entry(name).or_default().push(raw);
            }
        }
        self.decorators(&def.decorator_list);
        self.visit_parameters(&def.parameters);
        self.visit_body(&def.body);
    }

    fn decorators(&mut self, decorators: &'a [ast::Decorator]) {
        for decorator in decorators {
            self.visit_expr(&decorator.expression);
        }
    }

    fn init_body(&mut self, body: &'a [Stmt]) {
        for stmt in body {
            match stmt {
                // A decorator's own capabilities are its function's (the function
                // reaches it): what it does at import, past naming it, is not told
                // apart from its wrapper's.
                Stmt::FunctionDef(def) => {
                    self.decorators(&def.decorator_list);
                    self.defaults(&def.parameters);
                }
                Stmt::ClassDef(class) => {
                    self.decorators(&class.decorator_list);
                    if let Some(arguments) = &class.arguments {
                        self.visit_arguments(arguments);
                    }
                    self.init_body(&class.body);
                }
                Stmt::If(s) => {
                    self.visit_expr(&s.test);
                    self.init_body(&s.body);
                    for clause in &s.elif_else_clauses {
                        if let Some(test) = &clause.test {
                            self.visit_expr(test);
                        }
                        self.init_body(&clause.body);
                    }
                }
                Stmt::Try(s) => {
                    self.init_body(&s.body);
                    for handler in &s.handlers {
                        let ast::ExceptHandler::ExceptHandler(h) = handler;
                        self.init_body(&h.body);
                    }
                    self.init_body(&s.orelse);
                    self.init_body(&s.finalbody);
                }
                Stmt::Import(_) | Stmt::ImportFrom(_) => {}
                other => self.visit_stmt(other),
            }
        }
    }

    /// A class body inside its class's node: what is not a method, and the methods'
    /// decorators and defaults.
    fn class_body(&mut self, body: &'a [Stmt]) {
        for stmt in body {
            match stmt {
                Stmt::FunctionDef(def) => {
                    self.decorators(&def.decorator_list);
                    self.defaults(&def.parameters);
                }
                other => self.visit_stmt(other),
            }
        }
    }

    fn defaults(&mut self, parameters: &'a ast::Parameters) {
        let all = parameters.posonlyargs.iter().chain(&parameters.args).chain(&parameters.kwonlyargs);
        for parameter in all {
            if let Some(default) = &parameter.default {
                self.visit_expr(default);
            }
        }
    }

    fn base(&self, name: &'a str) -> Base {
        if let Some(raws) = self.local_imports.get(name) {
            let mut out = Vec::new();
            self.b.raw_targets(raws, 0, &mut out);
            return Base::Targets(out);
        }
        if self.locals.contains(name) || self.self_name == Some(name) {
            return Base::Local;
        }
        let found = self.b.resolve(self.module, name, 0);
        if !found.is_empty() {
            return Base::Targets(found);
        }
        match BUILTINS.iter().find(|b| **b == name) {
            Some(b) => Base::Builtin(b),
            None => Base::Nothing,
        }
    }

    /// Uses of `dotted` (a name of another module): its table entry, or `unknown`.
    fn external(&mut self, dotted: &str, at: TextSize, call: Option<&'a ast::ExprCall>) {
        let entry = tables::lookup(dotted);
        // At import, a name only named (`PIPE = subprocess.PIPE`) does nothing; what
        // reads the environment (`HOME = os.environ["HOME"]`) reads it then.
        if self.init && call.is_none() && !matches!(entry, Some(Entry::Can(c)) if c.contains(&Capability::Env)) {
            return;
        }
        match entry {
            Some(Entry::Pure) => {}
            Some(Entry::Can(capabilities)) => {
                for &capability in capabilities {
                    self.effect(capability, at, dotted, false);
                }
            }
            Some(Entry::Deletes) => self.effect(Capability::FsWrite, at, dotted, true),
            Some(Entry::OpenMode) => {
                let writes = call.is_none_or(|call| self.opens_for_writing(dotted, call));
                let capability = if writes { Capability::FsWrite } else { Capability::FsRead };
                self.effect(capability, at, dotted, false);
            }
            None => {
                let shown = dotted.to_string();
                if !self.node.unknown.iter().any(|(name, _)| *name == shown) {
                    self.node.unknown.push((shown, self.line(at)));
                }
            }
        }
        if let Some(call) = call {
            self.special_call(dotted, at, call);
        }
    }

    /// The calls whose arguments say more than their name.
    fn special_call(&mut self, dotted: &str, at: TextSize, call: &'a ast::ExprCall) {
        match dotted {
            "sqlite3.connect" => {
                // Recorded as a write by the table; a literal read-only or in-memory
                // database takes that back.
                let Some(first) = call.arguments.find_argument_value("database", 0) else { return };
                let memory = matches!(first, Expr::StringLiteral(s) if s.value.to_str() == ":memory:");
                // A URI written here with `mode=ro` (`"file:" + quote(p) + "?mode=ro"`).
                let says_read_only = |expr: &Expr| self.file.text[expr.range()].contains("mode=ro");
                let read_only = call.arguments.find_keyword("uri").is_some_and(|k| !is_false(&k.value))
                    && match first {
                        Expr::Name(name) => self
                            .assigned
                            .get(name.id.as_str())
                            .is_some_and(|values| !values.is_empty() && values.iter().all(|v| says_read_only(v))),
                        other => says_read_only(other),
                    };
                if memory || read_only {
                    self.node.effects.pop();
                    if read_only {
                        self.effect(Capability::FsRead, at, dotted, false);
                    }
                }
            }
            "lcp_files.resolve"
                if call.arguments.find_keyword("create_folders").is_some_and(|k| !is_false(&k.value)) =>
            {
                self.effect(Capability::FsWrite, at, dotted, false);
            }
            "importlib.import_module" | "builtins.__import__" => {
                if let Some(Expr::StringLiteral(s)) = call.arguments.args.first() {
                    // A literal module: what that module can do, not `dynamic`.
                    self.node.effects.pop();
                    let module = s.value.to_str().to_string();
                    match self.b.sibling(&module) {
                        Some(i) => self.edge(self.b.modules[i].init, Vec::new()),
                        None => self.external(&module, at, None),
                    }
                }
            }
            _ => {}
        }
    }

    /// Whether a call that opens a file may write, from its mode or flags.
    fn opens_for_writing(&self, dotted: &str, call: &ast::ExprCall) -> bool {
        if dotted == "os.open" {
            let flags = call.arguments.find_argument_value("flags", 1);
            return flags.is_none_or(|flags| !read_flags(flags));
        }
        let mode = call.arguments.find_argument_value("mode", 1);
        match mode {
            None => false,
            Some(Expr::StringLiteral(s)) => s.value.to_str().contains(['w', 'a', 'x', '+']),
            Some(_) => true,
        }
    }

    /// `a.b.c` as its base name and attributes, when it is one.
    fn chain(expr: &'a Expr) -> Option<(&'a ast::ExprName, Vec<&'a str>)> {
        let mut attrs = Vec::new();
        let mut at = expr;
        loop {
            match at {
                Expr::Attribute(a) => {
                    attrs.push(a.attr.as_str());
                    at = &a.value;
                }
                Expr::Name(name) => {
                    attrs.reverse();
                    return Some((name, attrs));
                }
                _ => return None,
            }
        }
    }

    /// A use of `expr` (a name or attribute chain): called when `call` is given.
    /// Returns whether it was understood as a chain.
    fn used(&mut self, expr: &'a Expr, call: Option<&'a ast::ExprCall>) -> bool {
        let Some((name, attrs)) = Self::chain(expr) else { return false };
        if name.ctx != ExprContext::Load {
            return true;
        }
        let at = expr.start();
        match self.base(name.id.as_str()) {
            Base::Local => {
                if attrs.len() == 1
                    && self.self_name == Some(name.id.as_str())
                    && let Some(class) = self.class
                    && let Some(&method) = self.b.classes[class].methods.get(attrs[0])
                {
                    self.edge(method, Vec::new());
                } else if let (Some(call), Some(last)) = (call, attrs.last()) {
                    let path = attrs.len() == 1 && self.is_path(expr_name(expr), 0);
                    if !(path && self.path_method(last, at, call)) {
                        self.method(last, at, call);
                    }
                }
            }
            Base::Builtin(builtin) => {
                if attrs.is_empty() {
                    self.external(&format!("builtins.{builtin}"), at, call);
                }
            }
            Base::Nothing => {
                if name.id.as_str() == "getattr"
                    && let Some(call) = call
                {
                    self.getattr(call, at);
                }
            }
            Base::Targets(targets) => {
                for target in targets {
                    self.target(target, &attrs, at, call, 0);
                }
            }
        }
        true
    }

    fn target(
        &mut self,
        target: Target,
        attrs: &[&'a str],
        at: TextSize,
        call: Option<&'a ast::ExprCall>,
        depth: usize,
    ) {
        match target {
            Target::External(d) => {
                let dotted = std::iter::once(d.as_str()).chain(attrs.iter().copied()).collect::<Vec<_>>().join(".");
                self.external(&dotted, at, call);
            }
            Target::Unresolved(d) => {
                let dotted = std::iter::once(d.as_str()).chain(attrs.iter().copied()).collect::<Vec<_>>().join(".");
                self.external(&dotted, at, None);
            }
            Target::Node(n) => {
                if !self.init || call.is_some() {
                    let literals = match call {
                        Some(call) if attrs.is_empty() => literals(call),
                        _ => Vec::new(),
                    };
                    self.edge(n, literals);
                }
                if let (Some(call), Some(last)) = (call, attrs.last()) {
                    self.method(last, at, call);
                }
            }
            Target::Class(c) => {
                let class = &self.b.classes[c];
                let reached = match attrs.first().and_then(|a| class.methods.get(*a)) {
                    Some(&method) => method,
                    None => class.node,
                };
                if !self.init || call.is_some() {
                    self.edge(reached, Vec::new());
                }
                if attrs.len() > 1
                    && let (Some(call), Some(last)) = (call, attrs.last())
                {
                    self.method(last, at, call);
                }
            }
            Target::Module(i) => {
                let Some((first, rest)) = attrs.split_first() else { return };
                if depth > 8 {
                    return;
                }
                let found = self.b.resolve(i, first, 0);
                if found.is_empty() {
                    if let Some(sub) = self.b.sibling(first) {
                        self.target(Target::Module(sub), rest, at, call, depth + 1);
                    } else {
                        let dotted = format!("{}.{}", self.b.files[i].stem, attrs.join("."));
                        self.external(&dotted, at, None);
                    }
                }
                for target in found {
                    self.target(target, rest, at, call, depth + 1);
                }
            }
        }
    }

    /// The dotted name of another module's object that `expr` (a name or attribute
    /// chain) is, when it is one.
    fn dotted(&self, expr: &'a Expr) -> Option<String> {
        let (name, attrs) = Self::chain(expr)?;
        let Base::Targets(targets) = self.base(name.id.as_str()) else { return None };
        match targets.as_slice() {
            [Target::External(d)] => {
                Some(std::iter::once(d.as_str()).chain(attrs.iter().copied()).collect::<Vec<_>>().join("."))
            }
            _ => None,
        }
    }

    /// Whether `expr` is a `pathlib` path: `Path(...)`, `Path.home()`, `p / "x"`,
    /// `p.parent`, `p.with_suffix(...)`, or a variable of the function only ever
    /// assigned one.
    fn is_path(&self, expr: &'a Expr, depth: usize) -> bool {
        const PATHS: &[&str] = &["pathlib.Path", "pathlib.PosixPath", "pathlib.WindowsPath"];
        if depth > 4 {
            return false;
        }
        match expr {
            Expr::Call(call) => match &*call.func {
                Expr::Attribute(a) if !self.dotted(&call.func).is_some_and(|d| PATHS.contains(&d.as_str())) => {
                    let producing = [
                        "resolve",
                        "absolute",
                        "with_suffix",
                        "with_name",
                        "with_stem",
                        "joinpath",
                        "expanduser",
                        "relative_to",
                        "home",
                        "cwd",
                    ];
                    producing.contains(&a.attr.as_str())
                        && (self.is_path(&a.value, depth + 1)
                            || self.dotted(&a.value).is_some_and(|d| PATHS.contains(&d.as_str())))
                }
                func => self.dotted(func).is_some_and(|d| PATHS.contains(&d.as_str())),
            },
            Expr::BinOp(op) if op.op == ast::Operator::Div => self.is_path(&op.left, depth + 1),
            Expr::Attribute(a) if a.attr.as_str() == "parent" => self.is_path(&a.value, depth + 1),
            Expr::Name(name) => self
                .assigned
                .get(name.id.as_str())
                .is_some_and(|values| !values.is_empty() && values.iter().all(|v| self.is_path(v, depth + 1))),
            _ => false,
        }
    }

    /// A method called on a `pathlib` path.
    fn path_method(&mut self, name: &str, at: TextSize, call: &'a ast::ExprCall) -> bool {
        let via = format!("Path.{name}");
        match tables::path_method(name) {
            Some(Entry::Can(capabilities)) => {
                for &capability in capabilities {
                    self.effect(capability, at, &via, false);
                }
            }
            Some(Entry::Deletes) => self.effect(Capability::FsWrite, at, &via, true),
            Some(Entry::OpenMode) => {
                let writes = match call.arguments.find_argument_value("mode", 0) {
                    None => false,
                    Some(Expr::StringLiteral(s)) => s.value.to_str().contains(['w', 'a', 'x', '+']),
                    Some(_) => true,
                };
                let capability = if writes { Capability::FsWrite } else { Capability::FsRead };
                self.effect(capability, at, &via, false);
            }
            Some(Entry::Pure) | None => return false,
        }
        true
    }

    /// A method called on a value whose type is not known.
    fn method(&mut self, name: &str, at: TextSize, call: &'a ast::ExprCall) {
        let via = format!(".{name}()");
        match tables::method(name) {
            Some(Entry::Can(capabilities)) => {
                for &capability in capabilities {
                    self.effect(capability, at, &via, false);
                }
            }
            Some(Entry::Deletes) => self.effect(Capability::FsWrite, at, &via, true),
            _ if name == "open" => {
                // `Path.open(mode)`: a literal mode that writes is a write.
                let mode = call.arguments.find_argument_value("mode", 0);
                if let Some(Expr::StringLiteral(s)) = mode {
                    let mode = s.value.to_str();
                    if mode.len() <= 4
                        && mode.chars().all(|c| "rwabxt+".contains(c))
                        && mode.contains(['w', 'a', 'x', '+'])
                    {
                        self.effect(Capability::FsWrite, at, &via, false);
                    }
                }
            }
            _ => {}
        }
    }

    /// `getattr(obj, name)`: on a module with a name that is not a literal, `dynamic`.
    fn getattr(&mut self, call: &'a ast::ExprCall, at: TextSize) {
        let [object, name, ..] = &*call.arguments.args else { return };
        if let Expr::StringLiteral(attribute) = name {
            // `getattr(os, "system")` is `os.system`.
            if let Some(dotted) = self.dotted(object).or_else(|| imported(object)) {
                self.external(&format!("{dotted}.{}", attribute.value.to_str()), at, None);
            }
            return;
        }
        let Some((base, attrs)) = Self::chain(object) else { return };
        let module = match self.base(base.id.as_str()) {
            Base::Targets(targets) => targets.iter().any(|t| match t {
                Target::External(_) | Target::Module(_) | Target::Unresolved(_) => true,
                Target::Node(_) | Target::Class(_) => false,
            }),
            _ => base.id.as_str() == "sys" && attrs.first() == Some(&"modules"),
        };
        if module {
            self.effect(Capability::Dynamic, at, "getattr", false);
        }
    }
}

/// The arguments of `call` that are literal booleans.
fn literals(call: &ast::ExprCall) -> Vec<(Literal, bool)> {
    let mut out = Vec::new();
    for (index, arg) in call.arguments.args.iter().enumerate() {
        if matches!(arg, Expr::Starred(_)) {
            break;
        }
        if let Expr::BooleanLiteral(b) = arg {
            out.push((Literal::Position(index), b.value));
        }
    }
    for keyword in &call.arguments.keywords {
        if let (Some(name), Expr::BooleanLiteral(b)) = (&keyword.arg, &keyword.value) {
            out.push((Literal::Keyword(name.to_string()), b.value));
        }
    }
    out
}

/// The module `__import__("m")` or `importlib.import_module("m")` (a literal) gives.
fn imported(expr: &Expr) -> Option<String> {
    let Expr::Call(call) = expr else { return None };
    let named = match &*call.func {
        Expr::Name(name) => name.id.as_str() == "__import__",
        Expr::Attribute(a) => a.attr.as_str() == "import_module",
        _ => false,
    };
    match call.arguments.args.first() {
        Some(Expr::StringLiteral(s)) if named => Some(s.value.to_str().to_string()),
        _ => None,
    }
}

/// The base name of an attribute chain (`p` of `p.write_text`).
fn expr_name(expr: &Expr) -> &Expr {
    let mut at = expr;
    while let Expr::Attribute(a) = at {
        at = &a.value;
    }
    at
}

fn is_false(expr: &Expr) -> bool {
    matches!(expr, Expr::BooleanLiteral(b) if !b.value) || matches!(expr, Expr::NoneLiteral(_))
}

/// Whether `os.open`'s flags only read: names of read flags joined by `|`.
fn read_flags(flags: &Expr) -> bool {
    const READ: &[&str] = &[
        "O_RDONLY",
        "O_DIRECTORY",
        "O_NOFOLLOW",
        "O_CLOEXEC",
        "O_NONBLOCK",
        "O_PATH",
        "O_NOCTTY",
        "O_BINARY",
        "O_NOATIME",
        "O_LARGEFILE",
        "O_NOINHERIT",
        "O_SEQUENTIAL",
        "O_RANDOM",
        "O_NDELAY",
    ];
    match flags {
        Expr::Attribute(a) => READ.contains(&a.attr.as_str()),
        Expr::Name(n) => READ.contains(&n.id.as_str()),
        Expr::BinOp(op) if op.op == ast::Operator::BitOr => read_flags(&op.left) && read_flags(&op.right),
        Expr::NumberLiteral(n) => matches!(&n.value, ast::Number::Int(i) if i.as_u8() == Some(0)),
        Expr::If(e) => read_flags(&e.body) && read_flags(&e.orelse),
        _ => false,
    }
}

fn first_parameter(parameters: &ast::Parameters) -> Option<&str> {
    parameters.posonlyargs.iter().chain(&parameters.args).next().map(|p| p.parameter.name.as_str())
}

impl<'a> Visitor<'a> for Walker<'_, 'a> {
    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Call(call) => {
                if !self.used(&call.func, Some(call)) {
                    if let Expr::Attribute(a) = &*call.func {
                        let at = expr.start();
                        if let Some(module) = imported(&a.value) {
                            // `__import__("os").system(...)` is `os.system(...)`.
                            self.external(&format!("{module}.{}", a.attr.as_str()), at, Some(call));
                        } else if !(self.is_path(&a.value, 0) && self.path_method(a.attr.as_str(), at, call)) {
                            self.method(a.attr.as_str(), at, call);
                        }
                    }
                    self.visit_expr(&call.func);
                }
                self.visit_arguments(&call.arguments);
            }
            Expr::Name(_) | Expr::Attribute(_) => {
                if !self.used(expr, None)
                    && let Expr::Attribute(a) = expr
                {
                    self.visit_expr(&a.value);
                }
            }
            _ => visitor::walk_expr(self, expr),
        }
    }

    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::Import(_) | Stmt::ImportFrom(_) => {}
            // `if read_only: ... else: ...`: each branch runs only with its value.
            Stmt::If(s) if self.guard(&s.test).is_some() => {
                let Some((name, value)) = self.guard(&s.test) else { return };
                self.guards.push((name, value));
                self.visit_body(&s.body);
                self.guards.pop();
                self.guards.push((name, !value));
                for clause in &s.elif_else_clauses {
                    if let Some(test) = &clause.test {
                        self.visit_expr(test);
                    }
                    self.visit_body(&clause.body);
                }
                self.guards.pop();
            }
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    fn visit_annotation(&mut self, _: &'a Expr) {}

    fn visit_except_handler(&mut self, handler: &'a ast::ExceptHandler) {
        let ast::ExceptHandler::ExceptHandler(h) = handler;
        self.visit_body(&h.body);
    }
}

/// The names a function binds itself (parameters, assignments, nested definitions),
/// and its import statements.
#[derive(Default)]
struct Scope<'a> {
    names: HashSet<&'a str>,
    /// Names assigned in the body (nested functions' parameters too).
    stored: HashSet<&'a str>,
    globals: Vec<&'a str>,
    assigned: HashMap<&'a str, Vec<&'a Expr>>,
    imports: Vec<&'a Stmt>,
}

impl<'a> Scope<'a> {
    fn parameters(&mut self, parameters: &'a ast::Parameters) {
        self.names.reserve(parameters.len());
        let all = parameters.posonlyargs.iter().chain(&parameters.args).chain(&parameters.kwonlyargs);
        for parameter in all {
            self.names.insert(parameter.parameter.name.as_str());
        }
        for parameter in parameters.vararg.iter().chain(&parameters.kwarg) {
            self.names.insert(parameter.name.as_str());
        }
    }
}

impl<'a> Visitor<'a> for Scope<'a> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::Import(_) | Stmt::ImportFrom(_) => self.imports.push(stmt),
            Stmt::FunctionDef(def) => {
                self.names.insert(def.name.as_str());
                self.parameters(&def.parameters);
                let nested =
                    def.parameters.posonlyargs.iter().chain(&def.parameters.args).chain(&def.parameters.kwonlyargs);
                self.stored.extend(nested.map(|p| p.parameter.name.as_str()));
                visitor::walk_stmt(self, stmt);
            }
            Stmt::ClassDef(class) => {
                self.names.insert(class.name.as_str());
                visitor::walk_stmt(self, stmt);
            }
            Stmt::Assign(assign) => {
                for target in &assign.targets {
                    if let Expr::Name(name) = target {
                        self.assigned.entry(name.id.as_str()).or_default().push(&assign.value);
                    }
                }
                visitor::walk_stmt(self, stmt);
            }
            Stmt::Global(global) => self.globals.extend(global.names.iter().map(|n| n.as_str())),
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Name(name) if name.ctx == ExprContext::Store => {
                self.names.insert(name.id.as_str());
                self.stored.insert(name.id.as_str());
            }
            Expr::Lambda(lambda) => {
                if let Some(parameters) = &lambda.parameters {
                    self.parameters(parameters);
                    let nested = parameters.posonlyargs.iter().chain(&parameters.args).chain(&parameters.kwonlyargs);
                    self.stored.extend(nested.map(|p| p.parameter.name.as_str()));
                }
                visitor::walk_expr(self, expr);
            }
            _ => visitor::walk_expr(self, expr),
        }
    }

    fn visit_except_handler(&mut self, handler: &'a ast::ExceptHandler) {
        let ast::ExceptHandler::ExceptHandler(h) = handler;
        if let Some(name) = &h.name {
            self.names.insert(name.as_str());
        }
        visitor::walk_except_handler(self, handler);
    }
}
