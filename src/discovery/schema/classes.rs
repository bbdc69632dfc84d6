//! Classes as schemas: Enum members, the fields of TypedDict / dataclass / BaseModel /
//! NamedTuple lineages, `Field(...)` / `field(...)` calls (defaults, factories,
//! aliases, bounds), class docstrings, `Attributes:` and attribute docstrings.

use super::*;

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum ClassKind {
    Enum,
    TypedDict,
    Dataclass,
    BaseModel,
    NamedTuple,
    Plain,
}

/// What a `Field(...)` (pydantic) or `field(...)` (dataclasses) call says about the
/// parameter or field it is the default, or the `Annotated` metadata, of.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct FieldCall {
    /// A default or a factory is given, so the value may be left out.
    pub optional: bool,
    /// The default as JSON, when it is a value lcp can write down.
    pub default: Option<Value>,
    /// `validation_alias=` (else `alias=`) given as a string, or the first string of
    /// an `AliasChoices`: the name callers use.
    pub alias: Option<String>,
    /// The other strings of an `AliasChoices`, in order: names pydantic accepts too.
    pub other_names: Vec<String>,
    /// `serialization_alias=` (else `alias=`) given as a string: the key a model's
    /// dump by alias gives the field.
    pub dumped_as: Option<String>,
    /// What a `default_factory` of a built-in container (`list`, `dict`, `set`, …)
    /// makes: how a model default that leaves the field out serialises it.
    pub made_by_factory: Option<Value>,
}

/// A class's fields as its lineage declares them, base classes first.
pub(super) struct ClassFields {
    pub(super) properties: Map,
    pub(super) required: Vec<String>,
    /// Unknown keys are refused (`additionalProperties: false`).
    pub(super) forbid_extra: bool,
}

/// Which field function a call is.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum FieldFunction {
    /// `pydantic.Field`: the default may be given by position.
    Pydantic,
    /// `dataclasses.field`: keywords only.
    Dataclasses,
}

/// A `NamedTuple`'s object schema as the array pydantic dumps it to: its fields in
/// order as `prefixItems`, as many items as it has fields, at least its required ones.
fn dumped_tuple(mut schema: Value) -> Value {
    let Some(object) = schema.as_object_mut() else { return schema };
    let fields: Vec<Value> = match object.remove("properties") {
        Some(Value::Object(properties)) => properties.into_iter().map(|(_, field)| field).collect(),
        _ => Vec::new(),
    };
    let required = object.remove("required").and_then(|r| r.as_array().map(Vec::len)).unwrap_or(0);
    object.remove("additionalProperties");
    object.insert("type".into(), json!("array"));
    object.insert("minItems".into(), json!(required));
    object.insert("maxItems".into(), json!(fields.len()));
    object.insert("prefixItems".into(), Value::Array(fields));
    schema
}

/// A class keyword given as a literal, as source-like text: `total=False` → `False`.
pub(super) fn class_keyword(class: &ast::StmtClassDef, name: &str) -> Option<String> {
    let keyword =
        class.arguments.as_ref()?.keywords.iter().find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == name))?;
    Some(match &keyword.value {
        Expr::BooleanLiteral(b) => if b.value { "True" } else { "False" }.to_string(),
        Expr::StringLiteral(s) => format!("'{}'", s.value.to_str()),
        other => expression_text(other),
    })
}

/// The docstring of a class or function body: its first statement, when a string.
pub fn docstring_of(body: &[Stmt]) -> Option<&ast::ExprStringLiteral> {
    string_statement(body.first())
}

/// `stmt` when it is a string on its own (a docstring).
fn string_statement(stmt: Option<&Stmt>) -> Option<&ast::ExprStringLiteral> {
    match stmt {
        Some(Stmt::Expr(e)) => match &*e.value {
            Expr::StringLiteral(s) => Some(s),
            _ => None,
        },
        _ => None,
    }
}

/// The text of an attribute docstring (the string statement right after a field),
/// its words joined with single spaces.
pub(super) fn attribute_docstring(next: Option<&Stmt>) -> Option<String> {
    let text = string_statement(next)?.value.to_str();
    Some(text.split_whitespace().collect::<Vec<_>>().join(" "))
}

impl<'a, 's> Converter<'a, 's> {
    pub(super) fn class(
        &mut self,
        module: Module<'a, 's>,
        class: &'a ast::StmtClassDef,
        path: String,
        range: TextRange,
        depth: usize,
    ) -> Value {
        self.class_and_made(module, class, path, range, depth).0
    }

