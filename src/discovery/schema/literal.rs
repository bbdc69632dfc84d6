//! Literal values and defaults: Python literals as JSON, and defaults that call
//! known types (`frozenset({1, 2})`, `Decimal("12.34")`, `datetime(2024, 1, 1)`,
//! `Model(x=1)`) as pydantic serialises them. Never runs Python.

use super::*;

/// Why an expression has no JSON value.
pub(super) enum NotLiteral {
    Expression,
    TooDeep,
}

pub(super) fn number_value(number: &Number) -> Option<Value> {
    match number {
        Number::Int(i) => i.as_i64().map(Value::from),
        Number::Float(f) => serde_json::Number::from_f64(*f).map(Value::Number),
        Number::Complex { .. } => None,
    }
}

/// `Decimal(text)` as pydantic writes it (`str(Decimal(text))`), for plain decimal
/// text whose form `str()` keeps: `"12.34"`, `"-0.5"`.
pub(super) fn decimal_text(text: &str) -> Option<String> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, "0"));
    let plain = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    let keeps_form = plain(whole) && plain(fraction) && (whole == "0" || !whole.starts_with('0'));
    keeps_form.then(|| text.to_string())
}

/// `UUID(text)` as pydantic writes it: lower-case 8-4-4-4-12 hexadecimal digits.
pub(super) fn canonical_uuid(text: &str) -> Option<String> {
    let groups: Vec<&str> = text.split('-').collect();
    let shaped = groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups.iter().all(|g| g.bytes().all(|b| b.is_ascii_hexdigit()));
    shaped.then(|| text.to_ascii_lowercase())
}

/// `datetime(2024, 1, 1, 12)`, `date(2024, 1, 1)`, `time(12, 30)` (positional or
/// keyword parts, no time zone) in ISO 8601 as Python's `isoformat()` writes them.
pub(super) fn date_time_parts(
    qualified: &str,
    call: &ast::ExprCall,
    int: impl Fn(&Expr) -> Option<i64>,
) -> Option<String> {
    let names: &[&str] = match qualified {
        "datetime.datetime" => &["year", "month", "day", "hour", "minute", "second", "microsecond"],
        "datetime.date" => &["year", "month", "day"],
        _ => &["hour", "minute", "second", "microsecond"],
    };
    let mut parts: Vec<Option<i64>> = vec![None; names.len()];
    if call.arguments.args.len() > names.len() {
        return None;
    }
    for (slot, arg) in parts.iter_mut().zip(&call.arguments.args) {
        *slot = Some(int(arg)?);
    }
    for keyword in &call.arguments.keywords {
        let index = names.iter().position(|n| keyword.arg.as_ref().is_some_and(|a| a.as_str() == *n))?;
        parts[index] = Some(int(&keyword.value)?);
    }
    let part = |name: &str| names.iter().position(|n| *n == name).and_then(|i| parts[i]);
    let in_range = |value: Option<i64>, low: i64, high: i64| value.is_none_or(|v| (low..=high).contains(&v));
    let mut text = Vec::new();
    if qualified != "datetime.time" {
        let (year, month, day) = (part("year")?, part("month")?, part("day")?);
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
        let days = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
        let valid =
            (1..=9999).contains(&year) && (1..=12).contains(&month) && (1..=days[(month - 1) as usize]).contains(&day);
        text.push(valid.then(|| format!("{year:04}-{month:02}-{day:02}"))?);
    }
    if qualified != "datetime.date" {
        let (hour, minute, second, micro) = (part("hour"), part("minute"), part("second"), part("microsecond"));
        let valid =
            in_range(hour, 0, 23) && in_range(minute, 0, 59) && in_range(second, 0, 59) && in_range(micro, 0, 999_999);
        let (h, m, s, us) = (hour.unwrap_or(0), minute.unwrap_or(0), second.unwrap_or(0), micro.unwrap_or(0));
        let clock = if us == 0 { format!("{h:02}:{m:02}:{s:02}") } else { format!("{h:02}:{m:02}:{s:02}.{us:06}") };
        text.push(valid.then_some(clock)?);
    }
    Some(text.join("T"))
}

impl<'a, 's> Converter<'a, 's> {
    /// The JSON value of a literal, if it is one (nested at most [`MAX_LITERAL_DEPTH`] levels).
    pub fn literal(&self, expr: &Expr) -> Option<Value> {
        self.literal_value(expr, MAX_LITERAL_DEPTH, true).ok()
    }

    /// The JSON value of a literal default; one nested deeper than [`MAX_LITERAL_DEPTH`]
    /// levels is omitted with a warning (the parameter stays optional).
    pub fn default(&mut self, expr: &Expr) -> Option<Value> {
        self.default_within(expr, MAX_LITERAL_DEPTH)
    }

