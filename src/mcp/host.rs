//! What a tool asks of its host (SPEC §9), said in MCP: a confirmation or a user
//! interaction is an elicitation form, `generate_text` is `sampling/createMessage`,
//! `tool_context.roots()` is `roots/list`, progress is `notifications/progress` (or a
//! log message when the request has no progress token), a log record is
//! `notifications/message`.
//!
//! This module only translates, both ways; `call.rs` decides when to send and where
//! (a server→client request, or an `InputRequiredResult` round) and waits. A request
//! the client cannot take (no elicitation, no sampling, a form MCP cannot express) is
//! answered at once, saying why, so a tool never waits for what cannot come.

#![allow(deprecated)] // MCP's logging (SEP-2577) is deprecated but still what clients read.

use rmcp::model::{
    CreateMessageRequest, CreateMessageRequestParams, ElicitRequest, ElicitRequestParams, InputRequest,
    ListRootsRequest, LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
    ServerRequest,
};
use serde_json::{Map, Value, json};

use crate::runtime::host_objects::{
    Answer, Generated, Generation, HostAnswer, HostRequest, Interaction, InteractionKind, LogRecord, Progress, level,
    refused,
};
use crate::runtime::{ConfirmRequest, Confirmation};
use crate::shown;

/// The field of the form an interaction of one answer asks for.
const ANSWER_FIELD: &str = "answer";
/// `maxTokens` when the tool gives no `n_predict`.
const DEFAULT_MAX_TOKENS: u32 = 1024;

/// What the client of a call can do.
#[derive(Debug, Clone, Copy)]
pub(super) struct Able {
    pub elicit: bool,
    pub sample: bool,
    /// The client shares its roots (`roots/list`).
    pub roots: bool,
    /// `lcp serve --yes`: allow what a tool asks to confirm when the client cannot ask.
    pub yes: bool,
}

/// A request for the client.
pub(super) enum Outbound {
    Elicit(ElicitRequestParams),
    Sample(CreateMessageRequestParams),
    Roots,
}

fn list_roots() -> ListRootsRequest {
    ListRootsRequest { method: Default::default(), extensions: Default::default() }
}

impl Outbound {
    pub(super) fn server_request(self) -> ServerRequest {
        match self {
            Outbound::Elicit(params) => ServerRequest::ElicitRequest(ElicitRequest::new(params)),
            Outbound::Sample(params) => ServerRequest::CreateMessageRequest(CreateMessageRequest::new(params)),
            Outbound::Roots => ServerRequest::ListRootsRequest(list_roots()),
        }
    }

    pub(super) fn input_request(self) -> InputRequest {
        match self {
            Outbound::Elicit(params) => InputRequest::Elicitation(ElicitRequest::new(params)),
            Outbound::Sample(params) => InputRequest::CreateMessage(CreateMessageRequest::new(params)),
            Outbound::Roots => InputRequest::ListRoots(list_roots()),
        }
    }
}

/// The client capability `request` needs and the client lacks (`elicitation`,
/// `sampling`), if any: what a confirmation `--yes` allows needs none.
pub(super) fn missing_capability(request: &HostRequest, able: Able) -> Option<&'static str> {
    match request {
        HostRequest::Confirm(_) if !able.elicit && !able.yes => Some("elicitation"),
        HostRequest::Interact(_) if !able.elicit => Some("elicitation"),
        HostRequest::Generate(_) if !able.sample => Some("sampling"),
        HostRequest::Roots(_) if !able.roots => Some("roots"),
        _ => None,
    }
}

