//! An audit as JSON, SARIF 2.1.0 or a table fitted to the terminal (SPEC §20).

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value, json};

use super::{Audit, Capability, Evidence, ToolAudit, evidence_json};
use crate::table::{Cut, cell, columns, counted, fit};

/// `{"tools": [{"name", "library", "capabilities", "unknown", "declared", "drift"
/// (, "gained")}]}`.
pub fn json(audit: &Audit) -> Value {
    let tools: Vec<Value> = audit.tools.iter().map(tool_json).collect();
    let mut out = json!({"tools": tools});
    if !audit.unreadable.is_empty() {
        out["unreadable"] = unreadable_json(audit);
    }
    out
}

fn unreadable_json(audit: &Audit) -> Value {
    Value::Array(audit.unreadable.iter().map(|(file, why)| json!({"file": file, "error": why})).collect())
}

/// [`json()`] as `lcp audit --format json` prints it, indented by two spaces: the
/// same text, its tools written in batches on every core. (A pretty-printed value is
/// the same at any depth but for the indentation of its lines, and its strings hold
/// no raw line break.)
pub fn json_text(audit: &Audit) -> String {
    if audit.tools.is_empty() {
        return serde_json::to_string_pretty(&json(audit)).unwrap_or_default();
    }
    const BATCH: usize = 256;
    let write = |batch: usize| {
        let mut text = String::new();
        let end = audit.tools.len().min((batch + 1) * BATCH);
        for (i, tool) in audit.tools[batch * BATCH..end].iter().enumerate() {
            if batch > 0 || i > 0 {
                text.push_str(",\n");
            }
            indented(&mut text, &serde_json::to_string_pretty(&ToolOut(tool)).unwrap_or_default(), "    ", true);
        }
        text
    };
    let mut out = String::from("{\n  \"tools\": [\n");
    let _ = crate::ordered::run(audit.tools.len().div_ceil(BATCH), write, |text| {
        out.push_str(&text);
        Ok(())
    });
    out.push_str("\n  ]");
    if !audit.unreadable.is_empty() {
        out.push_str(",\n  \"unreadable\": ");
        indented(&mut out, &serde_json::to_string_pretty(&unreadable_json(audit)).unwrap_or_default(), "  ", false);
    }
    out.push_str("\n}");
    out
}

/// A tool as [`tool_json`] has it, written without making the value.
struct ToolOut<'a>(&'a ToolAudit);

impl Serialize for ToolOut<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let tool = self.0;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("name", &tool.name)?;
        map.serialize_entry("library", &tool.library)?;
        map.serialize_entry("capabilities", &CapabilitiesOut(&tool.capabilities))?;
        map.serialize_entry("unknown", &tool.unknown)?;
        map.serialize_entry("declared", &serde_json::to_value(&tool.declared).unwrap_or(Value::Null))?;
        map.serialize_entry("drift", &tool_json_drift(tool))?;
        if let Some(gained) = &tool.gained {
            map.serialize_entry("gained", &CapabilitiesOut(gained))?;
        }
        map.end()
    }
}

/// Capabilities as [`capabilities_json`] has them.
struct CapabilitiesOut<'a>(&'a std::collections::BTreeMap<Capability, Vec<Evidence>>);

impl Serialize for CapabilitiesOut<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (capability, evidence) in self.0 {
            let evidence: Vec<EvidenceOut> = evidence.iter().map(EvidenceOut).collect();
            map.serialize_entry(capability.as_str(), &evidence)?;
        }
        map.end()
    }
}

/// Evidence as [`evidence_json`] has it.
struct EvidenceOut<'a>(&'a Evidence);

impl Serialize for EvidenceOut<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(4))?;
        map.serialize_entry("file", &self.0.file)?;
        map.serialize_entry("line", &self.0.line)?;
        map.serialize_entry("via", &self.0.via)?;
        map.serialize_entry("chain", &self.0.chain)?;
        map.end()
    }
}

