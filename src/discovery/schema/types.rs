//! The type table's named types: builtins, the standard library's and pydantic's own
//! types (what pydantic emits for them, in the keywords lcp's validation checks),
//! pydantic's `con*()` calls, decimals, and how a bound lands on a schema.

use super::*;

pub(super) enum Container {
    Array,
    Set,
    Tuple,
    Object,
}

pub(super) fn container(qualified: &str) -> Option<Container> {
    let (module, name) = qualified.rsplit_once('.').unwrap_or(("", qualified));
    if !matches!(module, "builtins" | "typing" | "collections.abc" | "collections") {
        return None;
    }
    match name {
        "list" | "List" | "Sequence" | "MutableSequence" | "Iterable" | "Collection" | "Iterator" | "deque" => {
            Some(Container::Array)
        }
        "set" | "Set" | "frozenset" | "FrozenSet" | "AbstractSet" | "MutableSet" => Some(Container::Set),
        "tuple" | "Tuple" => Some(Container::Tuple),
        "dict" | "Dict" | "Mapping" | "MutableMapping" | "OrderedDict" | "defaultdict" | "DefaultDict" => {
            Some(Container::Object)
        }
        _ => None,
    }
}

pub(super) fn is_path(qualified: &str) -> bool {
    matches!(
        qualified,
        "pathlib.Path"
            | "pathlib.PurePath"
            | "pathlib.PosixPath"
            | "pathlib.WindowsPath"
            | "pathlib.PurePosixPath"
            | "pathlib.PureWindowsPath"
            | "os.PathLike"
    )
}

/// The base type of a pydantic `con*()` call.
pub(super) fn constrained_kind(qualified: &str) -> Option<&'static str> {
    Some(match qualified {
        "pydantic.conint" => "integer",
        "pydantic.confloat" => "number",
        "pydantic.constr" | "pydantic.conbytes" => "string",
        "pydantic.conlist" => "array",
        "pydantic.conset" | "pydantic.confrozenset" => "set",
        "pydantic.condecimal" => "decimal",
        "pydantic.condate" => "date",
        _ => return None,
    })
}

pub(super) fn is_numeric_bound(key: &str) -> bool {
    matches!(key, "ge" | "gt" | "le" | "lt" | "multiple_of")
}

/// One IPv4 address, each part without leading zeros (as Python's `ipaddress`).
pub(super) const IPV4: &str =
    r"(?:0|[1-9][0-9]?|1[0-9]{2}|2[0-4][0-9]|25[0-5])(?:\.(?:0|[1-9][0-9]?|1[0-9]{2}|2[0-4][0-9]|25[0-5])){3}";

/// An IPv4 network or interface: an address, then a prefix length or a mask.
pub(super) const IPV4_NETWORK: &str = r"(?:0|[1-9][0-9]?|1[0-9]{2}|2[0-4][0-9]|25[0-5])(?:\.(?:0|[1-9][0-9]?|1[0-9]{2}|2[0-4][0-9]|25[0-5])){3}(?:/(?:[0-9]|[12][0-9]|3[0-2])|/(?:0|[1-9][0-9]?|1[0-9]{2}|2[0-4][0-9]|25[0-5])(?:\.(?:0|[1-9][0-9]?|1[0-9]{2}|2[0-4][0-9]|25[0-5])){3})?";

/// An IPv6 network or interface: hexadecimal groups, at most one `::`, an IPv4 tail,
/// then a prefix length. The count of groups is left to the conversion.
pub(super) const IPV6_NETWORK: &str = r"(?:[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){7}|(?:[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){0,6})?::(?:[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){0,6})?|(?:[0-9A-Fa-f]{1,4}:){6}IPV4|(?:[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){0,4})?::(?:[0-9A-Fa-f]{1,4}:){0,4}IPV4)(?:/(?:[0-9]|[1-9][0-9]|1[01][0-9]|12[0-8]))?";

