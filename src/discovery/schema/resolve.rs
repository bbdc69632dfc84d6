//! Name resolution for annotations: a module's imports, classes and aliases
//! ([`Scope`]), relative imports into the sibling modules of a library folder, star
//! imports, and classes nested in a class body. Never converts a type.

use super::*;

/// Most imports followed from one name to its definition: re-exports chain, and two
/// modules may import from each other.
pub(super) const MAX_IMPORT_HOPS: usize = 16;

/// What a module defines that annotations may refer to.
#[derive(Default)]
pub struct Scope<'a> {
    /// Local name → qualified name: `t` → `typing`, `Opt` → `typing.Optional`. A
    /// relative import keeps its dots: `from .models import Item` → `.models.Item`,
    /// `from . import models` → `.models`.
    pub imports: HashMap<&'a str, String>,
    /// Classes defined at module scope, by name.
    pub classes: HashMap<&'a str, &'a ast::StmtClassDef>,
    /// `Vector = list[float]`, `Vector: TypeAlias = ...`, `type Vector = ...`.
    pub aliases: HashMap<&'a str, &'a Expr>,
    /// `from typing import *` (or `typing_extensions`): typing's names are bound.
    pub typing_star: bool,
    /// Modules of `from M import *`, qualified like `imports` (`.models`).
    pub star_imports: Vec<String>,
}

