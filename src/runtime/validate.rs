//! Arguments against a tool's schema, in Rust, before any Python runs (SPEC §5), and
//! return values against its output schema, after (SPEC §12: [`check_result`]).
//!
//! Covers the JSON Schema subset lcp emits: `type`, `properties`, `required`,
//! `additionalProperties`, `items`, `prefixItems`, `enum`, `const`, `anyOf`,
//! `$ref`/`$defs`, numeric bounds and `multipleOf`, string lengths, `pattern`,
//! array lengths, `uniqueItems`, the string formats (`validate/formats.rs`) and JSON text
//! (`contentMediaType: application/json` with its `contentSchema`). Every problem is
//! reported with the place it sits. A `pattern` that `regex-lite` cannot compile
//! (look-around, back-references, Unicode classes) is not checked: Python gets the
//! value and decides. It never runs Python.

mod formats;

use serde_json::{Map, Value};

use crate::discovery::schema::OTHER_NAMES;

/// Values deeper than this are not looked into (serde_json parses at most 128 levels).
const MAX_DEPTH: usize = 256;

/// Every way `args` breaks `schema`; empty when the arguments are valid.
pub fn check(schema: &Value, args: &Value) -> Vec<String> {
    let mut checker = Checker { root: schema, problems: Vec::new(), depth: 0, output: false };
    checker.value(schema, args, &At::Root);
    checker.problems
}

/// The arguments as clients mean them (SPEC §5), when that differs from what they
/// sent: `null` for an optional parameter whose schema does not take `null` means
/// "not given" (OpenAI's strict mode sends it for every parameter left out); a
/// string where the schema takes no string but the string is the JSON text of a value
/// the schema takes (an array or an object) is that value (clients that stringify
/// arguments); and, at any depth, a string where the schema takes no string but a
/// number or a boolean is that number or boolean when pydantic's lax mode reads it
/// so (`"1"`, `"2.5"`, `"true"`, `"off"`: see [`read_laxly`]; the MCP Inspector sends
/// every number as text). `None`: nothing to change. Validation then goes on as for
/// any call.
pub fn as_meant(schema: &Value, args: &Value) -> Option<Value> {
    let (Value::Object(given), Some(Value::Object(properties))) = (args, schema.get("properties")) else {
        return None;
    };
    let required = |name: &str| {
        schema.get("required").and_then(Value::as_array).is_some_and(|names| names.iter().any(|n| n == name))
    };
    let accepts = |property: &Value, value: &Value| takes(schema, property, value, false);
    let mut meant: Option<Map<String, Value>> = other_names_taken(schema, given);
    let named = meant.clone();
    for (name, value) in named.as_ref().unwrap_or(given) {
        let Some(property) = properties.get(name) else { continue };
        let replacement = match value {
            Value::Null if !required(name) && !accepts(property, value) => None,
            Value::String(text) if text.trim_start().starts_with(['[', '{']) && !accepts(property, value) => {
                match serde_json::from_str::<Value>(text) {
                    Ok(decoded) if decoded.is_array() || decoded.is_object() => {
                        if accepts(property, &decoded) {
                            Some(decoded)
                        } else {
                            match lax(schema, property, &decoded, 0) {
                                Some(read) if accepts(property, &read) => Some(read),
                                _ => continue,
                            }
                        }
                    }
                    _ => continue,
                }
            }
            _ if holds_lax_text(value, 0) => match lax(schema, property, value, 0) {
                Some(read) => Some(read),
                None => continue,
            },
            _ => continue,
        };
        let fields = meant.get_or_insert_with(|| given.clone());
        match replacement {
            None => {
                fields.shift_remove(name);
            }
            Some(decoded) => {
                fields.insert(name.clone(), decoded);
            }
        }
    }
    meant.map(Value::Object)
}

/// `given` with each parameter given under another name it has (`AliasChoices`,
/// under [`OTHER_NAMES`] in the schema) under its property, as pydantic takes it: the
/// property's own name first, then the other names in order; the names not taken are
/// dropped, as pydantic ignores them. `None` when no other name is given.
fn other_names_taken(schema: &Value, given: &Map<String, Value>) -> Option<Map<String, Value>> {
    let others = schema.get(OTHER_NAMES)?.as_object()?;
    if !others.keys().any(|name| given.contains_key(name)) {
        return None;
    }
    let mut taken = given.clone();
    for (name, property) in others {
        let (Some(property), Some(value)) = (property.as_str(), taken.shift_remove(name)) else { continue };
        if !taken.contains_key(property) {
            taken.insert(property.to_string(), value);
        }
    }
    Some(taken)
}