/// The schemas of the standard library's and pydantic's named types that are not
/// containers: what pydantic emits for them, in the keywords lcp's validation checks.
pub(super) fn vocabulary(qualified: &str) -> Option<Value> {
    let ipv4 = json!({ "type": "string", "format": "ipv4" });
    let ipv6 = json!({ "type": "string", "format": "ipv6" });
    let url = |pattern: Option<&str>, max: Option<u64>| {
        let mut schema = json!({ "type": "string", "format": "uri", "minLength": 1 });
        if let Some(max) = max {
            schema["maxLength"] = max.into();
        }
        if let Some(pattern) = pattern {
            schema["pattern"] = pattern.into();
        }
        schema
    };
    let network = |pattern: String| {
        let pattern = format!("^(?:{pattern})$");
        json!({ "type": "string", "pattern": pattern })
    };
    let v6_network = || IPV6_NETWORK.replace("IPV4", IPV4);
    let http = "^[hH][tT][tT][pP][sS]?://";
    Some(match qualified {
        "ipaddress.IPv4Address" => ipv4,
        "ipaddress.IPv6Address" => ipv6,
        "pydantic.IPvAnyAddress" => json!({ "anyOf": [ipv4, ipv6] }),
        "ipaddress.IPv4Network" | "ipaddress.IPv4Interface" => network(IPV4_NETWORK.to_string()),
        "ipaddress.IPv6Network" | "ipaddress.IPv6Interface" => network(v6_network()),
        "pydantic.IPvAnyNetwork" | "pydantic.IPvAnyInterface" => network(format!("{IPV4_NETWORK}|{}", v6_network())),
        "pydantic.EmailStr" | "pydantic.NameEmail" => json!({ "type": "string", "format": "email" }),
        "pydantic.AnyUrl" => url(None, None),
        "pydantic.AnyHttpUrl" => url(Some(http), None),
        "pydantic.HttpUrl" => url(Some(http), Some(2083)),
        "pydantic.FileUrl" => url(Some("^[fF][iI][lL][eE]:"), None),
        "pydantic.SecretStr" | "pydantic.SecretBytes" | "pydantic.StrictStr" | "pydantic.StrictBytes" => {
            json!({ "type": "string" })
        }
        "pydantic.Json" => json!({ "type": "string", "contentMediaType": "application/json" }),
        "pydantic.StrictInt" => json!({ "type": "integer" }),
        "pydantic.StrictFloat" | "pydantic.FiniteFloat" => json!({ "type": "number" }),
        "pydantic.StrictBool" => json!({ "type": "boolean" }),
        "pydantic.PositiveInt" => json!({ "type": "integer", "exclusiveMinimum": 0 }),
        "pydantic.NegativeInt" => json!({ "type": "integer", "exclusiveMaximum": 0 }),
        "pydantic.NonNegativeInt" => json!({ "type": "integer", "minimum": 0 }),
        "pydantic.NonPositiveInt" => json!({ "type": "integer", "maximum": 0 }),
        "pydantic.PositiveFloat" => json!({ "type": "number", "exclusiveMinimum": 0 }),
        "pydantic.NegativeFloat" => json!({ "type": "number", "exclusiveMaximum": 0 }),
        "pydantic.NonNegativeFloat" => json!({ "type": "number", "minimum": 0 }),
        "pydantic.NonPositiveFloat" => json!({ "type": "number", "maximum": 0 }),
        "pydantic.AnyWebsocketUrl" | "pydantic.FtpUrl" => url(None, None),
        "pydantic.WebsocketUrl" => url(None, Some(2083)),
        q if q.starts_with("pydantic.") && q.ends_with("Dsn") => url(None, None),
        // `UUID1` … `UUID8`: a UUID whose version digit (the third group's first) is N,
        // of the RFC 4122 variant (the fourth group's first digit is 8, 9, a or b).
        q if let Some(version) =
            q.strip_prefix("pydantic.UUID").filter(|v| matches!(*v, "1" | "3" | "4" | "5" | "6" | "7" | "8")) =>
        {
            let pattern = format!(
                "^[0-9a-fA-F]{{8}}-[0-9a-fA-F]{{4}}-{version}[0-9a-fA-F]{{3}}-[89abAB][0-9a-fA-F]{{3}}-[0-9a-fA-F]{{12}}$"
            );
            json!({ "type": "string", "format": "uuid", "pattern": pattern })
        }
        // With a time zone, and without one.
        "pydantic.AwareDatetime" => {
            json!({ "type": "string", "format": "date-time", "pattern": "(?:[Zz]|[+-][0-9]{2}:?[0-9]{2})$" })
        }
        "pydantic.NaiveDatetime" => json!({ "type": "string", "format": "date-time", "pattern": "[Tt ][0-9:.]+$" }),
        // Past and future are relative to the moment of the call: the Python side checks them.
        "pydantic.PastDate" | "pydantic.FutureDate" => json!({ "type": "string", "format": "date" }),
        "pydantic.PastDatetime" | "pydantic.FutureDatetime" => json!({ "type": "string", "format": "date-time" }),
        "pydantic.Base64Str" | "pydantic.Base64Bytes" => json!({ "type": "string", "format": "base64" }),
        "pydantic.Base64UrlStr" | "pydantic.Base64UrlBytes" => json!({ "type": "string", "format": "base64url" }),
        "pydantic.FilePath" => json!({ "type": "string", "format": "file-path" }),
        "pydantic.DirectoryPath" => json!({ "type": "string", "format": "directory-path" }),
        "pydantic.NewPath" | "pydantic.SocketPath" => json!({ "type": "string", "format": "path" }),
        "pydantic.ImportString" => json!({ "type": "string" }),
        "pydantic.PaymentCardNumber" => json!({ "type": "string", "minLength": 12, "maxLength": 19 }),
        "pydantic.ByteSize" => json!({ "anyOf": [
            { "type": "string", "pattern": "^\\s*(\\d*\\.?\\d+)\\s*(\\w+)?" },
            { "type": "integer", "minimum": 0 }
        ] }),
        _ => return None,
    })
}

