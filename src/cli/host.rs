//! `lcp call`'s side of the host objects (SPEC §9): what a tool asks the user is
//! answered from `--answers`, else at the terminal (a secret is read without echo),
//! else declined with a message on stderr; progress is a line on stderr; there is no
//! model, so `generate_text` fails saying where one is.
//!
//! Must never: write to stdout (it carries the result), or wait for an answer when
//! standard input is not a terminal.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::io::{BufRead, IsTerminal, Write};
use std::sync::Mutex;

use serde_json::{Map, Value};

use crate::runtime::host_objects::{Answer, Generation, Interaction, InteractionKind, Progress};
use crate::{shown, sync};

/// `--answers JSON`: answers given in advance. A list is used in order, one answer
/// per question; an object answers a question by its title, else its prompt, else
/// its `"*"` entry. `null` declines.
#[derive(Debug, Default)]
pub(super) struct Answers {
    queue: Mutex<VecDeque<Value>>,
    by_question: Map<String, Value>,
}

impl Answers {
    pub(super) fn parse(text: &str) -> Result<Answers, String> {
        match serde_json::from_str(text) {
            Ok(Value::Array(items)) => Ok(Answers { queue: Mutex::new(items.into()), by_question: Map::new() }),
            Ok(Value::Object(by_question)) => Ok(Answers { queue: Mutex::default(), by_question }),
            Ok(_) => Err("--answers must be a JSON list (in order) or object (by title or prompt)".to_string()),
            Err(err) => Err(format!("--answers is not JSON: {err}")),
        }
    }

    fn take(&self, interaction: &Interaction) -> Option<Value> {
        if let Some(answer) = [&interaction.title, &interaction.prompt, &"*".to_string()]
            .into_iter()
            .find_map(|key| self.by_question.get(key.as_str()))
        {
            return Some(answer.clone());
        }
        sync::lock(&self.queue).pop_front()
    }
}

/// The user interaction handler of `lcp call`.
pub(super) fn interact(interaction: &Interaction, answers: &Answers) -> Answer {
    if let Some(answer) = answers.take(interaction) {
        return given(interaction, answer);
    }
    if !std::io::stdin().is_terminal() {
        eprintln!(
            "lcp: {} asks the user \"{}\", but there is no terminal to ask: declined (--answers gives answers in advance)",
            asker(interaction),
            question(interaction)
        );
        return Answer::Declined;
    }
    // One question at a time, even when calls run in parallel.
    static ASKING: Mutex<()> = Mutex::new(());
    let _asking = sync::lock(&ASKING);
    eprintln!("\n{} asks:", asker(interaction));
    if !interaction.title.is_empty() && !interaction.prompt.is_empty() {
        eprintln!("  {}", shown::line(&interaction.title));
    }
    let answer = match interaction.kind {
        InteractionKind::Text | InteractionKind::Secret => ask_text(interaction),
        InteractionKind::Select => ask_select(interaction),
        InteractionKind::Form => ask_form(interaction),
    };
    answer.map_or(Answer::Declined, Answer::Given)
}

/// What the tool receives for an answer given in advance: text as it is (a number
/// or boolean as its JSON text), a form's object as it is; `null` declines.
fn given(interaction: &Interaction, answer: Value) -> Answer {
    match (interaction.kind, answer) {
        (_, Value::Null) => Answer::Declined,
        (InteractionKind::Form, Value::Object(fields)) => Answer::Given(Value::Object(fields)),
        (InteractionKind::Form, other) => Answer::Unavailable(format!(
            "the answer given for the form \"{}\" is not an object: {other}",
            question(interaction)
        )),
        (_, Value::String(text)) => Answer::Given(Value::String(text)),
        (_, other) => Answer::Given(Value::String(other.to_string())),
    }
}

/// Who asks, escaped for the terminal (SPEC §17), as everything shown from a tool.
fn asker(interaction: &Interaction) -> String {
    match &interaction.tool {
        Some(tool) => format!("{} ({})", shown::line(tool), shown::line(&interaction.library)),
        None => shown::line(&interaction.library).into_owned(),
    }
}

fn question(interaction: &Interaction) -> Cow<'_, str> {
    shown::line(if interaction.prompt.is_empty() { &interaction.title } else { &interaction.prompt })
}

fn default_text(interaction: &Interaction) -> Option<String> {
    interaction.default.as_ref().map(|value| match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    })
}

fn ask_text(interaction: &Interaction) -> Option<Value> {
    let default = default_text(interaction).filter(|text| !text.is_empty());
    let hint = match (&default, interaction.kind) {
        (_, InteractionKind::Secret) => " (not shown)".to_string(),
        (Some(default), _) => format!(" [{}]", shown::line(default)),
        (None, _) => String::new(),
    };
    let line = read_line(&format!("{}{hint}: ", question(interaction)), interaction.kind == InteractionKind::Secret)?;
    Some(Value::String(if line.is_empty() { default.unwrap_or_default() } else { line }))
}