    /// [`Converter::class`], with the values its fields' `default_factory` make.
    pub(super) fn class_and_made(
        &mut self,
        module: Module<'a, 's>,
        class: &'a ast::StmtClassDef,
        path: String,
        range: TextRange,
        depth: usize,
    ) -> (Value, Vec<(String, Value)>) {
        let mark = self.made_by_factory.len();
        let name = class.name.as_str();
        let key = definition_key(module, &path);
        let schema = self.in_module(module, range, |this| match this.class_kind(class, 0) {
            ClassKind::Enum => this.enum_class(class),
            ClassKind::Plain => {
                this.warn(class.name.range, format!("class `{name}` is not an Enum, TypedDict, dataclass, BaseModel or NamedTuple: accepted as any JSON value"));
                json!({})
            }
            kind => {
                let schema = this.expand(&key, class.name.range, |this| this.object_class(class, &path, kind, depth));
                if schema.get("$ref").is_none() {
                    this.remember_class(&key, name, &schema);
                }
                schema
            }
        });
        (schema, self.made_by_factory.split_off(mark))
    }

    /// Records a class inlined as `schema` for [`named::hoist`], once per class.
    pub(super) fn remember_class(&mut self, key: &str, name: &'a str, schema: &Value) {
        if !self.classes.iter().any(|(known, ..)| known == key) {
            self.classes.push((key.to_string(), name, schema.clone()));
        }
    }

    /// The named classes inlined, with their schemas as inlined, for [`named::hoist`]:
    /// each under its own name, unless another class of the tool or a recursive
    /// definition has that name; then under its definition key (`stem.Name` for a
    /// sibling module's class), which no other has.
    pub fn named_classes(&self) -> Vec<(String, &Value)> {
        let shared = |name: &str| {
            self.classes.iter().filter(|(_, other, _)| *other == name).count() > 1
                || self.defs.keys().any(|key| key == name)
        };
        let shown = |key: &str, name: &str| if shared(name) { key.to_string() } else { name.to_string() };
        self.classes.iter().map(|(key, name, schema)| (shown(key, name), schema)).collect()
    }

    /// Resolves in the module being converted (see `current`).
    pub(super) fn class_kind(&self, class: &ast::StmtClassDef, depth: usize) -> ClassKind {
        if depth > MAX_ANNOTATION_DEPTH {
            return ClassKind::Plain;
        }
        for decorator in &class.decorator_list {
            let target = match &decorator.expression {
                Expr::Call(call) => &*call.func,
                other => other,
            };
            if let Some(Resolved::Qualified(q)) = self.resolve(target)
                && matches!(&*q, "dataclasses.dataclass" | "pydantic.dataclasses.dataclass")
            {
                return ClassKind::Dataclass;
            }
        }
        for base in class.bases() {
            let kind = match self.resolve(base) {
                Some(Resolved::Qualified(q)) => match &*q {
                    "enum.Enum" | "enum.StrEnum" | "enum.IntEnum" | "enum.Flag" | "enum.IntFlag" => ClassKind::Enum,
                    "typing.TypedDict" => ClassKind::TypedDict,
                    "typing.NamedTuple" => ClassKind::NamedTuple,
                    "pydantic.BaseModel" | "pydantic.main.BaseModel" => ClassKind::BaseModel,
                    _ => ClassKind::Plain,
                },
                Some(Resolved::Class(module, local)) => match module.scope.classes.get(local) {
                    Some(parent) if !std::ptr::eq(*parent, class) => {
                        self.peek_in(module, |this| this.class_kind(parent, depth + 1))
                    }
                    _ => ClassKind::Plain,
                },
                _ => ClassKind::Plain,
            };
            if kind != ClassKind::Plain {
                return kind;
            }
        }
        ClassKind::Plain
    }

    pub(super) fn enum_class(&mut self, class: &ast::StmtClassDef) -> Value {
        let values = self.enum_members(class).into_iter().map(|(_, value)| value).collect();
        enum_schema(values)
    }