/// `Decimal`: a number, or text in the syntax `Decimal()` reads (pydantic's pattern,
/// narrowed by `max_digits` / `decimal_places` as pydantic's `build_decimal_pattern`
/// does). Numeric bounds can only be checked on a number, so a bounded decimal is a
/// number only; `max_digits` bounds a number's whole part.
pub(super) fn decimal(bounds: Map, max_digits: Option<u64>, places: Option<u64>) -> Value {
    let mut number = json!({ "type": "number" });
    for (key, value) in bounds.iter() {
        apply_constraint(&mut number, key, value.clone());
    }
    if let Some(max) = max_digits {
        let whole = max.saturating_sub(places.unwrap_or(0)).min(300) as i32;
        let limit = 10f64.powi(whole);
        let limit = if limit.fract() == 0.0 && limit < 9e15 { json!(limit as i64) } else { json!(limit) };
        if number.get("exclusiveMaximum").is_none() && number.get("maximum").is_none() {
            number["exclusiveMaximum"] = limit.clone();
        }
        if number.get("exclusiveMinimum").is_none() && number.get("minimum").is_none() {
            number["exclusiveMinimum"] = match limit.as_i64() {
                Some(n) => Value::from(-n),
                None => Value::from(-limit.as_f64().unwrap_or_default()),
            };
        }
    }
    if !bounds.is_empty() {
        return number;
    }
    let pattern = decimal_pattern(max_digits, places);
    json!({ "anyOf": [number, { "type": "string", "pattern": pattern }] })
}

/// The text branch of a `Decimal` schema.
pub(super) fn is_decimal_text(schema: &Value) -> bool {
    schema.get("type") == Some(&json!("string"))
        && schema.get("pattern").and_then(Value::as_str).is_some_and(|p| p.starts_with(DECIMAL_TEXT_START))
}

/// How every pattern [`decimal_pattern`] makes begins.
pub(super) const DECIMAL_TEXT_START: &str = r"^\s*[+-]?(?:";