/// `value` with each string that `schema` (a part of `root`) does not take, where it
/// takes a number or a boolean pydantic's lax mode reads the string as, replaced by
/// that value, at every depth; of an `anyOf`, the first branch that then takes it.
/// A place with an `enum` or a `const` takes no such string (pydantic reads none for
/// a `Literal`). `None` when nothing changes.
fn lax(root: &Value, schema: &Value, value: &Value, depth: usize) -> Option<Value> {
    let Value::Object(keywords) = schema else { return None };
    if depth > MAX_DEPTH {
        return None;
    }
    if let Some(target) = keyword(keywords, "$ref").and_then(Value::as_str).and_then(|r| resolve(root, r)) {
        return lax(root, target, value, depth + 1);
    }
    if let Some(branches) = keyword(keywords, "anyOf").and_then(Value::as_array) {
        // A string one branch takes is not read as another's number (a `Decimal`'s text).
        if (value.is_string() && branches.iter().any(|branch| takes_strings(root, branch, depth + 1)))
            || takes(root, schema, value, false)
        {
            return None;
        }
        return branches
            .iter()
            .find_map(|branch| lax(root, branch, value, depth + 1).filter(|read| takes(root, branch, read, false)));
    }
    match value {
        Value::String(text) => {
            if keyword(keywords, "enum").is_some() || keyword(keywords, "const").is_some() {
                return None;
            }
            let candidates = read_laxly(text);
            if candidates.is_empty() || takes(root, schema, value, false) {
                return None;
            }
            // A number with a fraction or an exponent is an integer for JSON Schema
            // (`1e3`), but not for pydantic, who reads it only where a float goes.
            let wanted = keyword(keywords, "type");
            candidates
                .into_iter()
                .filter(|(kind, _)| wanted.is_none_or(|wanted| names_type(wanted, kind)))
                .map(|(_, candidate)| candidate)
                .find(|candidate| takes(root, schema, candidate, false))
        }
        Value::Object(fields) => {
            let properties = keyword(keywords, "properties").and_then(Value::as_object);
            let additional = keyword(keywords, "additionalProperties");
            let mut read: Option<Map<String, Value>> = None;
            for (name, item) in fields {
                let Some(field) = properties.and_then(|p| p.get(name)).or(additional) else { continue };
                if let Some(item) = lax(root, field, item, depth + 1) {
                    read.get_or_insert_with(|| fields.clone()).insert(name.clone(), item);
                }
            }
            read.map(Value::Object)
        }
        Value::Array(items) => {
            let prefix = keyword(keywords, "prefixItems").and_then(Value::as_array);
            let rest = keyword(keywords, "items");
            let mut read: Option<Vec<Value>> = None;
            for (index, item) in items.iter().enumerate() {
                let Some(item_schema) = prefix.and_then(|prefix| prefix.get(index)).or(rest) else { continue };
                if let Some(item) = lax(root, item_schema, item, depth + 1) {
                    read.get_or_insert_with(|| items.clone())[index] = item;
                }
            }
            read.map(Value::Array)
        }
        _ => None,
    }
}

/// Whether `schema` takes some strings: a `type` naming `string`, an `anyOf` with a
/// branch that does, or no `type` at all.
fn takes_strings(root: &Value, schema: &Value, depth: usize) -> bool {
    let Value::Object(keywords) = schema else { return schema != &Value::Bool(false) };
    if depth > MAX_DEPTH {
        return true;
    }
    if let Some(target) = keyword(keywords, "$ref").and_then(Value::as_str).and_then(|r| resolve(root, r)) {
        return takes_strings(root, target, depth + 1);
    }
    if let Some(branches) = keyword(keywords, "anyOf").and_then(Value::as_array) {
        return branches.iter().any(|branch| takes_strings(root, branch, depth + 1));
    }
    keyword(keywords, "type").is_none_or(|wanted| names_type(wanted, "string"))
}

/// Whether `value` holds a string [`read_laxly`] reads as something: only then is
/// [`lax`] worth its walk through the schema.
fn holds_lax_text(value: &Value, depth: usize) -> bool {
    match value {
        Value::String(text) => !read_laxly(text).is_empty(),
        Value::Array(items) if depth < MAX_DEPTH => items.iter().any(|item| holds_lax_text(item, depth + 1)),
        Value::Object(fields) if depth < MAX_DEPTH => fields.values().any(|item| holds_lax_text(item, depth + 1)),
        _ => false,
    }
}

/// What pydantic's lax mode reads a string as where it wants a number or a boolean,
/// in that order: an integer (`" 1_000 "`, `"+7"`, `"3.00"`; never `"1.5"` or
/// `"1e3"`), a finite number (`"2.5"`, `".5"`, `"1e3"`), a boolean (`true`, `yes`,
/// `on`, `t`, `y`, `1` and their opposites, in any case), each with the JSON Schema
/// type it is read for.
fn read_laxly(text: &str) -> Vec<(&'static str, Value)> {
    let mut read = Vec::new();
    let trimmed = text.trim();
    // Most text is no number: one look at its characters says so, before any copy.
    let numeric = |b: u8| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.' | b'_' | b'e' | b'E');
    if !trimmed.is_empty() && trimmed.bytes().all(numeric) {
        read.extend(lax_integer(trimmed).map(|integer| ("integer", integer)));
        read.extend(lax_number(trimmed).map(|number| ("number", number)));
    }
    let is = |words: &[&str]| words.iter().any(|word| text.eq_ignore_ascii_case(word));
    if is(&["1", "on", "t", "true", "y", "yes"]) {
        read.push(("boolean", Value::Bool(true)));
    } else if is(&["0", "off", "f", "false", "n", "no"]) {
        read.push(("boolean", Value::Bool(false)));
    }
    read
}

/// Whether a `type` keyword takes values of the type `kind` (`number` takes integers).
fn names_type(wanted: &Value, kind: &str) -> bool {
    let names = |name: &str| name == kind || (name == "number" && kind == "integer");
    match wanted {
        Value::String(name) => names(name),
        Value::Array(names_given) => names_given.iter().filter_map(Value::as_str).any(names),
        _ => true,
    }
}

/// `digits` without the single underscores pydantic allows between two digits;
/// `None` when an underscore stands anywhere else.
fn without_underscores(digits: &str) -> Option<String> {
    let bytes = digits.as_bytes();
    let mut kept = String::with_capacity(digits.len());
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'_' {
            let between = i > 0 && bytes[i - 1].is_ascii_digit() && bytes.get(i + 1).is_some_and(u8::is_ascii_digit);
            if !between {
                return None;
            }
        } else {
            kept.push(b as char);
        }
    }
    Some(kept)
}

