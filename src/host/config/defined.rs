//! The tools a config file defines (`[[tools]]` and `[[virtual_tools]]`, SPEC §14) as
//! libraries of the registry.
//!
//! Owns turning an entry into a tool by §3's rules, the same ones as a Python file's:
//! the entry is written out as the Python signature it describes (keyword-only
//! parameters with their annotations and defaults, the return annotation, a Google
//! docstring with each argument's description) and read by [`crate::discovery::extract`], so
//! `"list[str]"`, `"Optional[int]"` or `"Literal['a', 'b']"` mean exactly what they mean
//! in a tool file. Nothing is imported: the module is the runtime's business, on a
//! call. Problems are reported at the entry's line of the config file.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Config, DefinedTool};
use crate::diag::{Diagnostic, Level};
use crate::discovery::extract::{self, Library, Origin};
use crate::discovery::scan::SourceFile;

/// The names an annotation may use without importing them.
const PRELUDE: &str = "\
from typing import Annotated, Any, Dict, FrozenSet, List, Literal, Optional, Sequence, Set, Tuple, Union
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path
from uuid import UUID
";

/// The longest annotation read, and the deepest nesting of brackets in it.
const MAX_ANNOTATION: usize = 4096;
const MAX_NESTING: usize = 64;

/// One library per `[[tools]]` entry of `config` that makes a tool, in the file's
/// order, and the problems of each entry.
pub(crate) fn libraries(config: &Config, injected: &[String]) -> (Vec<Library>, Vec<Diagnostic>) {
    let Some(file) = config.file() else { return (Vec::new(), Vec::new()) };
    // Absolute: a call runs in its workspace, wherever lcp was started.
    let absolute = |path: &Path| std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut path = vec![absolute(&config.folder())];
    path.extend(config.python_path.iter().map(|entry| absolute(entry)));
    let (mut libraries, mut diagnostics) = (Vec::new(), Vec::new());
    for tool in config.tools.iter().chain(&config.virtual_tools) {
        match library(tool, file, &path, injected) {
            Ok((library, warnings)) => {
                libraries.push(library);
                diagnostics.extend(warnings);
            }
            Err(diagnostic) => diagnostics.push(diagnostic),
        }
    }
    (libraries, diagnostics)
}

fn library(
    tool: &DefinedTool,
    file: &Path,
    path: &[PathBuf],
    injected: &[String],
) -> Result<(Library, Vec<Diagnostic>), Diagnostic> {
    let array = if tool.host_implemented { "virtual_tools" } else { "tools" };
    let at = |level: Level, message: String| {
        Diagnostic::new(file, tool.line, 1, level, format!("`[[{array}]]` `{}`: {message}", tool.name))
    };
    let source = signature(tool).map_err(|message| at(Level::Error, message))?;
    let written = SourceFile { path: file.to_path_buf(), package: None };
    let (library, problems) = extract::extract(&written, source.into_bytes(), injected);
    // The signature is lcp's own text: its lines mean nothing to the user, the entry does.
    let problems: Vec<Diagnostic> =
        problems.into_iter().map(|p| at(p.level, p.message.replace("tool_defined", &tool.name))).collect();
    let Some(mut library) = library.filter(|library| library.tools.len() == 1) else {
        let why = problems.iter().map(|p| p.message.as_str()).collect::<Vec<_>>().join("; ");
        return Err(at(Level::Error, format!("its annotations do not make a signature: {why}")));
    };
    let mut made = library.tools.remove(0);
    made.name = tool.name.clone();
    made.line = tool.line;
    made.description = tool.description.clone().unwrap_or_else(|| extract::NO_DESCRIPTION.to_string());
    made.docstring = tool.description.clone();
    made.policy = tool.declared.clone();
    library.stem = tool.name.clone();
    library.tools = vec![made];
    library.origin = if tool.host_implemented {
        Origin::Virtual
    } else {
        Origin::Config {
            module: tool.module.clone(),
            function: tool.function.clone(),
            path: path.to_vec(),
            parameters: tool.args.iter().map(|arg| arg.name.clone()).collect(),
        }
    };
    Ok((library, problems))
}