/// The modules of one library folder by file stem, the tool's own included: where a
/// relative import (`from .models import Item`) finds its names.
pub type Siblings<'s, 'a> = [(&'s str, &'s Scope<'a>)];

/// A module whose definitions are in view: the tool's own, or a sibling.
#[derive(Clone, Copy)]
pub(super) struct Module<'a, 's> {
    pub(super) scope: &'s Scope<'a>,
    /// The sibling's file stem; `None` for the tool's own module.
    pub(super) stem: Option<&'s str>,
}

/// What a name in an annotation stands for.
pub(super) enum Resolved<'a, 's> {
    /// A qualified name (`builtins.str`, `typing.Optional`), borrowed from a module's
    /// imports when it needs no normalising.
    Qualified(Cow<'s, str>),
    Class(Module<'a, 's>, &'a str),
    /// A class defined in another class's body, with its dotted path (`Outer.Inner`).
    Nested(Module<'a, 's>, &'a ast::StmtClassDef, String),
    Alias(Module<'a, 's>, &'a str),
    /// A sibling module itself (`from . import models`).
    Module(Module<'a, 's>),
    Unknown(String),
}

/// The `$defs` key of a definition: its name, qualified by the sibling module that
/// defines it, so that two modules' `Item` never share one.
pub(super) fn definition_key(module: Module<'_, '_>, name: &str) -> String {
    match module.stem {
        Some(stem) => format!("{stem}.{name}"),
        None => name.to_string(),
    }
}

/// The qualified name of a builtin a schema can use.
pub(super) fn builtin(name: &str) -> Option<&'static str> {
    Some(match name {
        "str" => "builtins.str",
        "int" => "builtins.int",
        "float" => "builtins.float",
        "bool" => "builtins.bool",
        "bytes" => "builtins.bytes",
        "bytearray" => "builtins.bytearray",
        "list" => "builtins.list",
        "dict" => "builtins.dict",
        "set" => "builtins.set",
        "frozenset" => "builtins.frozenset",
        "tuple" => "builtins.tuple",
        "object" => "builtins.object",
        "type" => "builtins.type",
        "None" => "builtins.None",
        _ => return None,
    })
}

/// Names `from typing import *` binds that a schema can use (all in `typing.__all__`).
pub(super) fn is_typing_name(name: &str) -> bool {
    matches!(
        name,
        "Annotated"
            | "Any"
            | "ClassVar"
            | "Final"
            | "Literal"
            | "NamedTuple"
            | "NotRequired"
            | "Optional"
            | "ReadOnly"
            | "Required"
            | "Text"
            | "Type"
            | "TypedDict"
            | "Union"
            | "AbstractSet"
            | "Collection"
            | "DefaultDict"
            | "Dict"
            | "FrozenSet"
            | "Iterable"
            | "Iterator"
            | "List"
            | "Mapping"
            | "MutableMapping"
            | "MutableSequence"
            | "MutableSet"
            | "OrderedDict"
            | "Sequence"
            | "Set"
            | "Tuple"
    )
}

/// `typing_extensions.X` and `typing.X` are the same thing for a schema, and so are
/// pydantic's names and the submodules that define them (`pydantic.networks.HttpUrl`).
/// A name that needs no change is given back as it came.
pub(super) fn normalise_module(qualified: Cow<'_, str>) -> Cow<'_, str> {
    if let Some(rest) = qualified.strip_prefix("typing_extensions")
        && (rest.is_empty() || rest.starts_with('.'))
    {
        return Cow::Owned(format!("typing{rest}"));
    }
    for module in ["pydantic.networks.", "pydantic.types.", "pydantic.fields.", "pydantic.main."] {
        if let Some(name) = qualified.strip_prefix(module)
            && !name.contains('.')
        {
            return Cow::Owned(format!("pydantic.{name}"));
        }
    }
    qualified
}

/// The class named `name` defined directly in `class`'s body.
pub(super) fn nested_class<'a>(class: &'a ast::StmtClassDef, name: &str) -> Option<&'a ast::StmtClassDef> {
    class.body.iter().find_map(|stmt| match stmt {
        Stmt::ClassDef(inner) if inner.name.as_str() == name => Some(inner),
        _ => None,
    })
}

impl<'a, 's> Converter<'a, 's> {
    /// Runs `f` with `module`'s names in view; warnings from a sibling's definitions
    /// point at `range`, the place in the tool's file that led there.
    pub(super) fn in_module<R>(
        &mut self,
        module: Module<'a, 's>,
        range: TextRange,
        f: impl FnOnce(&mut Self) -> R,
    ) -> R {
        let outer = self.current.replace(module);
        let anchored = module.stem.is_some() && self.sibling_range.is_none();
        if anchored {
            self.sibling_range = Some(self.string_range.unwrap_or(range));
        }
        let result = f(self);
        if anchored {
            self.sibling_range = None;
        }
        self.current.set(outer);
        result
    }

    /// [`Self::in_module`] for code that only reads.
    pub(super) fn peek_in<R>(&self, module: Module<'a, 's>, f: impl FnOnce(&Self) -> R) -> R {
        let outer = self.current.replace(module);
        let result = f(self);
        self.current.set(outer);
        result
    }

    pub(super) fn is_qualified(&self, expr: &Expr, name: &str) -> bool {
        matches!(self.resolve(expr), Some(Resolved::Qualified(q)) if q == name)
    }

    pub(super) fn resolve(&self, expr: &Expr) -> Option<Resolved<'a, 's>> {
        self.resolve_in(self.current.get(), expr)
    }

    pub(super) fn resolve_in(&self, module: Module<'a, 's>, expr: &Expr) -> Option<Resolved<'a, 's>> {
        match expr {
            Expr::Name(n) => {
                let id = n.id.as_str();
                if let Some(found) = self.in_enclosing_class(module, id) {
                    Some(found)
                } else if let Some(found) = self.lookup(module, id, 0) {
                    Some(found)
                } else if let Some(qualified) = builtin(id) {
                    Some(Resolved::Qualified(Cow::Borrowed(qualified)))
                } else {
                    // Only a name nothing else defines is looked for behind `import *`.
                    Some(self.star_imported(module, id, 0).unwrap_or_else(|| Resolved::Unknown(id.to_string())))
                }
            }
            Expr::Attribute(a) => match self.resolve_in(module, &a.value)? {
                Resolved::Qualified(q) => {
                    Some(Resolved::Qualified(normalise_module(Cow::Owned(format!("{q}.{}", a.attr.as_str())))))
                }
                Resolved::Module(sibling) => Some(
                    self.lookup(sibling, a.attr.as_str(), 0)
                        .or_else(|| self.star_imported(sibling, a.attr.as_str(), 0))
                        .unwrap_or_else(|| Resolved::Unknown(expression_text(expr))),
                ),
                Resolved::Class(home, outer) => {
                    let nested = home.scope.classes.get(outer).and_then(|class| nested_class(class, a.attr.as_str()));
                    Some(match nested {
                        Some(inner) => Resolved::Nested(home, inner, format!("{outer}.{}", a.attr)),
                        None => Resolved::Unknown(expression_text(expr)),
                    })
                }
                Resolved::Nested(home, class, path) => Some(match nested_class(class, a.attr.as_str()) {
                    Some(inner) => Resolved::Nested(home, inner, format!("{path}.{}", a.attr)),
                    None => Resolved::Unknown(expression_text(expr)),
                }),
                _ => Some(Resolved::Unknown(expression_text(expr))),
            },
            Expr::NoneLiteral(_) => Some(Resolved::Qualified(Cow::Borrowed("builtins.None"))),
            _ => None,
        }
    }

    /// `name` as a class nested in the class whose body is being read, when that
    /// class is in `module` (a field annotation sees its class's namespace).
    pub(super) fn in_enclosing_class(&self, module: Module<'a, 's>, name: &str) -> Option<Resolved<'a, 's>> {
        let (home, class, path) = self.enclosing.last()?;
        if !std::ptr::eq(home.scope, module.scope) {
            return None;
        }
        nested_class(class, name).map(|inner| Resolved::Nested(*home, inner, format!("{path}.{name}")))
    }

    /// What `name` is bound to in `module`: a class, an alias or an import, followed
    /// into sibling modules. `None` when the module does not bind it, or when a
    /// relative import leads nowhere (outside the library folder, a missing file, a
    /// cycle).
    pub(super) fn lookup(&self, module: Module<'a, 's>, name: &str, hops: usize) -> Option<Resolved<'a, 's>> {
        let scope = module.scope;
        if let Some((&name, _)) = scope.classes.get_key_value(name) {
            return Some(Resolved::Class(module, name));
        }
        if let Some((&name, _)) = scope.aliases.get_key_value(name) {
            return Some(Resolved::Alias(module, name));
        }
        let Some(qualified) = scope.imports.get(name) else {
            return (scope.typing_star && is_typing_name(name))
                .then(|| Resolved::Qualified(Cow::Owned(format!("typing.{name}"))));
        };
        match qualified.strip_prefix('.') {
            Some(path) => self.relative(path, hops + 1),
            None => Some(Resolved::Qualified(normalise_module(Cow::Borrowed(qualified)))),
        }
    }

    /// `models` or `models.Item` (a relative import without its leading dot): the
    /// sibling module, or what the name is bound to there.
    pub(super) fn relative(&self, path: &str, hops: usize) -> Option<Resolved<'a, 's>> {
        // `..x` leaves the library folder.
        if hops > MAX_IMPORT_HOPS || path.is_empty() || path.starts_with('.') {
            return None;
        }
        let (stem, name) = match path.split_once('.') {
            Some((stem, name)) => (stem, Some(name)),
            None => (path, None),
        };
        let &(stem, scope) = self.siblings.iter().find(|(s, _)| *s == stem)?;
        let module = Module { scope, stem: Some(stem) };
        match name {
            None => Some(Resolved::Module(module)),
            Some(name) if !name.contains('.') => {
                self.lookup(module, name, hops).or_else(|| self.star_imported(module, name, hops))
            }
            // A name inside a name (`from .models import Outer.Inner` cannot be written).
            Some(_) => None,
        }
    }

    /// `name` as a sibling module that `module` imports with `*` defines it.
    pub(super) fn star_imported(&self, module: Module<'a, 's>, name: &str, hops: usize) -> Option<Resolved<'a, 's>> {
        module.scope.star_imports.iter().find_map(|star| {
            let Some(Resolved::Module(sibling)) = self.relative(star.strip_prefix('.')?, hops + 1) else {
                return None;
            };
            self.lookup(sibling, name, hops + 1).or_else(|| self.star_imported(sibling, name, hops + 1))
        })
    }
}