    /// Members of a same-file Enum with their values; `auto()` numbers from 1, or
    /// gives the lower-cased name for a `StrEnum`.
    pub(super) fn enum_members(&self, class: &ast::StmtClassDef) -> Vec<(String, Value)> {
        let is_str_enum = class
            .bases()
            .iter()
            .any(|b| matches!(self.resolve(b), Some(Resolved::Qualified(q)) if q == "enum.StrEnum"));
        let mut members = Vec::new();
        let mut next_auto = 1i64;
        for stmt in &class.body {
            let (target, value) = match stmt {
                Stmt::Assign(a) if a.targets.len() == 1 => (&a.targets[0], &*a.value),
                Stmt::AnnAssign(a) => match &a.value {
                    Some(value) => (&*a.target, &**value),
                    None => continue,
                },
                _ => continue,
            };
            let Expr::Name(target) = target else { continue };
            let name = target.id.as_str();
            if name.starts_with('_') {
                continue;
            }
            let is_auto = matches!(value, Expr::Call(call) if matches!(self.resolve(&call.func), Some(Resolved::Qualified(q)) if q == "enum.auto"));
            let member = if is_auto {
                if is_str_enum {
                    Value::from(name.to_lowercase())
                } else {
                    next_auto += 1;
                    Value::from(next_auto - 1)
                }
            } else {
                match self.literal_value(value, MAX_LITERAL_DEPTH, false).ok() {
                    Some(v) => {
                        if let Some(i) = v.as_i64() {
                            next_auto = i + 1;
                        }
                        v
                    }
                    None => continue,
                }
            };
            members.push((name.to_string(), member));
        }
        members
    }

    pub(super) fn enum_member_value(&self, attr: &ast::ExprAttribute) -> Option<Value> {
        let Some(Resolved::Class(module, name)) = self.resolve(&attr.value) else { return None };
        let class = module.scope.classes.get(name)?;
        self.peek_in(module, |this| {
            if this.class_kind(class, 0) != ClassKind::Enum {
                return None;
            }
            this.enum_members(class)
                .into_iter()
                .find(|(member, _)| member == attr.attr.as_str())
                .map(|(_, value)| value)
        })
    }

    /// The object schema of a class (`path`: its dotted name in its module, `Outer.Inner`).
    pub(super) fn object_class(
        &mut self,
        class: &'a ast::StmtClassDef,
        path: &str,
        kind: ClassKind,
        depth: usize,
    ) -> Value {
        let mut fields =
            ClassFields { properties: Map::new(), required: Vec::new(), forbid_extra: kind != ClassKind::BaseModel };
        let mut lineage = Vec::new();
        self.lineage(self.current.get(), class, &mut lineage, 0);
        let range = class.name.range;
        let mut doc = None;
        for (module, ancestor) in lineage {
            // The class itself comes last: its docstring's prose describes the object.
            doc = self.in_module(module, range, |this| {
                let path = if std::ptr::eq(ancestor, class) { path.to_string() } else { ancestor.name.to_string() };
                this.ancestor_fields(ancestor, path, kind, depth, &mut fields)
            });
        }
        let required = Value::Array(fields.required.into_iter().map(Value::from).collect());
        let properties = Value::Object(fields.properties);
        let mut schema = object([("type", json!("object")), ("properties", properties), ("required", required)]);
        if fields.forbid_extra {
            schema["additionalProperties"] = Value::Bool(false);
        }
        let prose = doc.map(|doc: crate::discovery::docstring::Docstring| doc.prose()).unwrap_or_default();
        if !prose.is_empty() {
            set_description(&mut schema, prose);
        }
        if let (Some(extra), Some(object)) = (self.config_schema_extra(class), schema.as_object_mut()) {
            object.extend(extra);
        }
        if kind == ClassKind::NamedTuple && self.output {
            return dumped_tuple(schema);
        }
        schema
    }