/// An integer as pydantic reads one from text: a sign, digits (underscores between
/// them), and nothing after but a point and zeros.
fn lax_integer(text: &str) -> Option<Value> {
    let (sign, rest) = match text.as_bytes().first()? {
        b'-' => ("-", &text[1..]),
        b'+' => ("", &text[1..]),
        _ => ("", text),
    };
    let digits = match rest.split_once('.') {
        Some((whole, zeros)) if !zeros.is_empty() && zeros.bytes().all(|b| b == b'0') => whole,
        Some(_) => return None,
        None => rest,
    };
    let digits = without_underscores(digits)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let digits = digits.trim_start_matches('0');
    let digits = if digits.is_empty() { "0" } else { digits };
    serde_json::from_str(&format!("{sign}{digits}")).ok()
}

/// A finite number as pydantic reads one from text of digits, signs, points,
/// exponents and underscores (Rust's reading of a float, which is Python's; JSON
/// cannot carry infinities and NaN, which such text never spells).
fn lax_number(text: &str) -> Option<Value> {
    let number: f64 = without_underscores(text)?.parse().ok()?;
    serde_json::Number::from_f64(number).map(Value::Number)
}

/// The arguments of a prompt or a resource template (SPEC §15), which MCP sends as
/// strings: a string the schema does not take, whose JSON is a value the schema
/// takes (`3`, `true`, `[1]`), is that value; everything else is as given.
pub fn texts_as_values(schema: &Value, args: &Value) -> Value {
    let (Value::Object(given), Some(Value::Object(properties))) = (args, schema.get("properties")) else {
        return args.clone();
    };
    let accepts = |property: &Value, value: &Value| takes(schema, property, value, false);
    let mut meant = given.clone();
    for (name, value) in given {
        let (Some(property), Value::String(text)) = (properties.get(name), value) else { continue };
        if accepts(property, value) {
            continue;
        }
        if let Ok(decoded) = serde_json::from_str::<Value>(text)
            && accepts(property, &decoded)
        {
            meant.insert(name.clone(), decoded);
        }
    }
    Value::Object(meant)
}

/// Every way a tool's return value breaks its output schema (SPEC §12); empty when
/// it matches. Places are the result's (`the result`, `items[2].name`).
pub fn check_output(schema: &Value, output: &Value) -> Vec<String> {
    let mut checker = Checker { root: schema, problems: Vec::new(), depth: 0, output: true };
    checker.value(schema, output, &At::Root);
    checker.problems
}

/// The one output check, made by [`super::Runtime::call`] for every surface: a
/// successful result whose value breaks the tool's output schema becomes a failed
/// call saying which part breaks the return annotation. Failed calls are left as
/// they are.
pub fn check_result(result: &mut super::ToolResult, tool: &crate::discovery::extract::Tool) {
    let Some(schema) = &tool.output else { return };
    // A cut output is only the start of its text: what shows it says it was cut.
    if !result.ok() || result.output_cut_from.is_some() {
        return;
    }
    // As pydantic validates a return value: unknown keys of a closed object (a
    // `TypedDict`, a model) are dropped, and what is left is the result (SPEC §5), so
    // the structured content always matches the output schema.
    let kept = keep_known(schema.value(), schema.value(), &result.output, 0);
    let problems = check_output(schema.value(), &kept);
    if problems.is_empty() {
        result.output = kept;
        return;
    }
    let annotation = tool.returns.annotation.as_deref().unwrap_or("?");
    let mut text = format!("`{}` returned a value that breaks its return annotation `{annotation}`:", tool.name);
    for problem in problems {
        text.push_str("\n- ");
        text.push_str(&problem);
    }
    result.outcome = super::Outcome::Invalid;
    result.output = Value::Null;
    result.error = Some(text);
}

/// Whether `schema` (a part of `root`) takes `value`, as arguments or as a result.
fn takes(root: &Value, schema: &Value, value: &Value, output: bool) -> bool {
    let mut checker = Checker { root, problems: Vec::new(), depth: 0, output };
    checker.value(schema, value, &At::Root);
    checker.problems.is_empty()
}

/// `value` less the keys a closed object of `schema` does not name (`additionalProperties:
/// false`), at every depth; of an `anyOf`, the first branch the value then matches.
fn keep_known(root: &Value, schema: &Value, value: &Value, depth: usize) -> Value {
    let Value::Object(keywords) = schema else { return value.clone() };
    if depth > MAX_DEPTH {
        return value.clone();
    }
    if let Some(target) = keywords.get("$ref").and_then(Value::as_str).and_then(|r| resolve(root, r)) {
        return keep_known(root, target, value, depth + 1);
    }
    if let Some(branches) = keywords.get("anyOf").and_then(Value::as_array) {
        for branch in branches {
            let kept = keep_known(root, branch, value, depth + 1);
            if takes(root, branch, &kept, true) {
                return kept;
            }
        }
        return value.clone();
    }
    match value {
        Value::Object(fields) => {
            let properties = keywords.get("properties").and_then(Value::as_object);
            let additional = keywords.get("additionalProperties");
            let mut kept = Map::new();
            for (name, item) in fields {
                match (properties.and_then(|p| p.get(name)), additional) {
                    (Some(property), _) => {
                        kept.insert(name.clone(), keep_known(root, property, item, depth + 1));
                    }
                    (None, Some(Value::Bool(false))) => {}
                    (None, Some(extra)) => {
                        kept.insert(name.clone(), keep_known(root, extra, item, depth + 1));
                    }
                    (None, None) => {
                        kept.insert(name.clone(), item.clone());
                    }
                }
            }
            Value::Object(kept)
        }
        Value::Array(items) => {
            let prefix = keywords.get("prefixItems").and_then(Value::as_array);
            let rest = keywords.get("items");
            let kept = items.iter().enumerate().map(|(index, item)| {
                match prefix.and_then(|prefix| prefix.get(index)).or(rest) {
                    Some(item_schema) => keep_known(root, item_schema, item, depth + 1),
                    None => item.clone(),
                }
            });
            Value::Array(kept.collect())
        }
        other => other.clone(),
    }
}