/// Appends `text` to `out`, each of its lines after `prefix` (the first too when
/// `first`).
fn indented(out: &mut String, text: &str, prefix: &str, first: bool) {
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if i > 0 || first {
            out.push_str(prefix);
        }
        out.push_str(line);
    }
}

fn capabilities_json(capabilities: &std::collections::BTreeMap<Capability, Vec<Evidence>>) -> Value {
    let mut map = Map::new();
    for (capability, evidence) in capabilities {
        map.insert(capability.as_str().into(), evidence.iter().map(evidence_json).collect());
    }
    Value::Object(map)
}

fn tool_json(tool: &ToolAudit) -> Value {
    let drift = tool_json_drift(tool);
    let declared = serde_json::to_value(&tool.declared).unwrap_or(Value::Null);
    let mut out = json!({
        "name": tool.name,
        "library": tool.library,
        "capabilities": capabilities_json(&tool.capabilities),
        "unknown": tool.unknown,
        "declared": declared,
        "drift": drift,
    });
    if let Some(gained) = &tool.gained {
        out["gained"] = capabilities_json(gained);
    }
    out
}

/// A tool's drift as JSON: `[{"declaration", "capability", "file", "line", "via"}]`.
fn tool_json_drift(tool: &ToolAudit) -> Vec<Value> {
    tool.drift
        .iter()
        .map(|d| {
            json!({
                "declaration": d.declaration,
                "capability": d.capability.as_str(),
                "file": d.evidence.file,
                "line": d.evidence.line,
                "via": d.evidence.via,
            })
        })
        .collect()
}

/// The SARIF rule of a capability, and of a drift.
fn rule_id(capability: Capability) -> String {
    format!("capability/{}", capability.as_str())
}

/// A SARIF 2.1.0 log: a result per piece of evidence (`note`), per unknown call
/// (`warning`, at the tool) and per drift (`error`).
pub fn sarif(audit: &Audit) -> Value {
    let mut rules: Vec<Value> = Capability::ALL
        .iter()
        .map(|c| {
            json!({
                "id": rule_id(*c),
                "name": c.as_str(),
                "shortDescription": {"text": format!("The tool's code can use {}", c.as_str())},
                "defaultConfiguration": {"level": "note"},
            })
        })
        .collect();
    rules.push(json!({
        "id": "unknown",
        "name": "unknown",
        "shortDescription": {"text": "A call lcp has no table for: what it does is not known"},
        "defaultConfiguration": {"level": "warning"},
    }));
    for declaration in ["read_only", "open_world", "destructive"] {
        rules.push(json!({
            "id": format!("drift/{declaration}"),
            "name": format!("drift-{declaration}"),
            "shortDescription": {"text": format!("The tool's code breaks its `{declaration}` declaration")},
            "defaultConfiguration": {"level": "error"},
        }));
    }
    let mut results = Vec::new();
    for tool in &audit.tools {
        for (capability, evidence) in &tool.capabilities {
            for e in evidence {
                results.push(result(
                    &rule_id(*capability),
                    "note",
                    format!(
                        "`{}` can use {} through {} ({})",
                        tool.name,
                        capability.as_str(),
                        e.via,
                        e.chain.join(" → ")
                    ),
                    &e.file,
                    e.line,
                ));
            }
        }
        for unknown in &tool.unknown {
            results.push(result(
                "unknown",
                "warning",
                format!("`{}` calls {unknown}, which lcp has no table for", tool.name),
                &tool.file,
                tool.line,
            ));
        }
        for d in &tool.drift {
            results.push(result(
                &format!("drift/{}", d.declaration),
                "error",
                drift_sentence(tool, d),
                &d.evidence.file,
                d.evidence.line,
            ));
        }
    }
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "lcp audit",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": "https://github.com/lollms/lcp",
                "rules": rules,
            }},
            "results": results,
        }],
    })
}