/// The request to send the client for `request`, or the answer when it cannot be sent.
pub(super) fn outbound(request: &HostRequest, able: Able) -> Result<Outbound, HostAnswer> {
    match request {
        HostRequest::Confirm(_) if !able.elicit && able.yes => {
            Err(HostAnswer::Confirm(Confirmation::allow("allowed by `lcp serve --yes`")))
        }
        HostRequest::Confirm(_) if !able.elicit => Err(refused(
            request,
            "the MCP client cannot ask the user (it does not support elicitation); \
             `lcp serve --yes` allows what tools ask to confirm",
        )),
        // `--yes` answers confirmations only: a form or a question needs the user, or
        // answers given in advance.
        HostRequest::Interact(_) if !able.elicit => Err(refused(
            request,
            "the MCP client cannot ask the user (it does not support elicitation); \
             a client that supports it asks the user, and `lcp call --answers` gives answers in advance",
        )),
        HostRequest::Generate(_) if !able.sample => {
            Err(refused(request, "the MCP client offers no model to the server (it does not support sampling)"))
        }
        HostRequest::Confirm(confirm) => Ok(Outbound::Elicit(form(confirm_message(confirm), json!({})))),
        HostRequest::Interact(interaction) => interaction_form(interaction).map(Outbound::Elicit),
        HostRequest::Generate(generation) => {
            sampling(generation).map(Outbound::Sample).map_err(|err| refused(request, &err))
        }
        HostRequest::Roots(_) if !able.roots => {
            Err(refused(request, "the MCP client shares no roots (it does not support roots/list)"))
        }
        HostRequest::Roots(_) => Ok(Outbound::Roots),
        // `call.rs` asks a batch's requests one by one, or together in one round.
        HostRequest::Batch(_) => Err(refused(request, "a batch is asked request by request")),
    }
}

/// The tool's answer from the client's result (an `ElicitResult` or a
/// `CreateMessageResult`, as JSON).
pub(super) fn answer(request: &HostRequest, result: &Value) -> HostAnswer {
    let action = result.get("action").and_then(Value::as_str);
    match request {
        HostRequest::Confirm(_) => HostAnswer::Confirm(match action {
            Some("accept") => Confirmation::allow("the user accepted"),
            Some("decline") => Confirmation::reject("the user declined"),
            Some("cancel") => Confirmation::reject("the user cancelled"),
            _ => Confirmation::reject("the client did not answer the confirmation"),
        }),
        HostRequest::Interact(interaction) => HostAnswer::Interact(match (action, result.get("content")) {
            (Some("accept"), Some(Value::Object(content))) if interaction.kind == InteractionKind::Form => {
                Answer::Given(Value::Object(content.clone()))
            }
            (Some("accept"), Some(Value::Object(content))) => match content.get(ANSWER_FIELD) {
                Some(Value::String(text)) => Answer::Given(Value::String(text.clone())),
                Some(Value::Null) | None => Answer::Declined,
                Some(other) => Answer::Given(Value::String(other.to_string())),
            },
            (Some("accept"), None) if interaction.kind == InteractionKind::Form => Answer::Given(json!({})),
            _ => Answer::Declined,
        }),
        HostRequest::Generate(_) => HostAnswer::Generate(sampled(result)),
        HostRequest::Roots(_) => HostAnswer::Roots(match result.get("roots") {
            Some(Value::Array(roots)) => Ok(roots.clone()),
            _ => Err("the client's answer holds no roots".to_string()),
        }),
        HostRequest::Batch(_) => refused(request, "a batch is answered request by request"),
    }
}

fn form(message: String, schema: Value) -> ElicitRequestParams {
    let mut schema = match schema {
        Value::Object(schema) => schema,
        _ => Map::new(),
    };
    schema.insert("type".into(), json!("object"));
    schema.entry("properties").or_insert_with(|| json!({}));
    let requested_schema = serde_json::from_value(Value::Object(schema)).unwrap_or_else(|_| {
        serde_json::from_value(json!({"type": "object", "properties": {}})).expect("an empty form")
    });
    ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema }
}

fn asker(library: &str, tool: Option<&str>) -> String {
    match tool {
        Some(tool) => format!("`{}` ({})", shown::line(tool), shown::line(library)),
        None => format!("`{}`", shown::line(library)),
    }
}

/// What the client shows the user: escaped as at a terminal (SPEC §17), so the text
/// approved is the text that runs.
fn confirm_message(request: &ConfirmRequest) -> String {
    let mut message = format!("{} asks for confirmation", asker(&request.library, request.tool.as_deref()));
    if !request.label.is_empty() {
        message.push_str(&format!(": {}", shown::line(&request.label)));
    }
    if !request.content.is_empty() {
        message.push_str(&format!("\n\n{}", shown::confirmation(&request.content)));
    }
    message
}