    pub(super) fn default_within(&mut self, expr: &Expr, room: usize) -> Option<Value> {
        match self.literal_value(expr, room, true) {
            Ok(value) => Some(value),
            Err(NotLiteral::TooDeep) => {
                let message = format!("default nested more than {MAX_LITERAL_DEPTH} levels deep: omitted");
                self.warn(expr.range(), message);
                None
            }
            Err(NotLiteral::Expression) => match expr {
                Expr::Call(call) if room > 1 => self.call_default(call, room - 1),
                _ => None,
            },
        }
    }

    /// A default that calls a known type with literal arguments, as pydantic
    /// serialises the value it makes: `frozenset({1, 2})` → `[1, 2]`,
    /// `Decimal("12.34")` → `"12.34"`, `datetime(2024, 1, 1)` →
    /// `"2024-01-01T00:00:00"`, `Model(x=1)` → the model's fields with their defaults.
    pub(super) fn call_default(&mut self, call: &ast::ExprCall, room: usize) -> Option<Value> {
        let args = &call.arguments;
        let literal = |this: &Self, expr: &Expr| this.literal_value(expr, room, true).ok();
        match self.resolve(&call.func)? {
            Resolved::Qualified(q) => match &*q {
                "builtins.list" | "builtins.tuple" | "builtins.set" | "builtins.frozenset" => {
                    match (args.args.as_ref(), args.keywords.is_empty()) {
                        ([], true) => Some(json!([])),
                        ([only], true) if !matches!(only, Expr::StringLiteral(_) | Expr::Dict(_)) => {
                            literal(self, only).filter(|v| matches!(v, Value::Array(_)))
                        }
                        _ => None,
                    }
                }
                "builtins.dict" if args.args.is_empty() => {
                    let mut map = Map::new();
                    for keyword in &args.keywords {
                        map.insert(keyword.arg.as_ref()?.to_string(), self.default_within(&keyword.value, room)?);
                    }
                    Some(Value::Object(map))
                }
                "decimal.Decimal" if args.keywords.is_empty() => match args.args.as_ref() {
                    [Expr::StringLiteral(text)] => decimal_text(text.value.to_str()).map(Value::from),
                    [number @ Expr::NumberLiteral(_)] => {
                        literal(self, number).and_then(|n| n.as_i64()).map(|n| Value::from(n.to_string()))
                    }
                    _ => None,
                },
                "uuid.UUID" if args.keywords.is_empty() => match args.args.as_ref() {
                    [Expr::StringLiteral(text)] => canonical_uuid(text.value.to_str()).map(Value::from),
                    _ => None,
                },
                "datetime.datetime" | "datetime.date" | "datetime.time" => {
                    let parts = date_time_parts(&q, call, |expr| literal(self, expr).and_then(|v| v.as_i64()))?;
                    Some(Value::from(parts))
                }
                _ => None,
            },
            Resolved::Class(module, name) => {
                let class = *module.scope.classes.get(name)?;
                self.instance_default(module, class, name.to_string(), call, room)
            }
            Resolved::Nested(module, class, path) => self.instance_default(module, class, path, call, room),
            _ => None,
        }
    }

    /// `Model()`, `Model(x=1)`, `Point(1, 2)` as a default: every field of the class,
    /// in order, under its property name, from the call or the field's own default.
    /// `None` when a field has neither, or the call names what the class does not have.
    pub(super) fn instance_default(
        &mut self,
        module: Module<'a, 's>,
        class: &'a ast::StmtClassDef,
        path: String,
        call: &ast::ExprCall,
        room: usize,
    ) -> Option<Value> {
        let kind = self.peek_in(module, |this| this.class_kind(class, 0));
        if !matches!(kind, ClassKind::BaseModel | ClassKind::Dataclass | ClassKind::NamedTuple) {
            return None;
        }
        // A model takes keywords only; a dataclass or named tuple its fields in order.
        if kind == ClassKind::BaseModel && !call.arguments.args.is_empty() {
            return None;
        }
        // Reading the class for its defaults leaves no trace in the tool's schema.
        let (classes, warnings, conversions) = (self.classes.len(), self.warnings.len(), self.conversions);
        let (schema, made) = self.class_and_made(module, class, path, call.range(), 0);
        self.classes.truncate(classes);
        self.warnings.truncate(warnings);
        self.conversions = conversions;
        let properties = schema.get("properties").and_then(Value::as_object)?;
        if call.arguments.args.len() > properties.len() {
            return None;
        }
        let mut given: Vec<(&str, &Expr)> = Vec::new();
        for (arg, (property, _)) in call.arguments.args.iter().zip(properties.iter()) {
            given.push((property.as_str(), arg));
        }
        for keyword in &call.arguments.keywords {
            given.push((keyword.arg.as_ref()?.as_str(), &keyword.value));
        }
        if given.iter().any(|(name, _)| !properties.contains_key(*name)) {
            return None;
        }
        let mut value = Map::new();
        for (property, field) in properties.iter() {
            let field_value = match given.iter().find(|(name, _)| *name == property.as_str()) {
                Some((_, expr)) => self.default_within(expr, room)?,
                None => match field.get("default") {
                    Some(default) => default.clone(),
                    None => made.iter().find(|(name, _)| name == property).map(|(_, v)| v.clone())?,
                },
            };
            value.insert(property.to_string(), field_value);
        }
        Some(Value::Object(value))
    }