fn result(rule: &str, level: &str, text: String, file: &str, line: u32) -> Value {
    json!({
        "ruleId": rule,
        "level": level,
        "message": {"text": text},
        "locations": [{"physicalLocation": {
            "artifactLocation": {"uri": uri(file)},
            "region": {"startLine": line.max(1)},
        }}],
    })
}

/// A path as a SARIF URI reference: forward slashes, no leading `./`, `%` and
/// spaces escaped.
fn uri(file: &str) -> String {
    let file = file.replace('\\', "/");
    let file = file.strip_prefix("./").unwrap_or(&file);
    file.replace('%', "%25").replace(' ', "%20")
}

/// "`tool_x` declares read_only but can use fs_write: os.remove at x.py:3".
fn drift_sentence(tool: &ToolAudit, d: &super::Drift) -> String {
    let declared = match d.declaration {
        "open_world" => "open_world: false",
        "destructive" => "destructive: false",
        other => other,
    };
    let what = if d.declaration == "destructive" { "deletes" } else { d.capability.as_str() };
    format!(
        "`{}` declares {declared} but its code {} {what}: {} at {}:{}",
        tool.name,
        if d.declaration == "destructive" { "" } else { "can use" },
        d.evidence.via,
        d.evidence.file,
        d.evidence.line
    )
    .replace("code  deletes", "code deletes")
}

/// `TOOL  LIBRARY  CAPABILITIES  UNKNOWN  DRIFT`, fitted to `width` when given, then
/// a line per drift and per capability gained since the baseline.
pub fn text(audit: &Audit, width: Option<usize>) -> String {
    let mut rows = vec![["TOOL", "LIBRARY", "CAPABILITIES", "UNKNOWN", "DRIFT"].map(String::from)];
    for tool in &audit.tools {
        let capabilities: Vec<String> = tool
            .capabilities
            .iter()
            .map(|(c, e)| match e.first() {
                Some(e) => format!("{} ({}:{})", c.as_str(), file_name(&e.file), e.line),
                None => c.as_str().to_string(),
            })
            .collect();
        let drift: Vec<&str> = tool.drift.iter().map(|d| d.declaration).collect();
        rows.push([
            cell(&tool.name, Cut::End),
            cell(&tool.library, Cut::End),
            cell(if capabilities.is_empty() { "-".into() } else { capabilities.join(", ") }.as_str(), Cut::End),
            cell(if tool.unknown.is_empty() { "-".into() } else { tool.unknown.join(", ") }.as_str(), Cut::End),
            cell(if drift.is_empty() { "-".into() } else { drift.join(", ") }.as_str(), Cut::End),
        ]);
    }
    if let Some(width) = width {
        let narrowing = [(0, 16, Cut::End), (1, 10, Cut::End), (4, 10, Cut::End), (3, 12, Cut::End), (2, 20, Cut::End)];
        fit(&mut rows, width, &narrowing);
    }
    let mut out = columns(&rows);
    for tool in &audit.tools {
        for d in &tool.drift {
            out.push_str(&format!("drift: {}\n", crate::shown::line(&drift_sentence(tool, d))));
        }
    }
    for tool in &audit.tools {
        for (capability, evidence) in tool.gained.iter().flatten() {
            if let Some(e) = evidence.first() {
                let line = format!("`{}` gained `{}` at {}:{}", tool.name, capability.as_str(), e.file, e.line);
                out.push_str(&crate::shown::line(&line));
                out.push('\n');
            }
        }
    }
    for (file, why) in &audit.unreadable {
        out.push_str(&crate::shown::line(&format!("not read: {file}: {why}")));
        out.push('\n');
    }
    let drifting = audit.tools.iter().filter(|t| !t.drift.is_empty()).count();
    out.push_str(&format!("{} audited, {} with drift", counted(audit.tools.len(), "tool", "tools"), drifting));
    out
}

fn file_name(file: &str) -> &str {
    file.rsplit(['/', '\\']).next().unwrap_or(file)
}