/// The Python function the entry describes, as source text.
fn signature(tool: &DefinedTool) -> Result<String, String> {
    let mut parameters = Vec::new();
    let mut documented = String::new();
    for (i, arg) in tool.args.iter().enumerate() {
        let mut parameter = arg.name.clone();
        if let Some(annotation) = &arg.annotation {
            parameter.push_str(": ");
            parameter.push_str(&annotation_text(annotation).map_err(|why| format!("`args[{i}].type`: {why}"))?);
        }
        if let Some(default) = &arg.default {
            parameter.push_str(" = ");
            parameter.push_str(&literal(default));
        }
        parameters.push(parameter);
        if let Some(description) = &arg.description {
            documented.push_str(&format!(
                "\n    {}: {}",
                arg.name,
                description.split_whitespace().collect::<Vec<_>>().join(" ")
            ));
        }
    }
    let returns = match &tool.returns {
        Some(annotation) => format!(" -> {}", annotation_text(annotation).map_err(|why| format!("`returns`: {why}"))?),
        None => String::new(),
    };
    let docstring = if documented.is_empty() {
        "Defined in the config.".to_string()
    } else {
        format!("Defined in the config.\n\nArgs:{documented}")
    };
    // Keyword-only: the entry's order holds whichever arguments have defaults.
    let star = if parameters.is_empty() { "" } else { "*, " };
    Ok(format!(
        "{PRELUDE}\n\ndef tool_defined({star}{}){returns}:\n    {}\n",
        parameters.join(", "),
        serde_json::to_string(&docstring).unwrap_or_default()
    ))
}

/// An annotation's text, checked to be one expression and nothing else.
fn annotation_text(text: &str) -> Result<String, String> {
    let text = text.trim();
    if text.len() > MAX_ANNOTATION {
        return Err(format!("the annotation is longer than {MAX_ANNOTATION} bytes"));
    }
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > MAX_NESTING {
            return Err(format!("the annotation nests deeper than {MAX_NESTING} brackets"));
        }
    }
    match ruff_python_parser::parse_expression(text) {
        Ok(_) if !text.contains(['\n', '\r']) => Ok(text.to_string()),
        Ok(_) => Err(format!("`{text}` spans lines; an annotation is one line")),
        Err(err) => Err(format!("`{text}` is not an annotation: {}", err.error)),
    }
}

/// A JSON (or TOML) value as the Python literal of the same value.
fn literal(value: &Value) -> String {
    match value {
        Value::Null => "None".to_string(),
        Value::Bool(true) => "True".to_string(),
        Value::Bool(false) => "False".to_string(),
        Value::Number(number) => number.to_string(),
        // JSON's string escapes are Python's, and non-ASCII text is written as it is.
        Value::String(text) => serde_json::to_string(text).unwrap_or_default(),
        Value::Array(items) => format!("[{}]", items.iter().map(literal).collect::<Vec<_>>().join(", ")),
        Value::Object(entries) => format!(
            "{{{}}}",
            entries
                .iter()
                .map(|(key, value)| format!("{}: {}", literal(&Value::String(key.clone())), literal(value)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn literals_are_python() {
        assert_eq!(literal(&json!({"a": [1, null, true, "x\"y"]})), r#"{"a": [1, None, True, "x\"y"]}"#);
    }

    #[test]
    fn an_annotation_is_one_expression() {
        assert_eq!(annotation_text(" list[str] "), Ok("list[str]".to_string()));
        assert!(annotation_text("int) -> None:\n    pass\ndef f(x: int").unwrap_err().contains("is not an annotation"));
        assert!(annotation_text("int = 3, evil: str").unwrap_err().contains("is not an annotation"));
        assert!(annotation_text(&"[".repeat(100)).unwrap_err().contains("nests deeper"));
    }
}