/// The error text of a call whose arguments break the schema: every problem, then
/// the parameters the tool has.
pub fn report(tool: &str, schema: &Value, problems: &[String]) -> String {
    let mut text = format!("invalid arguments for `{tool}`:");
    for problem in problems {
        text.push_str("\n- ");
        text.push_str(problem);
    }
    text.push('\n');
    text.push_str(&parameters(schema));
    text
}

/// `valid parameters: name (string, required), count (integer)`.
fn parameters(schema: &Value) -> String {
    let required: Vec<&str> = schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let listed: Vec<String> = schema["properties"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, property)| {
            let kind = type_name(schema, property, 0);
            if required.contains(&name.as_str()) {
                format!("{name} ({kind}, required)")
            } else {
                format!("{name} ({kind})")
            }
        })
        .collect();
    if listed.is_empty() {
        "the tool takes no parameters".to_string()
    } else {
        format!("valid parameters: {}", listed.join(", "))
    }
}

/// A short name for what a schema accepts: `integer`, `string or null`, `array`.
fn type_name(root: &Value, schema: &Value, depth: usize) -> String {
    if depth > 8 {
        return "any".to_string();
    }
    if let Some(target) = schema["$ref"].as_str().and_then(|r| resolve(root, r)) {
        return type_name(root, target, depth + 1);
    }
    match &schema["type"] {
        Value::String(kind) => return kind.clone(),
        Value::Array(kinds) => return kinds.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" or "),
        _ => {}
    }
    if let Some(branches) = schema["anyOf"].as_array() {
        let mut names: Vec<String> = Vec::new();
        for name in branches.iter().map(|b| type_name(root, b, depth + 1)) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
        return names.join(" or ");
    }
    if let Some(values) = schema["enum"].as_array() {
        return format!("one of {}", values.iter().map(Value::to_string).collect::<Vec<_>>().join(", "));
    }
    "any".to_string()
}

fn resolve<'s>(root: &'s Value, reference: &str) -> Option<&'s Value> {
    root.pointer(reference.strip_prefix('#')?)
}

/// A keyword of a schema object. Schema objects hold a handful of keywords: a scan
/// of them is quicker than hashing the name.
fn keyword<'s>(schema: &'s Map<String, Value>, name: &str) -> Option<&'s Value> {
    if schema.len() > 12 {
        return schema.get(name);
    }
    schema.iter().find_map(|(key, value)| (key == name).then_some(value))
}

struct Checker<'s> {
    root: &'s Value,
    problems: Vec<String>,
    depth: usize,
    /// Checking a return value rather than arguments: only the wording differs.
    output: bool,
}

/// Where a value sits in the arguments (`items[2].name`); text only for a problem.
#[derive(Clone, Copy)]
enum At<'p> {
    Root,
    Field(&'p At<'p>, &'p str),
    Item(&'p At<'p>, usize),
}

impl At<'_> {
    fn is_root(&self) -> bool {
        matches!(self, At::Root)
    }
}

impl std::fmt::Display for At<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            At::Root => Ok(()),
            At::Field(At::Root, name) => f.write_str(name),
            At::Field(parent, name) => write!(f, "{parent}.{name}"),
            At::Item(parent, index) => write!(f, "{parent}[{index}]"),
        }
    }
}

impl<'s> Checker<'s> {
    /// `the arguments` (or `the result`), or the path in backticks.
    fn place(&self, path: &At<'_>) -> String {
        match (path.is_root(), self.output) {
            (true, false) => "the arguments".to_string(),
            (true, true) => "the result".to_string(),
            (false, _) => format!("`{path}`"),
        }
    }

    /// Whether `path` is the arguments object, whose fields are parameters.
    fn at_parameters(&self, path: &At<'_>) -> bool {
        path.is_root() && !self.output
    }

    fn problem(&mut self, path: &At<'_>, message: impl std::fmt::Display) {
        self.problems.push(format!("{}: {message}", self.place(path)));
    }

    fn value(&mut self, schema: &'s Value, value: &Value, path: &At<'_>) {
        if self.depth > MAX_DEPTH {
            return;
        }
        self.depth += 1;
        self.keywords(schema, value, path);
        self.depth -= 1;
    }