/// The form of an interaction: one `answer` field (a string, one of the options),
/// or the tool's own flat schema.
fn interaction_form(interaction: &Interaction) -> Result<ElicitRequestParams, HostAnswer> {
    let mut message = format!("{} asks", asker(&interaction.library, interaction.tool.as_deref()));
    match (interaction.title.is_empty(), interaction.prompt.is_empty()) {
        (false, false) => message.push_str(&format!(
            ": {}\n\n{}",
            shown::line(&interaction.title),
            shown::confirmation(&interaction.prompt)
        )),
        (false, true) => message.push_str(&format!(": {}", shown::line(&interaction.title))),
        (true, false) => message.push_str(&format!(": {}", shown::confirmation(&interaction.prompt))),
        (true, true) => {}
    }
    let schema = match interaction.kind {
        InteractionKind::Form => {
            let schema = interaction.schema.clone().unwrap_or_else(|| json!({"type": "object", "properties": {}}));
            if let Err(err) = serde_json::from_value::<rmcp::model::ElicitationSchema>(schema.clone()) {
                return Err(HostAnswer::Interact(Answer::Unavailable(format!(
                    "the form cannot be asked over MCP (elicitation takes a flat object of string, number, \
                     integer, boolean and enum fields): {err}"
                ))));
            }
            schema
        }
        kind => {
            let mut field = json!({"type": "string", "title": if interaction.title.is_empty() { "Answer" } else { &interaction.title }});
            if !interaction.prompt.is_empty() {
                field["description"] = json!(interaction.prompt);
            }
            if kind == InteractionKind::Select && !interaction.options.is_empty() {
                field["enum"] = json!(interaction.options);
            }
            if let Some(default) = interaction.default.as_ref().filter(|default| default.is_string()) {
                field["default"] = default.clone();
            }
            if kind == InteractionKind::Secret {
                message.push_str("\n\n(a secret: MCP has no hidden field, the client sees what is typed)");
            }
            json!({"type": "object", "properties": {ANSWER_FIELD: field}, "required": [ANSWER_FIELD]})
        }
    };
    Ok(form(message, schema))
}

/// `sampling/createMessage` for `generate_text`: the prompt as a user message, each
/// image as one more.
fn sampling(generation: &Generation) -> Result<CreateMessageRequestParams, String> {
    let mut messages = vec![json!({"role": "user", "content": {"type": "text", "text": generation.prompt}})];
    for image in &generation.images {
        let (data, mime) = super::content::media(image, super::content::Media::Image);
        messages.push(json!({"role": "user", "content": {"type": "image", "data": data, "mimeType": mime}}));
    }
    let max_tokens = generation.n_predict.map_or(DEFAULT_MAX_TOKENS, |n| u32::try_from(n).unwrap_or(u32::MAX));
    let mut params = json!({"messages": messages, "maxTokens": max_tokens});
    if let Some(system) = &generation.system_prompt {
        params["systemPrompt"] = json!(system);
    }
    if let Some(temperature) = generation.temperature {
        params["temperature"] = json!(temperature);
    }
    if let Some(Value::Array(stops)) = generation.extra.get("stop_sequences").or(generation.extra.get("stop")) {
        params["stopSequences"] = Value::Array(stops.clone());
    }
    serde_json::from_value(params).map_err(|err| format!("the request cannot be made for sampling: {err}"))
}

/// The text of a `CreateMessageResult`'s message, and the model it names.
fn sampled(result: &Value) -> Result<Generated, String> {
    let content = &result["content"];
    let blocks: Vec<&Value> = match content {
        Value::Array(blocks) => blocks.iter().collect(),
        Value::Null => return Err("the client's model answered nothing".to_string()),
        block => vec![block],
    };
    let text: Vec<&str> = blocks.iter().filter_map(|block| block["text"].as_str()).collect();
    if text.is_empty() {
        return Err("the client's model answered without text".to_string());
    }
    Ok(Generated { text: text.concat(), model: result["model"].as_str().map(str::to_string) })
}

/// The MCP level of a Python level: the highest MCP level at or below it.
pub(super) fn mcp_level(python: u32) -> LoggingLevel {
    match python {
        ..level::INFO => LoggingLevel::Debug,
        level::INFO..25 => LoggingLevel::Info,
        25..level::WARNING => LoggingLevel::Notice,
        level::WARNING..level::ERROR => LoggingLevel::Warning,
        level::ERROR..level::CRITICAL => LoggingLevel::Error,
        level::CRITICAL..55 => LoggingLevel::Critical,
        55..60 => LoggingLevel::Alert,
        _ => LoggingLevel::Emergency,
    }
}