/// pydantic's `build_decimal_pattern` in validation mode (`_decimal_validation_pattern`),
/// with the white space around the number that `Decimal()` (and so pydantic) ignores.
/// Digits grouped with `_`, which `Decimal()` also reads, are left out.
pub(super) fn decimal_pattern(max_digits: Option<u64>, places: Option<u64>) -> String {
    pub(super) const NUMBER: &str = r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)";
    pub(super) const EXPONENT: &str = r"[eE][+-]?[0-9]+";
    let mut alternatives: Vec<String> = Vec::new();
    match (max_digits, places) {
        (None, None) => return format!(r"{DECIMAL_TEXT_START}{NUMBER}(?:{EXPONENT})?)\s*$"),
        (Some(max), Some(places)) => {
            let whole = max.saturating_sub(places);
            let places = max.min(places);
            let int_part = if whole > 0 { format!("0*{}", repeat(1, whole)) } else { "0+".to_string() };
            let frac = if places > 0 { format!(r"\.{}0*", repeat(1, places)) } else { r"\.0+".to_string() };
            alternatives.push(format!(r"{int_part}(?:\.{}0*)?", repeat(0, places)));
            alternatives.push(format!("0*{}{frac}", repeat(0, whole)));
        }
        (Some(max), None) => {
            let int_part = if max > 0 { format!("0*{}", repeat(1, max)) } else { "0+".to_string() };
            alternatives.push(format!(r"{int_part}(?:\.0*)?"));
            for whole in 0..max {
                alternatives.push(format!(r"0*{}\.{}0*", repeat(whole, whole), repeat(1, max - whole)));
            }
            if max == 0 {
                alternatives.push(r"0*\.0+".to_string());
            }
        }
        (None, Some(places)) => {
            let frac = if places > 0 { format!(r"\.{}0*", repeat(1, places)) } else { r"\.0+".to_string() };
            alternatives.push(format!(r"[0-9]+(?:\.{}0*)?", repeat(0, places)));
            alternatives.push(format!("[0-9]*{frac}"));
        }
    }
    alternatives.push(format!("{NUMBER}{EXPONENT}"));
    format!(r"{DECIMAL_TEXT_START}{})\s*$", alternatives.join("|"))
}

/// `[0-9]` repeated `min..=max` times, with the shortest quantifier (pydantic's `_repeat`).
pub(super) fn repeat(min: u64, max: u64) -> String {
    match (min, max) {
        _ if min > max || max == 0 => String::new(),
        _ if min == max && min == 1 => "[0-9]".to_string(),
        _ if min == max => format!("[0-9]{{{min}}}"),
        (0, 1) => "[0-9]?".to_string(),
        _ => format!("[0-9]{{{min},{max}}}"),
    }
}

pub(super) fn array(items: Option<Value>) -> Value {
    match items {
        Some(items) if items != json!({}) => object([("type", json!("array")), ("items", items)]),
        _ => json!({ "type": "array" }),
    }
}