fn ask_select(interaction: &Interaction) -> Option<Value> {
    eprintln!("  {}", question(interaction));
    for (number, option) in interaction.options.iter().enumerate() {
        eprintln!("    {}. {}", number + 1, shown::line(option));
    }
    let default = default_text(interaction).filter(|text| !text.is_empty());
    let hint = default.as_deref().map(|text| format!(" [{text}]")).unwrap_or_default();
    loop {
        let line = read_line(&format!("Choose 1-{}{hint}: ", interaction.options.len()), false)?;
        if line.is_empty()
            && let Some(default) = &default
        {
            return Some(Value::String(default.clone()));
        }
        if let Some(option) = choose(&line, &interaction.options) {
            return Some(Value::String(option));
        }
        eprintln!("  not one of the choices");
    }
}

/// An option by its number (from 1) or its text.
fn choose(line: &str, options: &[String]) -> Option<String> {
    if let Ok(number) = line.parse::<usize>() {
        return options.get(number.checked_sub(1)?).cloned();
    }
    options.iter().find(|option| option.eq_ignore_ascii_case(line)).cloned()
}

/// Each field of the form in turn; an empty line keeps the field's default.
fn ask_form(interaction: &Interaction) -> Option<Value> {
    eprintln!("  {}", question(interaction));
    let schema = interaction.schema.clone().unwrap_or_default();
    let required: Vec<&str> = schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let mut answers = Map::new();
    for (name, field) in schema["properties"].as_object().into_iter().flatten() {
        let label = shown::line(field["title"].as_str().or(field["description"].as_str()).unwrap_or(name));
        let choices = form_choices(field);
        if !choices.is_empty() {
            eprintln!("  {label}:");
            for (number, (_, title)) in choices.iter().enumerate() {
                eprintln!("    {}. {}", number + 1, shown::line(title));
            }
        }
        loop {
            let default = field.get("default").map(|value| value.as_str().map_or(value.to_string(), str::to_string));
            let hint = default.as_deref().map(|text| format!(" [{}]", shown::line(text))).unwrap_or_default();
            let line = read_line(&format!("  {label}{hint}: "), false)?;
            if line.is_empty() {
                match field.get("default") {
                    Some(value) => {
                        answers.insert(name.clone(), value.clone());
                        break;
                    }
                    None if !required.contains(&name.as_str()) => break,
                    None => {
                        eprintln!("  an answer is required");
                        continue;
                    }
                }
            }
            match form_value(field, &choices, &line) {
                Some(value) => {
                    answers.insert(name.clone(), value);
                    break;
                }
                None => eprintln!("  not a valid answer"),
            }
        }
    }
    Some(Value::Object(answers))
}

/// A form field's choices: `(value, title)` from `enum` (+ `enumNames`) or `oneOf`.
fn form_choices(field: &Value) -> Vec<(Value, String)> {
    let titled = |options: &Value| -> Vec<(Value, String)> {
        options
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|option| {
                let value = option.get("const")?.clone();
                let title = option["title"].as_str().map_or_else(|| value.to_string(), str::to_string);
                Some((value, title))
            })
            .collect()
    };
    let items = if field["type"] == "array" { &field["items"] } else { field };
    if let Some(values) = items["enum"].as_array() {
        let names = field["enumNames"].as_array();
        return values
            .iter()
            .enumerate()
            .map(|(i, value)| {
                let title = names.and_then(|names| names.get(i)).and_then(Value::as_str);
                (
                    value.clone(),
                    title.map_or_else(|| value.as_str().map_or(value.to_string(), str::to_string), str::to_string),
                )
            })
            .collect();
    }
    let one_of = titled(&items["oneOf"]);
    if one_of.is_empty() { titled(&items["anyOf"]) } else { one_of }
}

fn form_value(field: &Value, choices: &[(Value, String)], line: &str) -> Option<Value> {
    let pick = |text: &str| -> Option<Value> {
        let text = text.trim();
        if let Ok(number) = text.parse::<usize>()
            && let Some((value, _)) = number.checked_sub(1).and_then(|i| choices.get(i))
        {
            return Some(value.clone());
        }
        choices
            .iter()
            .find(|(value, title)| title.eq_ignore_ascii_case(text) || value.as_str() == Some(text))
            .map(|(value, _)| value.clone())
    };
    match field["type"].as_str() {
        Some("array") => line.split(',').map(pick).collect::<Option<Vec<_>>>().map(Value::Array),
        _ if !choices.is_empty() => pick(line),
        Some("boolean") => match line.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" | "1" => Some(Value::Bool(true)),
            "n" | "no" | "false" | "0" => Some(Value::Bool(false)),
            _ => None,
        },
        Some("integer") => line.parse::<i64>().ok().map(Value::from),
        Some("number") => line.parse::<f64>().ok().and_then(serde_json::Number::from_f64).map(Value::Number),
        _ => Some(Value::String(line.to_string())),
    }
}