    /// The `json_schema_extra` dict of a class's pydantic config, laid over its schema
    /// as pydantic does: `model_config = ConfigDict(json_schema_extra={...})` (a model)
    /// or `__pydantic_config__ = ConfigDict(...)` (a TypedDict or a dataclass), the
    /// config a call or a dict literal.
    pub(super) fn config_schema_extra(&self, class: &ast::StmtClassDef) -> Option<Map> {
        class.body.iter().find_map(|stmt| {
            let (target, value) = match stmt {
                Stmt::Assign(a) => (a.targets.first()?, &*a.value),
                Stmt::AnnAssign(a) => (&*a.target, a.value.as_deref()?),
                _ => return None,
            };
            let Expr::Name(name) = target else { return None };
            if !matches!(name.id.as_str(), "model_config" | "__pydantic_config__") {
                return None;
            }
            let extra = match value {
                Expr::Call(call) => call
                    .arguments
                    .keywords
                    .iter()
                    .find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == "json_schema_extra"))
                    .and_then(|k| self.literal(&k.value)),
                dict @ Expr::Dict(_) => self.literal(dict).and_then(|config| config.get("json_schema_extra").cloned()),
                _ => None,
            };
            match extra {
                Some(Value::Object(extra)) => Some(extra),
                _ => None,
            }
        })
    }

    /// The fields one class of a lineage declares, in its own module's view. A model
    /// field's property is its alias; a field is described by its `Field` or
    /// `Annotated` text, else the string right after it, else its class docstring's
    /// `Attributes` entry. Returns the class's docstring, parsed.
    pub(super) fn ancestor_fields(
        &mut self,
        ancestor: &'a ast::StmtClassDef,
        path: String,
        kind: ClassKind,
        depth: usize,
        fields: &mut ClassFields,
    ) -> Option<crate::discovery::docstring::Docstring> {
        let total = class_keyword(ancestor, "total").map(|v| v != "False").unwrap_or(true);
        if kind == ClassKind::BaseModel && self.model_forbids_extra(ancestor) {
            fields.forbid_extra = true;
        }
        let doc = docstring_of(&ancestor.body).map(|doc| crate::discovery::docstring::parse(doc.value.to_str()));
        self.enclosing.push((self.current.get(), ancestor, path));
        for (index, stmt) in ancestor.body.iter().enumerate() {
            let Stmt::AnnAssign(field) = stmt else { continue };
            let Expr::Name(target) = &*field.target else { continue };
            let name = target.id.as_str();
            if kind == ClassKind::BaseModel && name.starts_with('_') {
                continue;
            }
            if self.is_classvar(&field.annotation) {
                continue;
            }
            let mut description = None;
            let mut schema = self.convert(&field.annotation, depth + 1, &mut description);
            let field_call = match kind {
                ClassKind::TypedDict => {
                    let optional = match self.required_marker(&field.annotation) {
                        Some(is_required) => !is_required,
                        None => !total,
                    };
                    FieldCall { optional, ..FieldCall::default() }
                }
                _ => self.field_spec(Some(&field.annotation), field.value.as_deref(), &mut schema, &mut description),
            };
            if let Some(default) = field_call.default {
                schema["default"] = default;
            }
            let made_by_factory = field_call.made_by_factory;
            let description = description
                .or_else(|| attribute_docstring(ancestor.body.get(index + 1)))
                .or_else(|| {
                    let documented = doc.iter().flat_map(|doc| &doc.attributes).find(|d| d.name == name);
                    documented.map(|d| d.description.clone())
                })
                .filter(|text| !text.is_empty());
            if let Some(text) = description {
                set_description(&mut schema, text);
            }
            // A return value is a model's dump by alias: its keys are the dump's.
            let alias = if self.output { field_call.dumped_as } else { field_call.alias };
            let property = match alias {
                Some(alias) if kind == ClassKind::BaseModel => alias,
                _ => name.to_string(),
            };
            fields.required.retain(|r| *r != property);
            if !field_call.optional {
                fields.required.push(property.clone());
            }
            if let Some(value) = made_by_factory {
                self.made_by_factory.push((property.clone(), value));
            }
            fields.properties.insert(property, schema);
        }
        self.enclosing.pop();
        doc
    }

    /// Base classes first (their fields come first), then the class; each with the
    /// module it is defined in.
    pub(super) fn lineage(
        &self,
        module: Module<'a, 's>,
        class: &'a ast::StmtClassDef,
        out: &mut Vec<(Module<'a, 's>, &'a ast::StmtClassDef)>,
        depth: usize,
    ) {
        if depth > MAX_ANNOTATION_DEPTH || out.iter().any(|(_, c)| std::ptr::eq(*c, class)) {
            return;
        }
        for base in class.bases() {
            if let Some(Resolved::Class(home, name)) = self.resolve_in(module, base)
                && let Some(&parent) = home.scope.classes.get(name)
                && !std::ptr::eq(parent, class)
            {
                self.lineage(home, parent, out, depth + 1);
            }
        }
        out.push((module, class));
    }

    /// What a parameter's or a field's default and annotation say together:
    /// `x: T = Field(...)`, `Annotated[T, Field(default=...)]`, `= ...` (required), a
    /// plain default, or none; a `Field`'s description and bounds go on `schema`. A
    /// default given by assignment wins over an `Annotated` one; the alias comes from
    /// either.
    pub fn field_spec(
        &mut self,
        annotation: Option<&Expr>,
        value: Option<&Expr>,
        schema: &mut Value,
        description: &mut Option<String>,
    ) -> FieldCall {
        let annotated = annotation.and_then(|annotation| self.annotated_field(annotation));
        let mut field = match value {
            None => return annotated.unwrap_or_default(),
            Some(Expr::EllipsisLiteral(_)) => FieldCall::default(),
            Some(value) => self.field_of(value, schema, description).unwrap_or_else(|| FieldCall {
                optional: true,
                default: self.default(value),
                ..FieldCall::default()
            }),
        };
        if let Some(annotated) = annotated {
            if field.alias.is_none() {
                field.alias = annotated.alias;
                field.other_names = annotated.other_names;
            }
            if field.dumped_as.is_none() {
                field.dumped_as = annotated.dumped_as;
            }
        }
        field
    }

    /// `Field(...)` / `field(...)` when `expr` is such a call: what it says, with its
    /// description, title, examples and bounds put on `schema`.
    fn field_of(&mut self, expr: &Expr, schema: &mut Value, description: &mut Option<String>) -> Option<FieldCall> {
        let Expr::Call(call) = expr else { return None };
        let function = self.field_function(&call.func)?;
        Some(self.field_call(call, function, schema, description))
    }

    /// The `Field(...)` of an `Annotated[T, ..., Field(...)]` annotation (the last one,
    /// as pydantic merges them): its default, factory and alias. Its bounds and
    /// description are already part of the annotation's schema.
    fn annotated_field(&mut self, annotation: &Expr) -> Option<FieldCall> {
        let Expr::Subscript(sub) = annotation else { return None };
        if !self.is_qualified(&sub.value, "typing.Annotated") {
            return None;
        }
        let mut found = None;
        for meta in slice_args(sub).into_iter().skip(1) {
            let mut scratch = json!({});
            if let Some(field) = self.field_of(meta, &mut scratch, &mut None) {
                found = Some(field);
            }
        }
        found
    }

    pub(super) fn field_function(&self, func: &Expr) -> Option<FieldFunction> {
        match self.resolve(func) {
            Some(Resolved::Qualified(q)) => match &*q {
                "pydantic.Field" | "pydantic.fields.Field" => Some(FieldFunction::Pydantic),
                "dataclasses.field" => Some(FieldFunction::Dataclasses),
                _ => None,
            },
            _ => None,
        }
    }

    pub(super) fn field_call(
        &mut self,
        call: &ast::ExprCall,
        function: FieldFunction,
        schema: &mut Value,
        description: &mut Option<String>,
    ) -> FieldCall {
        let mut field = FieldCall::default();
        let given = |this: &mut Self, value: &Expr, field: &mut FieldCall| {
            if !matches!(value, Expr::EllipsisLiteral(_)) {
                field.optional = true;
                field.default = this.default(value);
            }
        };
        if function == FieldFunction::Pydantic
            && let Some(first) = call.arguments.args.first()
        {
            given(self, first, &mut field);
        }
        let (mut alias, mut plain_alias) = (None, None);
        for keyword in &call.arguments.keywords {
            let Some(arg) = &keyword.arg else { continue };
            match arg.as_str() {
                "default" => given(self, &keyword.value, &mut field),
                "default_factory" => {
                    field.optional = true;
                    field.default = None;
                    field.made_by_factory = match self.resolve(&keyword.value) {
                        Some(Resolved::Qualified(q)) => match &*q {
                            "builtins.list" | "builtins.set" | "builtins.frozenset" | "builtins.tuple" => {
                                Some(json!([]))
                            }
                            "builtins.dict" => Some(json!({})),
                            _ => None,
                        },
                        _ => None,
                    };
                }
                "description" => {
                    if let Some(Value::String(text)) = self.literal(&keyword.value) {
                        description.get_or_insert(text);
                    }
                }
                // pydantic lays the dict over the field's schema.
                "json_schema_extra" => {
                    if let (Some(Value::Object(extra)), Some(object)) =
                        (self.literal(&keyword.value), schema.as_object_mut())
                    {
                        object.extend(extra);
                    }
                }
                "serialization_alias" => {
                    if let Some(Value::String(text)) = self.literal(&keyword.value) {
                        field.dumped_as = Some(text);
                    }
                }
                "alias" | "validation_alias" => {
                    if arg.as_str() == "alias"
                        && let Some(Value::String(text)) = self.literal(&keyword.value)
                    {
                        plain_alias = Some(text);
                    }
                    if let Some(Value::String(text)) = self.literal(&keyword.value)
                        && (arg.as_str() == "validation_alias" || alias.is_none())
                    {
                        alias = Some(text);
                    } else if arg.as_str() == "validation_alias"
                        && let Expr::Call(choices) = &keyword.value
                    {
                        let mut names = self.alias_choices(choices).into_iter();
                        if let Some(first) = names.next() {
                            alias = Some(first);
                            field.other_names = names.collect();
                        }
                    }
                }
                key => {
                    if let Some(value) = self.literal(&keyword.value) {
                        apply_constraint(schema, key, value);
                    }
                }
            }
        }
        field.alias = alias;
        field.dumped_as = field.dumped_as.take().or(plain_alias);
        field
    }

    /// The names of `AliasChoices('a', 'b')`, in order, as pydantic accepts them (the
    /// first is the property of its JSON Schema); an `AliasPath`, which reaches into a
    /// value, is not followed: a warning names it. Empty for any other call.
    fn alias_choices(&mut self, call: &ast::ExprCall) -> Vec<String> {
        let is = |this: &Self, func: &Expr, name: &str| {
            this.is_qualified(func, &format!("pydantic.{name}"))
                || this.is_qualified(func, &format!("pydantic.aliases.{name}"))
        };
        if is(self, &call.func, "AliasPath") {
            self.alias_path_ignored(call);
            return Vec::new();
        }
        if !is(self, &call.func, "AliasChoices") {
            return Vec::new();
        }
        let mut names = Vec::new();
        for choice in &call.arguments.args {
            match choice {
                Expr::StringLiteral(text) => names.push(text.value.to_str().to_string()),
                Expr::Call(path) if is(self, &path.func, "AliasPath") => self.alias_path_ignored(path),
                _ => {}
            }
        }
        names
    }

    /// Warns of an `AliasPath`, once however often its annotation is read.
    fn alias_path_ignored(&mut self, path: &ast::ExprCall) {
        let steps: Vec<String> = path
            .arguments
            .args
            .iter()
            .map(|step| match self.literal(step) {
                Some(value) => value.to_string(),
                None => expression_text(step),
            })
            .collect();
        let message = format!(
            "`AliasPath({})` reaches into the value given, which lcp does not follow: the property is the first string alias, else the field's name",
            steps.join(", ")
        );
        let at = self.sibling_range.or(self.string_range).unwrap_or(path.range());
        if !self.warnings.iter().any(|(range, known)| *range == at && *known == message) {
            self.warn(path.range(), message);
        }
    }

    pub(super) fn model_forbids_extra(&self, class: &ast::StmtClassDef) -> bool {
        if class_keyword(class, "extra").as_deref() == Some("'forbid'") {
            return true;
        }
        class.body.iter().any(|stmt| match stmt {
            Stmt::Assign(a) => {
                let is_config = matches!(a.targets.as_slice(), [Expr::Name(n)] if n.id.as_str() == "model_config");
                let Expr::Call(call) = &*a.value else { return false };
                is_config && call.arguments.keywords.iter().any(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == "extra") && matches!(&k.value, Expr::StringLiteral(s) if s.value.to_str() == "forbid"))
            }
            Stmt::ClassDef(inner) if inner.name.as_str() == "Config" => inner.body.iter().any(|s| {
                matches!(s, Stmt::Assign(a) if matches!(a.targets.as_slice(), [Expr::Name(n)] if n.id.as_str() == "extra") && matches!(&*a.value, Expr::StringLiteral(v) if v.value.to_str() == "forbid"))
            }),
            _ => false,
        })
    }

    pub(super) fn is_classvar(&self, annotation: &Expr) -> bool {
        let head = match annotation {
            Expr::Subscript(sub) => &*sub.value,
            other => other,
        };
        self.is_qualified(head, "typing.ClassVar")
    }

    /// `Required[T]` → true, `NotRequired[T]` → false, anything else → None.
    pub(super) fn required_marker(&self, annotation: &Expr) -> Option<bool> {
        let Expr::Subscript(sub) = annotation else { return None };
        match self.resolve(&sub.value) {
            Some(Resolved::Qualified(q)) if q == "typing.Required" => Some(true),
            Some(Resolved::Qualified(q)) if q == "typing.NotRequired" => Some(false),
            Some(Resolved::Qualified(q)) if q == "typing.Annotated" || q == "typing.ReadOnly" => {
                slice_args(sub).first().and_then(|inner| self.required_marker(inner))
            }
            _ => None,
        }
    }
}
