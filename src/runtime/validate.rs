//! Arguments against a tool's schema, in Rust, before any Python runs (SPEC §5), and
//! return values against its output schema, after (SPEC §12: [`check_result`]).
//!
//! Covers the JSON Schema subset lcp emits: `type`, `properties`, `required`,
//! `additionalProperties`, `items`, `prefixItems`, `enum`, `const`, `anyOf`,
//! `$ref`/`$defs`, numeric bounds and `multipleOf`, string lengths, `pattern`,
//! array lengths, `uniqueItems` and the formats `date`, `date-time`, `time`,
//! `duration` and `uuid`. Every problem is reported with the place it sits.
//! A `pattern` that `regex-lite` cannot compile (look-around, back-references,
//! Unicode classes) is not checked: Python gets the value and decides.

use serde_json::{Map, Value};

/// Values deeper than this are not looked into (serde_json parses at most 128 levels).
const MAX_DEPTH: usize = 256;

/// Every way `args` breaks `schema`; empty when the arguments are valid.
pub fn check(schema: &Value, args: &Value) -> Vec<String> {
    let mut checker = Checker { root: schema, problems: Vec::new(), depth: 0, output: false };
    checker.value(schema, args, &At::Root);
    checker.problems
}

/// Every way a tool's return value breaks its output schema (SPEC §12); empty when
/// it matches. Places are the result's (`the result`, `items[2].name`).
pub fn check_output(schema: &Value, output: &Value) -> Vec<String> {
    let mut checker = Checker { root: schema, problems: Vec::new(), depth: 0, output: true };
    checker.value(schema, output, &At::Root);
    checker.problems
}

/// The one output check of every call path (`lcp call`, `lcp serve`, `lcp test`): a
/// successful result whose value breaks the tool's output schema becomes a failed
/// call saying which part breaks the return annotation. Failed calls are left as
/// they are.
pub fn check_result(result: &mut super::ToolResult, tool: &crate::extract::Tool) {
    let Some(schema) = &tool.output else { return };
    if !result.ok {
        return;
    }
    let problems = check_output(schema.value(), &result.output);
    if problems.is_empty() {
        return;
    }
    let annotation = tool.returns.annotation.as_deref().unwrap_or("?");
    let mut text = format!("`{}` returned a value that breaks its return annotation `{annotation}`:", tool.name);
    for problem in problems {
        text.push_str("\n- ");
        text.push_str(&problem);
    }
    result.ok = false;
    result.output = Value::Null;
    result.error = Some(text);
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
                        self.problems.push(format!("unknown parameter `{name}`"))
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
        if let Some(format) = keyword(schema, "format").and_then(Value::as_str) {
            let example = match format {
                "date" => (!is_date(text)).then_some("YYYY-MM-DD"),
                "date-time" => (!is_date_time(text)).then_some("YYYY-MM-DDTHH:MM:SS, optionally with a time zone"),
                "time" => (!is_time(text)).then_some("HH:MM:SS, optionally with a time zone"),
                "duration" => (!is_duration(text)).then_some("an ISO 8601 duration such as P1DT2H30M"),
                "uuid" => (!is_uuid(text)).then_some("8-4-4-4-12 hexadecimal digits"),
                _ => None,
            };
            if let Some(example) = example {
                self.problem(path, format!("{} is not a valid {format} ({example})", show_text(text)));
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

fn digits(text: &str, count: usize) -> Option<(u32, &str)> {
    let head = text.get(..count)?;
    if !head.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((head.parse().ok()?, &text[count..]))
}

/// `YYYY-MM-DD`, a real calendar day.
fn is_date(text: &str) -> bool {
    date_prefix(text).is_some_and(str::is_empty)
}

fn date_prefix(text: &str) -> Option<&str> {
    let (year, rest) = digits(text, 4)?;
    let (month, rest) = digits(rest.strip_prefix('-')?, 2)?;
    let (day, rest) = digits(rest.strip_prefix('-')?, 2)?;
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    (1..=days).contains(&day).then_some(rest)
}

/// `HH:MM[:SS[.fraction]]` with an optional `Z` or `±HH:MM` (what Python's
/// `fromisoformat` reads; RFC 3339 would demand the seconds and the offset).
fn is_time(text: &str) -> bool {
    let Some((hour, rest)) = digits(text, 2) else { return false };
    let Some((minute, mut rest)) = rest.strip_prefix(':').and_then(|r| digits(r, 2)) else { return false };
    if let Some((second, after)) = rest.strip_prefix(':').and_then(|r| digits(r, 2)) {
        if second > 60 {
            return false;
        }
        rest = after;
        if let Some(fraction) = rest.strip_prefix(['.', ',']) {
            let count = fraction.bytes().take_while(u8::is_ascii_digit).count();
            if count == 0 {
                return false;
            }
            rest = &fraction[count..];
        }
    }
    hour < 24 && minute < 60 && is_offset(rest)
}

fn is_offset(text: &str) -> bool {
    if text.is_empty() || text == "Z" || text == "z" {
        return true;
    }
    let Some(rest) = text.strip_prefix(['+', '-']) else { return false };
    let Some((hours, rest)) = digits(rest, 2) else { return false };
    let rest = rest.strip_prefix(':').unwrap_or(rest);
    matches!(digits(rest, 2), Some((minutes, "")) if hours < 24 && minutes < 60)
}

/// A date, `T` (or a space), a time.
fn is_date_time(text: &str) -> bool {
    date_prefix(text).and_then(|rest| rest.strip_prefix(['T', 't', ' '])).is_some_and(is_time)
}

/// `P[nW][nD][T[nH][nM][nS]]` with at least one part.
fn is_duration(text: &str) -> bool {
    let Some(rest) = text.strip_prefix('-').unwrap_or(text).strip_prefix('P') else { return false };
    let (date, time) = match rest.split_once('T') {
        Some((date, time)) if !time.is_empty() => (date, Some(time)),
        Some(_) => return false,
        None => (rest, None),
    };
    let parts_ok = |mut text: &str, units: &[char]| -> Option<usize> {
        let mut count = 0;
        let mut allowed = units;
        while !text.is_empty() {
            let number = text.bytes().take_while(|b| b.is_ascii_digit() || *b == b'.' || *b == b',').count();
            let unit = text[number..].chars().next()?;
            let position = allowed.iter().position(|u| *u == unit)?;
            if number == 0 {
                return None;
            }
            allowed = &allowed[position + 1..];
            text = &text[number + unit.len_utf8()..];
            count += 1;
        }
        Some(count)
    };
    let Some(date_parts) = parts_ok(date, &['W', 'D']) else { return false };
    let time_parts = match time {
        Some(time) => match parts_ok(time, &['H', 'M', 'S']) {
            Some(count) => count,
            None => return false,
        },
        None => 0,
    };
    date_parts + time_parts > 0
}

fn is_uuid(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(group, len)| group.len() == len && group.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
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
                "unknown parameter `nmae`"
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