    /// The JSON value of a literal with at most `room` levels of nesting (a scalar or
    /// an empty container is one level). `members`: whether a same-file Enum member
    /// (`Color.RED`) counts as its value; never inside an Enum's own body, where a
    /// member naming another member would make the reading go round in circles.
    pub(super) fn literal_value(&self, expr: &Expr, room: usize, members: bool) -> Result<Value, NotLiteral> {
        if room == 0 {
            return Err(NotLiteral::TooDeep);
        }
        let items = |elts: &[Expr]| {
            elts.iter().map(|e| self.literal_value(e, room - 1, members)).collect::<Result<Vec<_>, _>>()
        };
        let value = match expr {
            Expr::StringLiteral(s) => Value::from(s.value.to_str()),
            Expr::BytesLiteral(b) => {
                let bytes: Vec<u8> = b.value.as_slice().iter().flat_map(|p| p.value.iter().copied()).collect();
                Value::from(String::from_utf8_lossy(&bytes).into_owned())
            }
            Expr::NumberLiteral(n) => number_value(&n.value).ok_or(NotLiteral::Expression)?,
            Expr::BooleanLiteral(b) => Value::Bool(b.value),
            Expr::NoneLiteral(_) => Value::Null,
            Expr::UnaryOp(u) if matches!(u.op, UnaryOp::USub | UnaryOp::UAdd) => {
                let Expr::NumberLiteral(n) = &*u.operand else { return Err(NotLiteral::Expression) };
                let value = number_value(&n.value).ok_or(NotLiteral::Expression)?;
                let negated = if u.op == UnaryOp::UAdd {
                    Some(value)
                } else if let Some(i) = value.as_i64() {
                    i.checked_neg().map(Value::from)
                } else {
                    value.as_f64().map(|f| Value::from(-f))
                };
                negated.ok_or(NotLiteral::Expression)?
            }
            Expr::Tuple(t) => Value::Array(items(&t.elts)?),
            Expr::List(l) => Value::Array(items(&l.elts)?),
            Expr::Set(s) => Value::Array(items(&s.elts)?),
            Expr::Dict(d) => {
                let mut map = Map::new();
                for item in &d.items {
                    let Some(Expr::StringLiteral(key)) = &item.key else { return Err(NotLiteral::Expression) };
                    map.insert(key.value.to_str().to_string(), self.literal_value(&item.value, room - 1, members)?);
                }
                Value::Object(map)
            }
            Expr::Attribute(_) if !members => return Err(NotLiteral::Expression),
            Expr::Attribute(attr) => {
                // An enum member's value is a literal of its own: measured here.
                let value = self.enum_member_value(attr).ok_or(NotLiteral::Expression)?;
                if json_depth(&value) > room {
                    return Err(NotLiteral::TooDeep);
                }
                value
            }
            _ => return Err(NotLiteral::Expression),
        };
        Ok(value)
    }

    /// The schema of an unannotated parameter: the type of its literal default, else
    /// `string` (the LCP convention).
    pub fn inferred_from_default(&self, default: Option<&Expr>) -> Value {
        let Some(default) = default else { return json!({ "type": "string" }) };
        let kind = match self.literal_value(default, MAX_LITERAL_DEPTH, true) {
            Ok(Value::Bool(_)) => "boolean",
            Ok(Value::Number(n)) if n.is_i64() || n.is_u64() => "integer",
            Ok(Value::Number(_)) => "number",
            Ok(Value::Array(_)) => "array",
            Ok(Value::Object(_)) => "object",
            // A literal too deep to carry still says what it is.
            Err(NotLiteral::TooDeep) if matches!(default, Expr::Tuple(_) | Expr::List(_) | Expr::Set(_)) => "array",
            Err(NotLiteral::TooDeep) if matches!(default, Expr::Dict(_)) => "object",
            _ => "string",
        };
        json!({ "type": kind })
    }
}