    fn keywords(&mut self, schema: &'s Value, value: &Value, path: &At<'_>) {
        let schema = match schema {
            Value::Bool(true) => return,
            Value::Bool(false) => return self.problem(path, "no value is allowed here"),
            Value::Object(schema) => schema,
            _ => return,
        };
        if let Some(target) = keyword(schema, "$ref").and_then(Value::as_str).and_then(|r| resolve(self.root, r)) {
            self.value(target, value, path);
        }
        if let Some(branches) = keyword(schema, "anyOf").and_then(Value::as_array) {
            self.any_of(branches, value, path);
        }
        // JSON Schema 2020-12's composition and conditionals, as a tool's schema may
        // carry them (`json_schema_extra`, `WithJsonSchema`).
        for branch in keyword(schema, "allOf").and_then(Value::as_array).into_iter().flatten() {
            self.value(branch, value, path);
        }
        if let Some(branches) = keyword(schema, "oneOf").and_then(Value::as_array) {
            let taken = branches.iter().filter(|branch| self.takes(branch, value)).count();
            if taken != 1 {
                let names: Vec<String> = branches.iter().map(|b| type_name(self.root, b, 0)).collect();
                self.problem(
                    path,
                    format!(
                        "expected exactly one of {}, got {} that {taken} of them take",
                        names.join(", "),
                        show(value)
                    ),
                );
            }
        }
        if let Some(excluded) = keyword(schema, "not")
            && self.takes(excluded, value)
        {
            self.problem(path, format!("{} is a value this place does not allow", show(value)));
        }
        if let Some(condition) = keyword(schema, "if") {
            let branch = if self.takes(condition, value) { keyword(schema, "then") } else { keyword(schema, "else") };
            if let Some(branch) = branch {
                self.value(branch, value, path);
            }
        }
        if let Some(expected) = keyword(schema, "type")
            && !type_matches(expected, value)
        {
            let expected = match expected {
                Value::Array(kinds) => kinds.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" or "),
                other => other.as_str().unwrap_or("?").to_string(),
            };
            // Nothing else can be said about a value of the wrong type.
            return self.problem(path, format!("expected {expected}, got {}", show(value)));
        }
        if let Some(allowed) = keyword(schema, "enum").and_then(Value::as_array)
            && !allowed.iter().any(|candidate| same(candidate, value))
        {
            let listed: Vec<String> = allowed.iter().map(Value::to_string).collect();
            self.problem(path, format!("{} is not one of {}", show(value), listed.join(", ")));
        }
        if let Some(constant) = keyword(schema, "const")
            && !same(constant, value)
        {
            self.problem(path, format!("expected {constant}, got {}", show(value)));
        }
        match value {
            Value::Object(object) => self.object(schema, object, path),
            Value::Array(items) => self.array(schema, items, path),
            Value::String(text) => self.string(schema, text, path),
            Value::Number(_) => self.number(schema, value, path),
            _ => {}
        }
    }

    /// Whether `schema` takes `value`, without saying why not.
    fn takes(&self, schema: &'s Value, value: &Value) -> bool {
        let mut inner = Checker { root: self.root, problems: Vec::new(), depth: self.depth, output: self.output };
        inner.value(schema, value, &At::Root);
        inner.problems.is_empty()
    }

    fn any_of(&mut self, branches: &'s [Value], value: &Value, path: &At<'_>) {
        let mut failures = Vec::new();
        for branch in branches {
            let mut inner = Checker { root: self.root, problems: Vec::new(), depth: self.depth, output: self.output };
            inner.value(branch, value, path);
            if inner.problems.is_empty() {
                return;
            }
            failures.push((branch, inner.problems));
        }
        // When exactly one branch takes values of this JSON type, its problems say
        // more than a list of alternatives (`Optional[int]` given 0.5).
        let mut typed = failures.iter().filter(|(branch, _)| branch.get("type").is_none_or(|t| type_matches(t, value)));
        if let (Some((_, problems)), None) = (typed.next(), typed.next()) {
            self.problems.extend(problems.iter().cloned());
            return;
        }
        let names: Vec<String> = branches.iter().map(|b| type_name(self.root, b, 0)).collect();
        if names.iter().all(|name| name == "any") {
            // Alternatives that are no types (`{"required": [...]}`): what each lacks.
            let lacks: Vec<String> = failures.iter().map(|(_, problems)| problems.join(", ")).collect();
            return self.problem(path, format!("none of the alternatives holds: {}", lacks.join("; or ")));
        }
        self.problem(path, format!("expected {}, got {}", names.join(" or "), show(value)));
    }

    fn object(&mut self, schema: &'s Map<String, Value>, object: &Map<String, Value>, path: &At<'_>) {
        let properties = keyword(schema, "properties").and_then(Value::as_object);
        for name in
            keyword(schema, "required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str)
        {
            if keyword(object, name).is_none() {
                if self.at_parameters(path) {
                    self.problems.push(format!("missing required parameter `{name}`"));
                } else {
                    self.problem(path, format!("missing required field `{name}`"));
                }
            }
        }
        let additional = keyword(schema, "additionalProperties");
        for (name, item) in object {
            match properties.and_then(|p| keyword(p, name)) {
                Some(property) => self.value(property, item, &At::Field(path, name)),
                None => match additional {
                    Some(Value::Bool(false)) if self.at_parameters(path) => {
                        let known = properties.map(|p| p.keys().map(String::as_str)).into_iter().flatten();
                        let close = crate::suggest::closest(name, known, |_| None);
                        self.problems
                            .push(format!("unknown parameter `{name}`{}", crate::suggest::did_you_mean(&close)));
                    }
                    Some(Value::Bool(false)) => self.problem(path, format!("unknown field `{name}`")),
                    Some(extra) => self.value(extra, item, &At::Field(path, name)),
                    None => {}
                },
            }
        }
    }

    fn array(&mut self, schema: &'s Map<String, Value>, items: &[Value], path: &At<'_>) {
        let count = items.len();
        if let Some(min) = keyword(schema, "minItems").and_then(Value::as_u64)
            && (count as u64) < min
        {
            self.problem(path, format!("expected at least {min} items, got {count}"));
        }
        if let Some(max) = keyword(schema, "maxItems").and_then(Value::as_u64)
            && (count as u64) > max
        {
            self.problem(path, format!("expected at most {max} items, got {count}"));
        }
        let prefix = keyword(schema, "prefixItems").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        for (i, item) in items.iter().enumerate() {
            let at = At::Item(path, i);
            match prefix.get(i) {
                Some(item_schema) => self.value(item_schema, item, &at),
                // `items: false` after a tuple's positions is reported by maxItems already.
                None => match keyword(schema, "items") {
                    Some(Value::Bool(false)) if !prefix.is_empty() && keyword(schema, "maxItems").is_some() => {}
                    Some(item_schema) => self.value(item_schema, item, &at),
                    None => {}
                },
            }
        }
        if keyword(schema, "uniqueItems") == Some(&Value::Bool(true)) {
            let mut seen: Vec<(String, usize)> = Vec::with_capacity(count);
            for (i, item) in items.iter().enumerate() {
                let key = canonical(item);
                match seen.iter().find(|(other, _)| *other == key) {
                    Some((_, first)) => {
                        self.problem(path, format!("items {first} and {i} are equal; items must be unique"))
                    }
                    None => seen.push((key, i)),
                }
            }
        }
    }

    fn string(&mut self, schema: &'s Map<String, Value>, text: &str, path: &At<'_>) {
        let length = text.chars().count() as u64;
        if let Some(min) = keyword(schema, "minLength").and_then(Value::as_u64)
            && length < min
        {
            self.problem(path, format!("text has {length} characters, fewer than the minimum {min}"));
        }
        if let Some(max) = keyword(schema, "maxLength").and_then(Value::as_u64)
            && length > max
        {
            self.problem(path, format!("text has {length} characters, more than the maximum {max}"));
        }
        if let Some(pattern) = keyword(schema, "pattern").and_then(Value::as_str)
            && let Ok(regex) = regex_lite::Regex::new(pattern)
            && !regex.is_match(text)
        {
            self.problem(path, format!("{} does not match the pattern `{pattern}`", show_text(text)));
        }
        if let Some(format) = keyword(schema, "format").and_then(Value::as_str)
            && let Some(expected) = formats::check(format, text)
        {
            self.problem(path, format!("{} is not a valid {format} ({expected})", show_text(text)));
        }
        if keyword(schema, "contentMediaType").and_then(Value::as_str) == Some("application/json") {
            match serde_json::from_str::<Value>(text) {
                Ok(document) => {
                    if let Some(content) = keyword(schema, "contentSchema") {
                        self.value(content, &document, path);
                    }
                }
                Err(err) => self.problem(path, format!("{} is not JSON text ({err})", show_text(text))),
            }
        }
    }

    fn number(&mut self, schema: &'s Map<String, Value>, value: &Value, path: &At<'_>) {
        let Some(n) = value.as_f64() else { return };
        let bound = |key: &str| keyword(schema, key).and_then(Value::as_f64);
        type Holds = fn(f64, f64) -> bool;
        let checks: [(&str, Holds, &str); 4] = [
            ("minimum", |n, m| n >= m, "less than the minimum"),
            ("maximum", |n, m| n <= m, "greater than the maximum"),
            ("exclusiveMinimum", |n, m| n > m, "not greater than the exclusive minimum"),
            ("exclusiveMaximum", |n, m| n < m, "not less than the exclusive maximum"),
        ];
        for (key, holds, what) in checks {
            if let Some(limit) = bound(key)
                && !holds(n, limit)
            {
                self.problem(path, format!("{value} is {what} {}", schema[key]));
            }
        }
        if let Some(step) = bound("multipleOf").filter(|step| *step > 0.0) {
            let multiple = match (value.as_i64(), schema["multipleOf"].as_i64()) {
                (Some(n), Some(step)) => n % step == 0,
                _ => {
                    let quotient = n / step;
                    (quotient - quotient.round()).abs() <= 1e-9 * quotient.abs().max(1.0)
                }
            };
            if !multiple {
                self.problem(path, format!("{value} is not a multiple of {}", schema["multipleOf"]));
            }
        }
    }
}