/// One line from the terminal, without its newline; `None` at the end of input.
/// `secret`: the terminal does not echo what is typed.
fn read_line(prompt: &str, secret: bool) -> Option<String> {
    // Quiet before the prompt: whatever is typed once the prompt shows is not echoed.
    let _quiet = secret.then(Quiet::new).flatten();
    eprint!("{prompt}");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    let read = std::io::stdin().lock().read_line(&mut line);
    if secret {
        eprintln!();
    }
    match read {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim_end_matches(['\n', '\r']).to_string()),
    }
}

/// The terminal's echo turned off while it lives.
struct Quiet(libc::termios);

impl Quiet {
    fn new() -> Option<Quiet> {
        // SAFETY: `termios` is plain data, filled by `tcgetattr` before it is read.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: reads the settings of fd 0 into `saved`.
        if unsafe { libc::tcgetattr(0, &raw mut saved) } != 0 {
            return None;
        }
        let mut quiet = saved;
        quiet.c_lflag &= !libc::ECHO;
        quiet.c_lflag |= libc::ECHONL;
        // SAFETY: applies settings made from the terminal's own.
        (unsafe { libc::tcsetattr(0, libc::TCSANOW, &raw const quiet) } == 0).then_some(Quiet(saved))
    }
}

impl Drop for Quiet {
    fn drop(&mut self) {
        // SAFETY: puts back the settings read in `new`.
        unsafe { libc::tcsetattr(0, libc::TCSANOW, &raw const self.0) };
    }
}

/// `lcp call` has no model.
pub(super) fn generate(_: &Generation) -> Result<String, String> {
    Err("`lcp call` has no model to ask; under `lcp serve` the MCP client's model answers (sampling)".to_string())
}

/// Progress as a line on stderr.
pub(super) fn progress(progress: &Progress) {
    let tool = progress.tool.as_deref().unwrap_or("the tool");
    let amount = match (progress.progress, progress.total) {
        (Some(done), Some(total)) => format!(" ({done}/{total})"),
        (Some(done), None) => format!(" ({done})"),
        _ => String::new(),
    };
    eprintln!("lcp: {tool}: {}{amount}", progress.text);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn asking(kind: InteractionKind, title: &str, prompt: &str) -> Interaction {
        Interaction {
            library: "l".into(),
            tool: Some("tool_x".into()),
            kind,
            title: title.into(),
            prompt: prompt.into(),
            options: vec!["eu".into(), "us".into()],
            default: None,
            schema: None,
            key: None,
        }
    }

    #[test]
    fn answers_in_advance_go_in_order_or_by_title_or_prompt() {
        let listed = Answers::parse(r#"["k", null, 3]"#).unwrap();
        let text = asking(InteractionKind::Text, "Key", "Your key?");
        assert_eq!(interact(&text, &listed), Answer::Given(json!("k")));
        assert_eq!(interact(&text, &listed), Answer::Declined);
        assert_eq!(interact(&text, &listed), Answer::Given(json!("3")));
        let keyed = Answers::parse(r#"{"Key": "by title", "Pick a region": "us", "*": "anything"}"#).unwrap();
        assert_eq!(interact(&text, &keyed), Answer::Given(json!("by title")));
        assert_eq!(interact(&asking(InteractionKind::Select, "", "Pick a region"), &keyed), Answer::Given(json!("us")));
        assert_eq!(interact(&asking(InteractionKind::Text, "Other", "?"), &keyed), Answer::Given(json!("anything")));
        let form = asking(InteractionKind::Form, "Form", "");
        let keyed = Answers::parse(r#"{"Form": {"a": 1}}"#).unwrap();
        assert_eq!(interact(&form, &keyed), Answer::Given(json!({"a": 1})));
        assert!(Answers::parse("3").is_err());
    }

    #[test]
    fn choices_by_number_or_text() {
        let options = ["eu-west".to_string(), "us-east".to_string()];
        assert_eq!(choose("2", &options).as_deref(), Some("us-east"));
        assert_eq!(choose("EU-WEST", &options).as_deref(), Some("eu-west"));
        assert_eq!(choose("0", &options), None);
        let field =
            json!({"type": "string", "oneOf": [{"const": "v1", "title": "First"}, {"const": "v2", "title": "Second"}]});
        assert_eq!(form_value(&field, &form_choices(&field), "second"), Some(json!("v2")));
        let multi = json!({"type": "array", "items": {"type": "string", "enum": ["a", "b"]}});
        assert_eq!(form_value(&multi, &form_choices(&multi), "1, b"), Some(json!(["a", "b"])));
        let number = json!({"type": "number"});
        assert_eq!(form_value(&number, &[], "2.5"), Some(json!(2.5)));
        assert_eq!(form_value(&json!({"type": "boolean"}), &[], "yes"), Some(json!(true)));
    }
}