pub(super) fn enum_schema(values: Vec<Value>) -> Value {
    let type_of = |v: &Value| match v {
        Value::String(_) => "string",
        Value::Bool(_) => "boolean",
        Value::Null => "null",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let mut schema = Map::new();
    if let Some(first) = values.first() {
        let kind = type_of(first);
        if values.iter().all(|v| type_of(v) == kind) {
            schema.insert("type".into(), Value::from(kind));
        }
    }
    schema.insert("enum".into(), Value::Array(values));
    Value::Object(schema)
}

/// Puts a pydantic / annotated-types bound on the schema it applies to: the string,
/// array or object form of `min_length`, and the non-null branches of a union.
pub(super) fn apply_constraint(schema: &mut Value, key: &str, value: Value) {
    if let Some(branches) = schema.get_mut("anyOf").and_then(Value::as_array_mut) {
        // A bounded decimal is a number only (see `decimal`): bounds cannot be
        // checked on its text form.
        if is_numeric_bound(key) {
            branches.retain(|b| !is_decimal_text(b));
        }
        for branch in branches.iter_mut().filter(|b| b.get("type") != Some(&json!("null"))) {
            apply_constraint(branch, key, value.clone());
        }
        if let Some(object) = schema.as_object_mut()
            && object.get("anyOf").and_then(Value::as_array).is_some_and(|b| b.len() == 1)
            && let Some(Value::Array(mut only)) = object.remove("anyOf")
            && let Some(Value::Object(single)) = only.pop()
        {
            for (key, value) in single {
                object.entry(key).or_insert(value);
            }
        }
        return;
    }
    let kind = schema.get("type").and_then(Value::as_str).unwrap_or_default();
    let keyword = match (key, kind) {
        ("ge", _) => "minimum",
        ("gt", _) => "exclusiveMinimum",
        ("le", _) => "maximum",
        ("lt", _) => "exclusiveMaximum",
        ("multiple_of", _) => "multipleOf",
        ("pattern", _) => "pattern",
        ("min_length", "array") => "minItems",
        ("max_length", "array") => "maxItems",
        ("min_length", "object") => "minProperties",
        ("max_length", "object") => "maxProperties",
        ("min_length", _) => "minLength",
        ("max_length", _) => "maxLength",
        ("title", _) => "title",
        ("examples", _) => "examples",
        _ => return,
    };
    if let Some(object) = schema.as_object_mut() {
        object.insert(keyword.to_string(), value);
    }
}

impl<'a, 's> Converter<'a, 's> {
    /// A bare name with no subscript.
    pub(super) fn named(&mut self, expr: &Expr, qualified: &str) -> Value {
        match qualified {
            "builtins.str" | "typing.Text" | "builtins.bytes" | "builtins.bytearray" => json!({ "type": "string" }),
            "builtins.int" => json!({ "type": "integer" }),
            "builtins.float" => json!({ "type": "number" }),
            "builtins.bool" => json!({ "type": "boolean" }),
            "builtins.None" | "types.NoneType" => json!({ "type": "null" }),
            "typing.Any" | "builtins.object" => json!({}),
            "datetime.datetime" => json!({ "type": "string", "format": "date-time" }),
            "datetime.date" => json!({ "type": "string", "format": "date" }),
            "datetime.time" => json!({ "type": "string", "format": "time" }),
            "datetime.timedelta" => json!({ "type": "string", "format": "duration" }),
            "uuid.UUID" => json!({ "type": "string", "format": "uuid" }),
            "decimal.Decimal" => decimal(Map::new(), None, None),
            q if is_path(q) => json!({ "type": "string" }),
            q if let Some(schema) = vocabulary(q) => schema,
            q => match container(q) {
                Some(Container::Array) | Some(Container::Tuple) => json!({ "type": "array" }),
                Some(Container::Set) => json!({ "type": "array", "uniqueItems": true }),
                Some(Container::Object) => json!({ "type": "object" }),
                None => self.unknown(expr, q),
            },
        }
    }

    /// `conint(ge=1)`, `constr(max_length=5)`, `conlist(int, min_length=1)`,
    /// `condecimal(max_digits=5, decimal_places=2)`: the base type and its bounds.
    pub(super) fn constrained(&mut self, qualified: &str, call: &ast::ExprCall, depth: usize) -> Value {
        let Some(kind) = constrained_kind(qualified) else { return json!({}) };
        let mut bounds: Vec<(&str, Value)> = Vec::new();
        for keyword in &call.arguments.keywords {
            let Some(arg) = &keyword.arg else { continue };
            let Some(value) = self.literal(&keyword.value) else { continue };
            // pydantic 1 spelled some of them differently.
            let key = match arg.as_str() {
                "regex" => "pattern",
                "min_items" => "min_length",
                "max_items" => "max_length",
                key => key,
            };
            bounds.push((key, value));
        }
        let mut schema = match kind {
            "integer" | "number" | "string" => json!({ "type": kind }),
            "date" => json!({ "type": "string", "format": "date" }),
            "decimal" => {
                let digits = |name: &str| bounds.iter().find(|(k, _)| *k == name).and_then(|(_, v)| v.as_u64());
                let (max_digits, places) = (digits("max_digits"), digits("decimal_places"));
                let numeric = bounds.iter().filter(|(k, _)| is_numeric_bound(k)).cloned();
                return decimal(numeric.map(|(k, v)| (k.to_string(), v)).collect(), max_digits, places);
            }
            _ => {
                let item = call
                    .arguments
                    .args
                    .first()
                    .or_else(|| call.arguments.find_keyword("item_type").map(|k| &k.value))
                    .map(|item| self.convert(item, depth + 1, &mut None));
                let mut schema = array(item);
                if kind == "set" {
                    schema["uniqueItems"] = Value::Bool(true);
                }
                schema
            }
        };
        for (key, value) in bounds {
            apply_constraint(&mut schema, key, value);
        }
        schema
    }
}