/// The Python level below which records are not made, for an MCP level.
pub(super) fn python_level(mcp: LoggingLevel) -> u32 {
    match mcp {
        LoggingLevel::Debug => level::DEBUG,
        LoggingLevel::Info => level::INFO,
        LoggingLevel::Notice => 25,
        LoggingLevel::Warning => level::WARNING,
        LoggingLevel::Error => level::ERROR,
        LoggingLevel::Critical => level::CRITICAL,
        LoggingLevel::Alert => 55,
        LoggingLevel::Emergency => 60,
    }
}

/// `notifications/message` for a record.
pub(super) fn log_message(record: &LogRecord) -> LoggingMessageNotificationParam {
    LoggingMessageNotificationParam::new(mcp_level(record.level), Value::String(record.message.clone()))
        .with_logger(record.logger.clone())
}

/// A problem a rescan found (a file dropped in that does not parse) as a log message
/// from the logger `lcp`.
pub(super) fn diagnostic_message(problem: &crate::diag::Diagnostic) -> LoggingMessageNotificationParam {
    let level = match problem.level {
        crate::diag::Level::Error => LoggingLevel::Error,
        crate::diag::Level::Warning => LoggingLevel::Warning,
    };
    LoggingMessageNotificationParam::new(level, Value::String(problem.to_string())).with_logger("lcp".to_string())
}

/// `notifications/progress` for a report; `count` is how many came before it (the
/// progress when the tool gives no number, so that it always increases).
pub(super) fn progress_notification(
    token: &ProgressToken,
    progress: &Progress,
    count: u64,
) -> ProgressNotificationParam {
    let mut params = json!({
        "progressToken": token,
        "progress": progress.progress.unwrap_or(count as f64 + 1.0),
    });
    if let Some(total) = progress.total {
        params["total"] = json!(total);
    }
    if !progress.text.is_empty() {
        params["message"] = json!(progress.text);
    }
    serde_json::from_value(params).expect("a progress notification made of a token and numbers")
}