fn type_matches(expected: &Value, value: &Value) -> bool {
    match expected {
        Value::String(kind) => kind_matches(kind, value),
        Value::Array(kinds) => kinds.iter().filter_map(Value::as_str).any(|kind| kind_matches(kind, value)),
        _ => true,
    }
}

fn kind_matches(kind: &str, value: &Value) -> bool {
    match kind {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => is_integer(value),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => true,
    }
}

/// JSON Schema counts `1.0` as an integer.
fn is_integer(value: &Value) -> bool {
    value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|n| n.is_finite() && n.fract() == 0.0)
}

/// Equality as JSON Schema means it: `1` and `1.0` are the same number.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// A text key equal for values that are [`same`]: numbers as f64, objects sorted.
fn canonical(value: &Value) -> String {
    match value {
        Value::Number(n) => n.as_f64().map_or_else(|| n.to_string(), |f| format!("{f:?}")),
        Value::Array(items) => format!("[{}]", items.iter().map(canonical).collect::<Vec<_>>().join(",")),
        Value::Object(object) => {
            let mut entries: Vec<String> = object.iter().map(|(k, v)| format!("{k:?}:{}", canonical(v))).collect();
            entries.sort();
            format!("{{{}}}", entries.join(","))
        }
        other => other.to_string(),
    }
}

/// `string "abc"`, `integer 3`, `an object`: what was given, briefly.
fn show(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) if is_integer(value) && !n.is_f64() => format!("integer {n}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(text) => format!("string {}", show_text(text)),
        Value::Array(items) => format!("an array of {} items", items.len()),
        Value::Object(_) => "an object".to_string(),
    }
}

fn show_text(text: &str) -> String {
    const MAX: usize = 60;
    if text.chars().count() <= MAX {
        return format!("{text:?}");
    }
    let cut: String = text.chars().take(MAX).collect();
    format!("{:?}…", cut)
}

#[cfg(test)]
mod kept_tests {
    use serde_json::json;

    use super::keep_known;

    #[test]
    fn unknown_keys_of_closed_objects_are_dropped_at_every_depth_as_pydantic_does() {
        let schema = json!({"$ref": "#/$defs/Row", "$defs": {
            "Row": {"type": "object", "properties": {"id": {"type": "integer"},
                    "tags": {"type": "array", "items": {"$ref": "#/$defs/Tag"}},
                    "extra": {"type": "object", "additionalProperties": {"type": "integer"}}},
                    "required": ["id"], "additionalProperties": false},
            "Tag": {"anyOf": [{"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"],
                              "additionalProperties": false}, {"type": "null"}]}}});
        let value = json!({"id": 1, "label": "x", "tags": [{"name": "a", "colour": "red"}, null], "extra": {"n": 2}});
        assert_eq!(
            keep_known(&schema, &schema, &value, 0),
            json!({"id": 1, "tags": [{"name": "a"}, null], "extra": {"n": 2}})
        );
    }
}

#[cfg(test)]
mod meant_tests {
    use serde_json::json;

    use super::as_meant;