/// A progress report as a log message (a request without a progress token).
pub(super) fn progress_message(progress: &Progress) -> LoggingMessageNotificationParam {
    let amount = match (progress.progress, progress.total) {
        (Some(done), Some(total)) => format!(" ({done}/{total})"),
        (Some(done), None) => format!(" ({done})"),
        _ => String::new(),
    };
    LoggingMessageNotificationParam::new(LoggingLevel::Info, json!(format!("{}{amount}", progress.text)))
        .with_logger(progress.tool.clone().unwrap_or_else(|| "progress".to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interaction(kind: InteractionKind) -> Interaction {
        Interaction {
            library: "lib".into(),
            tool: Some("tool_x".into()),
            kind,
            title: "Region".into(),
            prompt: "Pick one".into(),
            options: vec!["eu".into(), "us".into()],
            default: Some(json!("eu")),
            schema: None,
            key: None,
        }
    }

    fn elicited(request: &HostRequest) -> Value {
        match outbound(request, Able { elicit: true, sample: true, roots: false, yes: false }) {
            Ok(Outbound::Elicit(params)) => serde_json::to_value(params).unwrap(),
            _ => panic!("not an elicitation"),
        }
    }

    #[test]
    fn a_select_is_a_form_of_one_enum_field_and_its_answer_the_chosen_text() {
        let request = HostRequest::Interact(interaction(InteractionKind::Select));
        let params = elicited(&request);
        assert_eq!(
            params["requestedSchema"]["properties"]["answer"],
            json!({"type": "string", "title": "Region", "description": "Pick one", "enum": ["eu", "us"], "default": "eu"})
        );
        assert!(params["message"].as_str().unwrap().starts_with("`tool_x` (lib) asks: Region"));
        let accepted = answer(&request, &json!({"action": "accept", "content": {"answer": "us"}}));
        assert_eq!(accepted, HostAnswer::Interact(Answer::Given(json!("us"))));
        assert_eq!(answer(&request, &json!({"action": "cancel"})), HostAnswer::Interact(Answer::Declined));
    }

    #[test]
    fn a_form_is_sent_as_given_and_one_mcp_cannot_express_is_unavailable() {
        let mut form = interaction(InteractionKind::Form);
        form.schema = Some(json!({"type": "object", "properties": {"n": {"type": "integer", "default": 3}}}));
        let request = HostRequest::Interact(form.clone());
        assert_eq!(elicited(&request)["requestedSchema"]["properties"]["n"], json!({"type": "integer", "default": 3}));
        let given = answer(&request, &json!({"action": "accept", "content": {"n": 4}}));
        assert_eq!(given, HostAnswer::Interact(Answer::Given(json!({"n": 4}))));
        form.schema = Some(json!({"type": "object", "properties": {"nested": {"type": "object"}}}));
        let refused =
            outbound(&HostRequest::Interact(form), Able { elicit: true, sample: true, roots: false, yes: false });
        assert!(
            matches!(refused, Err(HostAnswer::Interact(Answer::Unavailable(reason))) if reason.contains("flat object"))
        );
    }

    #[test]
    fn a_client_without_the_capability_gets_an_answer_at_once() {
        let none = Able { elicit: false, sample: false, roots: false, yes: false };
        let unasked = outbound(&HostRequest::Interact(interaction(InteractionKind::Text)), none);
        assert!(
            matches!(unasked, Err(HostAnswer::Interact(Answer::Unavailable(reason))) if reason.contains("elicitation"))
        );
        let generation = Generation {
            library: "l".into(),
            tool: None,
            prompt: "p".into(),
            images: vec![],
            n_predict: None,
            temperature: None,
            system_prompt: None,
            extra: Map::new(),
            key: None,
        };
        let unsampled = outbound(&HostRequest::Generate(generation), none);
        assert!(matches!(unsampled, Err(HostAnswer::Generate(Err(reason))) if reason.contains("sampling")));
    }

    #[test]
    fn without_elicitation_a_form_suggests_answers_and_only_a_confirmation_suggests_yes() {
        let none = Able { elicit: false, sample: false, roots: false, yes: false };
        for kind in [InteractionKind::Form, InteractionKind::Text, InteractionKind::Select] {
            let unasked = outbound(&HostRequest::Interact(interaction(kind)), none);
            let Err(HostAnswer::Interact(Answer::Unavailable(reason))) = unasked else { panic!("asked: {kind:?}") };
            assert!(reason.contains("--answers") && !reason.contains("--yes"), "{kind:?}: {reason}");
        }
        let confirm = crate::runtime::ConfirmRequest {
            library: "lib".into(),
            tool: Some("tool_x".into()),
            content: "rm a.txt".into(),
            label: "Delete".into(),
            args: vec![],
            kwargs: Map::new(),
        };
        let unasked = outbound(&HostRequest::Confirm(confirm), none);
        let Err(HostAnswer::Confirm(refusal)) = unasked else { panic!("a confirmation was asked") };
        assert!(format!("{refusal:?}").contains("--yes"), "{refusal:?}");
    }

    #[test]
    fn generate_text_is_sampling_and_its_answer_the_messages_text() {
        let generation = Generation {
            library: "l".into(),
            tool: None,
            prompt: "Describe".into(),
            images: vec!["data:image/jpeg;base64,/9j/AAAA".into()],
            n_predict: Some(100),
            temperature: Some(0.5),
            system_prompt: Some("Be brief".into()),
            extra: Map::new(),
            key: None,
        };
        let request = HostRequest::Generate(generation.clone());
        let Ok(Outbound::Sample(params)) =
            outbound(&request, Able { elicit: false, sample: true, roots: false, yes: false })
        else {
            panic!("not sampling")
        };
        let params = serde_json::to_value(params).unwrap();
        assert_eq!(params["maxTokens"], 100);
        assert_eq!(params["systemPrompt"], "Be brief");
        assert_eq!(
            params["messages"][1]["content"],
            json!({"type": "image", "data": "/9j/AAAA", "mimeType": "image/jpeg"})
        );
        let result = json!({"role": "assistant", "content": {"type": "text", "text": "A cat"}, "model": "m"});
        let generated = Generated { text: "A cat".into(), model: Some("m".into()) };
        assert_eq!(answer(&request, &result), HostAnswer::Generate(Ok(generated)));
    }

    #[test]
    fn levels_map_both_ways() {
        assert_eq!(mcp_level(level::DEBUG), LoggingLevel::Debug);
        assert_eq!(mcp_level(level::INFO), LoggingLevel::Info);
        assert_eq!(mcp_level(level::WARNING + 5), LoggingLevel::Warning);
        assert_eq!(mcp_level(level::CRITICAL), LoggingLevel::Critical);
        for mcp in [LoggingLevel::Debug, LoggingLevel::Notice, LoggingLevel::Error, LoggingLevel::Emergency] {
            assert_eq!(mcp_level(python_level(mcp)), mcp);
        }
    }
}