    fn schema() -> serde_json::Value {
        json!({"type": "object", "properties": {
            "pattern": {"type": "string"},
            "root": {"type": "string", "default": "."},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null},
            "tags": {"type": "array", "items": {"type": "string"}},
            "label": {"type": "string"},
            "point": {"$ref": "#/$defs/Point"}},
            "required": ["pattern", "label"],
            "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}}})
    }

    #[test]
    fn null_for_an_optional_parameter_that_is_not_nullable_means_not_given() {
        let meant = as_meant(&schema(), &json!({"pattern": "*.py", "root": null, "note": null, "label": "a"}));
        assert_eq!(meant, Some(json!({"pattern": "*.py", "note": null, "label": "a"})));
        // A required parameter's null is the caller's mistake, reported as such.
        assert_eq!(as_meant(&schema(), &json!({"pattern": null, "label": "a"})), None);
    }

    #[test]
    fn a_string_that_is_the_json_text_of_a_valid_array_or_object_is_decoded() {
        let meant = as_meant(
            &schema(),
            &json!({"pattern": "p", "label": "[1]", "tags": "[\"a\", \"b\"]", "point": "{\"x\": 1}"}),
        );
        assert_eq!(meant, Some(json!({"pattern": "p", "label": "[1]", "tags": ["a", "b"], "point": {"x": 1}})));
        // Text that is not a valid value stays as it is, for the check to report.
        assert_eq!(as_meant(&schema(), &json!({"pattern": "p", "label": "a", "tags": "[1, 2]"})), None);
        assert_eq!(as_meant(&schema(), &json!({"pattern": "p", "label": "a", "tags": "[oops"})), None);
    }

    #[test]
    fn a_number_or_boolean_sent_as_text_is_read_as_pydantic_lax_mode_reads_it() {
        let schema = json!({"type": "object", "properties": {
            "count": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "ratio": {"type": "number"},
            "flag": {"type": "boolean"},
            "name": {"type": "string"},
            "level": {"enum": [1, 2], "type": "integer"},
            "price": {"anyOf": [{"type": "number"}, {"type": "string", "pattern": "^\\d+(\\.\\d{1,2})?$"}]},
            "rows": {"type": "array", "items": {"$ref": "#/$defs/Row"}}},
            "$defs": {"Row": {"type": "object", "properties": {"n": {"type": "integer"}}}}});
        let read = |args: serde_json::Value| as_meant(&schema, &args);
        for (given, meant) in [
            ("1", json!(1)),
            (" 1_000 ", json!(1000)),
            ("+7", json!(7)),
            ("-3.00", json!(-3)),
            ("007", json!(7)),
            ("99999999999999999999999", serde_json::from_str("99999999999999999999999").unwrap()),
        ] {
            assert_eq!(read(json!({"count": given})), Some(json!({"count": meant})), "{given}");
        }
        for refused in ["1.5", "1e3", "1_", "_1", "1__0", "0x10", "1.", "", "inf", "one"] {
            assert_eq!(read(json!({"count": refused})), None, "{refused}");
        }
        assert_eq!(read(json!({"ratio": ".5"})), Some(json!({"ratio": 0.5})));
        assert_eq!(read(json!({"ratio": "1e3"})), Some(json!({"ratio": 1000.0})));
        assert_eq!(read(json!({"ratio": "nan"})), None);
        for (given, meant) in [("true", true), ("YES", true), ("on", true), ("t", true), ("1", true), ("n", false)] {
            assert_eq!(read(json!({"flag": given})), Some(json!({"flag": meant})), "{given}");
        }
        assert_eq!(read(json!({"flag": " true"})), None);
        // Where a string is taken, it stays one: a string, a `Literal`, a `Decimal`'s text.
        assert_eq!(read(json!({"name": "1", "level": "1", "price": "1.234"})), None);
        assert_eq!(read(json!({"rows": [{"n": "2"}, {"n": 3}]})), Some(json!({"rows": [{"n": 2}, {"n": 3}]})));
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn composition_and_conditionals_are_checked() {
        let schema = json!({
            "type": "object",
            "properties": {"kind": {"type": "string"}, "phone": {"type": "string"}, "email": {"type": "string"}},
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"kind": {"const": "phone"}}, "required": ["kind"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "not": {"required": ["phone", "email"]},
        });
        assert_eq!(check(&schema, &json!({"kind": "phone", "phone": "1"})), Vec::<String>::new());
        assert_eq!(check(&schema, &json!({"email": "a@b"})), Vec::<String>::new());
        assert_eq!(check(&schema, &json!({"kind": "phone", "email": "a@b"})), ["missing required parameter `phone`"]);
        let problems = check(&schema, &json!({}));
        assert!(
            problems[0].contains("none of the alternatives holds: missing required parameter `phone`; or"),
            "{problems:?}"
        );
        let both = check(&schema, &json!({"kind": "phone", "phone": "1", "email": "a@b"}));
        assert!(both.iter().any(|p| p.contains("does not allow")), "{both:?}");
        let one_of = json!({"oneOf": [{"type": "integer"}, {"minimum": 0}]});
        assert_eq!(check(&one_of, &json!(-1)), Vec::<String>::new());
        assert!(check(&one_of, &json!(5))[0].contains("exactly one of"));
    }
    use serde_json::json;

    use super::*;

    fn problems(schema: Value, args: Value) -> Vec<String> {
        check(&schema, &args)
    }

    #[test]
    fn every_problem_is_listed() {
        let schema = json!({
            "type": "object",
            "properties": {"count": {"type": "integer", "minimum": 1}, "name": {"type": "string"}},
            "required": ["name"],
            "additionalProperties": false
        });
        let found = problems(schema, json!({"count": 0, "nmae": "x"}));
        assert_eq!(
            found,
            vec![
                "missing required parameter `name`",
                "`count`: 0 is less than the minimum 1",
                "unknown parameter `nmae`; did you mean `name`?"
            ]
        );
    }

    #[test]
    fn integers_may_be_written_with_a_fraction_of_zero() {
        let schema = json!({"type": "integer"});
        assert!(problems(schema.clone(), json!(3.0)).is_empty());
        assert_eq!(problems(schema, json!(3.5)), vec!["the arguments: expected integer, got number 3.5"]);
    }

    #[test]
    fn optional_reports_the_problem_of_the_matching_branch() {
        let schema = json!({"anyOf": [{"type": "integer", "maximum": 5}, {"type": "null"}]});
        assert!(problems(schema.clone(), Value::Null).is_empty());
        assert_eq!(problems(schema.clone(), json!(9)), vec!["the arguments: 9 is greater than the maximum 5"]);
        assert_eq!(problems(schema, json!("x")), vec!["the arguments: expected integer or null, got string \"x\""]);
    }

    #[test]
    fn references_resolve_against_the_root() {
        let schema = json!({
            "type": "object",
            "properties": {"node": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {"type": "object", "properties": {"next": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}, "v": {"type": "integer"}}, "required": ["v"]}}
        });
        assert!(problems(schema.clone(), json!({"node": {"v": 1, "next": {"v": 2, "next": null}}})).is_empty());
        assert_eq!(
            problems(schema, json!({"node": {"v": 1, "next": {"next": null}}})),
            vec!["`node.next`: missing required field `v`"]
        );
    }

    #[test]
    fn tuples_sets_and_lengths() {
        let pair = json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "minItems": 2, "maxItems": 2, "items": false});
        assert!(problems(pair.clone(), json!(["a", 1])).is_empty());
        assert_eq!(problems(pair.clone(), json!(["a", 1, 2])), vec!["the arguments: expected at most 2 items, got 3"]);
        assert_eq!(problems(pair, json!([1, 1])), vec!["`[0]`: expected string, got integer 1"]);
        let set = json!({"type": "array", "items": {"type": "number"}, "uniqueItems": true});
        assert_eq!(
            problems(set, json!([1, 2, 1.0])),
            vec!["the arguments: items 0 and 2 are equal; items must be unique"]
        );
    }

    #[test]
    fn strings_lengths_patterns_and_formats() {
        let schema = json!({"type": "string", "minLength": 2, "maxLength": 4, "pattern": "^[a-z]+$"});
        assert!(problems(schema.clone(), json!("abc")).is_empty());
        assert_eq!(problems(schema.clone(), json!("é")).len(), 2);
        assert_eq!(problems(schema, json!("ABCDE")).len(), 2);
        let unsupported = json!({"type": "string", "pattern": "^(?=a)"});
        assert!(problems(unsupported, json!("b")).is_empty());
        for (format, good, bad) in [
            ("date", "2024-02-29", "2023-02-29"),
            ("date-time", "2024-01-31T23:59:59.5+01:00", "2024-01-31 25:00"),
            ("time", "08:30", "8:30"),
            ("duration", "P1DT2H30M", "PT"),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", "123e4567e89b12d3a456426614174000"),
        ] {
            let schema = json!({"type": "string", "format": format});
            assert!(problems(schema.clone(), json!(good)).is_empty(), "{format} {good}");
            assert_eq!(problems(schema, json!(bad)).len(), 1, "{format} {bad}");
        }
    }

    #[test]
    fn email_uri_and_ip_formats_are_checked_as_pydantic_checks_them() {
        for (format, good, bad) in [
            ("email", "Someone <someone@example.com>", "someone@localhost"),
            ("uri", "https://user:pw@example.com/a?b#c", "https://example.com/a b"),
            ("ipv4", "192.0.2.1", "192.0.2.01"),
            ("ipv6", "fe80::1%eth0", "2001:db8:::1"),
        ] {
            let schema = json!({"type": "string", "format": format});
            assert!(problems(schema.clone(), json!(good)).is_empty(), "{format} {good}");
            assert_eq!(problems(schema, json!(bad)).len(), 1, "{format} {bad}");
        }
    }

    #[test]
    fn json_text_is_parsed_and_checked_against_its_content_schema() {
        let schema = json!({"type": "string", "contentMediaType": "application/json", "contentSchema": {"type": "array", "items": {"type": "integer"}}});
        assert!(problems(schema.clone(), json!("[1, 2]")).is_empty());
        assert_eq!(problems(schema.clone(), json!("[1, \"x\"]")), vec!["`[1]`: expected integer, got string \"x\""]);
        let not_json = problems(schema, json!("[1,"));
        assert_eq!(not_json.len(), 1);
        assert!(not_json[0].starts_with("the arguments: \"[1,\" is not JSON text"), "{not_json:?}");
    }

    #[test]
    fn numbers_bounds_and_multiples() {
        let schema = json!({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "multipleOf": 0.25});
        assert!(problems(schema.clone(), json!(0.75)).is_empty());
        assert_eq!(problems(schema.clone(), json!(0)).len(), 1);
        assert_eq!(problems(schema, json!(0.3)), vec!["the arguments: 0.3 is not a multiple of 0.25"]);
    }

    #[test]
    fn enums_compare_numbers_by_value() {
        let schema = json!({"enum": [1, "a"]});
        assert!(problems(schema.clone(), json!(1.0)).is_empty());
        assert_eq!(problems(schema, json!("b")), vec!["the arguments: string \"b\" is not one of 1, \"a\""]);
    }

    #[test]
    fn report_names_the_valid_parameters() {
        let schema = json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
            "required": ["a"]
        });
        let text = report("tool_x", &schema, &["unknown parameter `c`".to_string()]);
        assert_eq!(
            text,
            "invalid arguments for `tool_x`:\n- unknown parameter `c`\nvalid parameters: a (integer, required), b (string or null)"
        );
    }
}
