//! Prompts, resources and completion over MCP (SPEC §15).
//!
//! Owns `prompts/list` and `prompts/get`, the view's resources and resource templates
//! in `resources/list`, `resources/templates/list` and `resources/read` (after the
//! docs, which `mod.rs` serves), `resources/subscribe` and `completion/complete`, and
//! turning what a prompt or resource function returned into MCP's shapes. A prompt or
//! resource runs through the runtime as a tool does, on a blocking thread, after the
//! view admitted it (profile names, policy); an MCP server's is forwarded there and
//! its answer relayed as the server sent it, and its completion asked of the server. Must never: run one the view did not
//! admit, or turn a value it cannot show into an empty answer without saying why.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse, GetPromptResult,
    ListPromptsResult, ListResourceTemplatesResult, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Reference,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};

use super::call::{self, Driven};
use super::{Server, content};
use crate::discovery::registry::Registry;
use crate::export;
use crate::host::view::{Admission, Admitted, Member};
use crate::runtime::{CallOptions, Outcome, ToolResult};

/// Most completion values one answer carries (MCP's limit).
const MAX_COMPLETIONS: usize = 100;

impl Server {
    /// `prompts/list`: the view's prompts, under the names the profile shows.
    pub(super) async fn list_prompts_now(&self) -> ListPromptsResult {
        let prompts: Vec<Value> =
            self.shown(|registry| registry.prompts().map(|(_, prompt)| export::mcp_prompt(prompt)).collect()).await;
        serde_json::from_value(json!({ "resultType": "complete", "prompts": prompts })).unwrap_or_default()
    }

    /// The view's resources, or its resource templates, as MCP lists them.
    pub(super) async fn shown_resources(&self, templates: bool) -> Vec<Value> {
        self.shown(move |registry| {
            registry
                .resources()
                .filter(|(_, resource)| resource.is_template() == templates)
                .map(|(_, resource)| export::mcp_resource(resource))
                .collect()
        })
        .await
    }

    /// `resources/templates/list`.
    pub(super) async fn list_templates_now(&self) -> ListResourceTemplatesResult {
        let templates = self.shown_resources(true).await;
        serde_json::from_value(json!({ "resultType": "complete", "resourceTemplates": templates })).unwrap_or_default()
    }

    /// What `read` makes of the view's registry, made on a blocking thread.
    async fn shown<T: Send + Default + 'static>(&self, read: impl FnOnce(&Registry) -> T + Send + 'static) -> T {
        let server = self.clone();
        let shown = tokio::task::spawn_blocking(move || read(&server.view(&server.snapshot()).registry));
        shown.await.unwrap_or_default()
    }

    /// `prompts/get`: the prompt run with the arguments given, its value as messages;
    /// what it asks the client is asked as a tool's is (an `InputRequiredResult` round
    /// on the handshake-less protocol). A prompt that fails is a protocol error naming
    /// why (MCP has no failed prompt).
    pub(super) async fn get_prompt_now(
        &self,
        request: GetPromptRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let name = request.name.clone();
        // Admitted on every request: a retry another replica holds runs here again.
        let registry = self.snapshot();
        let admitted = self.admitted(&registry, &name, Member::Prompt)?;
        let run = Some((admitted, request.arguments.clone().unwrap_or_default()));
        let state = request.request_state.as_deref();
        let target = format!("prompts/get {name}");
        let output = match call::call_member(self, &target, run, state, request.input_responses.as_ref(), context)
            .await?
        {
            Driven::Asked(asked) => return Ok(asked.into()),
            Driven::Ended(reason) => return Err(ErrorData::internal_error(format!("prompt `{name}`: {reason}"), None)),
            // `call_member` never lets a prompt become a task.
            Driven::Task(..) => return Err(ErrorData::internal_error(format!("prompt `{name}` is no task"), None)),
            // An MCP server's prompt: its `GetPromptResult` as it sent it.
            Driven::Done(result) if matches!(result.outcome, Outcome::Relayed { .. }) => {
                let relayed = complete(succeeded(result, &name)?);
                return serde_json::from_value::<GetPromptResult>(relayed)
                    .map(Into::into)
                    .map_err(|err| ErrorData::internal_error(format!("prompt `{name}`: {err}"), None));
            }
            Driven::Done(result) => succeeded(result, &name)?,
        };
        let messages = prompt_result(output)
            .map_err(|problem| ErrorData::internal_error(format!("prompt `{name}` returned {problem}"), None))?;
        let result: GetPromptResult = serde_json::from_value(messages)
            .map_err(|err| ErrorData::internal_error(format!("prompt `{name}`: {err}"), None))?;
        Ok(result.into())
    }

    /// `resources/read` of a resource or template URI of the view, run as a prompt
    /// is; `None` when no resource of the view has that URI.
    pub(super) async fn read_member(
        &self,
        request: &ReadResourceRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Option<Result<ReadResourceResponse, ErrorData>> {
        let uri = request.uri.as_str();
        let registry = self.snapshot();
        let (server, wanted) = (self.clone(), uri.to_string());
        let found = tokio::task::spawn_blocking(move || {
            let view = server.view(&server.snapshot());
            // A resource of that very URI before any template that matches it.
            let resources = view.registry.resources().map(|(_, resource)| resource);
            let (fixed, templates): (Vec<_>, Vec<_>) = resources.partition(|resource| !resource.is_template());
            let resources = fixed.into_iter().chain(templates);
            let mut found = resources.filter_map(|resource| Some((resource.arguments_of(&wanted)?, resource)));
            let (arguments, resource) = found.next()?;
            // An MCP server's variables are its own to judge.
            let forwarded = view
                .registry
                .resource(&resource.function.name)
                .is_some_and(|(library, _)| matches!(library.origin, crate::discovery::extract::Origin::Mcp { .. }));
            let refused = if forwarded { None } else { segment_refusal(&resource.uri, &arguments) };
            Some((resource.function.name.clone(), arguments, resource.mime_type.clone(), refused))
        });
        let (name, arguments, mime_type, refused) = found.await.ok().flatten()?;
        if let Some(refused) = refused {
            return Some(Err(ErrorData::invalid_params(refused, Some(json!({ "uri": uri })))));
        }
        let run = match self.admitted(&registry, &name, Member::Resource) {
            Ok(admitted) => Some((admitted, arguments)),
            Err(err) => return Some(Err(err)),
        };
        let (state, responses) = (request.request_state.as_deref(), request.input_responses.as_ref());
        let target = format!("resources/read {uri}");
        let output = match call::call_member(self, &target, run, state, responses, context).await {
            Err(err) => return Some(Err(err)),
            Ok(Driven::Asked(asked)) => return Some(Ok(asked.into())),
            Ok(Driven::Ended(reason)) => {
                return Some(Err(ErrorData::internal_error(format!("resource `{name}`: {reason}"), None)));
            }
            // An MCP server's resource: its `ReadResourceResult` as it sent it.
            Ok(Driven::Done(result)) if matches!(result.outcome, Outcome::Relayed { .. }) => {
                return Some(succeeded(result, &name).and_then(|relayed| {
                    serde_json::from_value::<ReadResourceResult>(complete(relayed))
                        .map(Into::into)
                        .map_err(|err| ErrorData::internal_error(format!("resource `{name}`: {err}"), None))
                }));
            }
            Ok(Driven::Done(result)) => succeeded(result, &name),
            // `call_member` never lets a resource become a task.
            Ok(Driven::Task(..)) => Err(ErrorData::internal_error(format!("resource `{name}` is no task"), None)),
        };
        Some(output.and_then(|output| {
            let contents = resource_contents(output, uri, mime_type.as_deref())
                .map_err(|problem| ErrorData::internal_error(format!("resource `{name}` returned {problem}"), None))?;
            let read: ReadResourceResult =
                serde_json::from_value(json!({ "resultType": "complete", "contents": contents }))
                    .map_err(|err| ErrorData::internal_error(format!("resource `{name}`: {err}"), None))?;
            Ok(read.into())
        }))
    }

    /// `completion/complete` for a prompt's argument or a resource template's variable.
    pub(super) async fn complete_now(&self, request: CompleteRequestParams) -> Result<CompleteResult, ErrorData> {
        let registry = self.snapshot();
        let (name, member) = match &request.r#ref {
            Reference::Prompt(prompt) => (prompt.name.clone(), Member::Prompt),
            Reference::Resource(resource) => {
                let (server, uri) = (self.clone(), resource.uri.clone());
                let found = tokio::task::spawn_blocking(move || {
                    let view = server.view(&server.snapshot());
                    view.registry.resources().find(|(_, r)| r.uri == uri).map(|(_, r)| r.function.name.clone())
                });
                match found.await.ok().flatten() {
                    Some(name) => (name, Member::Resource),
                    None => {
                        return Err(ErrorData::invalid_params(
                            format!("no resource template `{}`", resource.uri),
                            Some(json!({ "uri": resource.uri })),
                        ));
                    }
                }
            }
            _ => return Err(ErrorData::invalid_params("completion of an unknown kind of reference", None)),
        };
        let admitted = self.admitted(&registry, &name, member)?;
        if let Some(upstreams) = self.upstreams().cloned() {
            let (argument, value) = (request.argument.name.clone(), request.argument.value.clone());
            let context: Option<serde_json::Map<String, Value>> = request
                .context
                .as_ref()
                .and_then(|context| context.arguments.as_ref())
                .map(|arguments| arguments.iter().map(|(k, v)| (k.clone(), json!(v))).collect());
            let admitted = admitted.clone();
            let asked = tokio::task::spawn_blocking(move || {
                let (library, function) = (admitted.library(), admitted.function());
                matches!(library.origin, crate::discovery::extract::Origin::Mcp { .. })
                    .then(|| upstreams.complete(library, function, member, &argument, &value, context.as_ref()))
            });
            match asked.await.ok().flatten() {
                None => {}
                Some(Err(problem)) => return Err(ErrorData::invalid_params(problem, None)),
                Some(Ok(mut completion)) => {
                    // What the server offers, at most MCP's limit.
                    if let Some(Value::Array(values)) = completion.get_mut("values") {
                        values.truncate(MAX_COMPLETIONS);
                    }
                    return serde_json::from_value(json!({ "resultType": "complete", "completion": completion }))
                        .map_err(|err| ErrorData::internal_error(err.to_string(), None));
                }
            }
        }
        let (server, argument, value) = (self.clone(), request.argument.name.clone(), request.argument.value.clone());
        // A completion function runs as a tool does, in the workspace, within the
        // time limit; it asks nothing and logs nowhere.
        let settings = &self.shared.settings;
        let options = CallOptions {
            workspace: settings.workspace.clone(),
            timeout: settings.timeout,
            log_level: Some(crate::runtime::host_objects::level::OFF),
            ..CallOptions::default()
        };
        let values = tokio::task::spawn_blocking(move || match server.python() {
            Err(err) => Err(err),
            Ok(runtime) => runtime.complete(&admitted, &argument, &value, &options),
        });
        let values = values
            .await
            .unwrap_or_else(|_| Err("the completion ended abruptly".to_string()))
            .map_err(|problem| ErrorData::invalid_params(problem, None))?;
        let total = values.len();
        let has_more = total > MAX_COMPLETIONS;
        let values: Vec<String> = values.into_iter().take(MAX_COMPLETIONS).collect();
        serde_json::from_value(json!({ "resultType": "complete", "completion": { "values": values, "total": total, "hasMore": has_more } }))
            .map_err(|err| ErrorData::internal_error(err.to_string(), None))
    }

    /// The view's admission of a prompt or resource, as a protocol error when refused.
    fn admitted(&self, registry: &Arc<Registry>, name: &str, member: Member) -> Result<Admitted, ErrorData> {
        match self.admit_as(registry, &self.shared.settings.config.current(), name, member) {
            Admission::Run(admitted) => Ok(admitted),
            Admission::Refused(rule) => Err(ErrorData::invalid_request(rule, None)),
            Admission::Unknown(message) => Err(ErrorData::invalid_params(message, None)),
        }
    }

    /// The resources of the view that `files` serve, among the URIs `subscribed`.
    pub(super) fn updated_resources(&self, files: &[PathBuf], subscribed: &HashSet<String>) -> Vec<String> {
        let view = self.view(&self.snapshot());
        subscribed
            .iter()
            .filter(|uri| {
                view.registry
                    .resources()
                    .any(|(library, resource)| files.contains(&library.path) && resource.arguments_of(uri).is_some())
            })
            .cloned()
            .collect()
    }
}

/// The output of a prompt or resource that ran, or the protocol error of one that
/// did not: invalid arguments are the caller's (`-32602`), anything else the server's.
/// The client hears the exception's type and message; its traceback (the server's
/// paths) goes to lcp's log alone.
fn succeeded(result: ToolResult, name: &str) -> Result<Value, ErrorData> {
    if result.ok() {
        return Ok(result.output);
    }
    let error = result.error.unwrap_or_else(|| "it failed".to_string());
    if let Some(traceback) = result.traceback.as_deref().filter(|traceback| !traceback.is_empty()) {
        eprintln!("lcp: `{name}` failed: {error}\n{}", traceback.trim_end());
    }
    match result.outcome {
        Outcome::Refused | Outcome::Invalid if result.traceback.is_none() => {
            Err(ErrorData::invalid_params(error, None))
        }
        _ => Err(ErrorData::internal_error(format!("`{name}` failed: {error}"), None)),
    }
}

/// A result relayed from a server, marked complete (SEP-2322) when it says nothing
/// of its type.
fn complete(mut result: Value) -> Value {
    if let Value::Object(fields) = &mut result {
        fields.entry("resultType").or_insert_with(|| json!("complete"));
    }
    result
}

/// Why the values a URI gave a template's `{name}` variables cannot be taken, if they
/// cannot: `{name}` is one segment, so its decoded value holds no `/` and no NUL and is
/// not `.` or `..` (`{+name}` takes any characters).
fn segment_refusal(template: &str, arguments: &serde_json::Map<String, Value>) -> Option<String> {
    arguments.iter().find_map(|(variable, value)| {
        let value = value.as_str()?;
        if template.contains(&format!("{{+{variable}}}")) {
            return None;
        }
        let why = if value.contains('/') {
            "holds `/`"
        } else if value.contains('\0') {
            "holds a NUL character"
        } else if value == "." || value == ".." {
            "is `.` or `..`"
        } else {
            return None;
        };
        Some(format!(
            "the URI variable `{variable}` of `{template}` takes one path segment, and its value {why} once decoded"
        ))
    })
}

/// A prompt's value as `prompts/get`'s result: a string is one user message; a list
/// holds messages (`{"role", "content"}`, the content a string, a block or a list of
/// blocks, each block a message of its own) or strings; a dict has `messages` and
/// maybe `description`. Says what is wrong with a value that is none of these.
fn prompt_result(output: Value) -> Result<Value, String> {
    let (description, messages) = match output {
        Value::Object(mut fields) if fields.contains_key("messages") => {
            let description = fields.remove("description");
            (description, fields.remove("messages").unwrap_or_default())
        }
        Value::String(text) => (None, json!([text])),
        list @ Value::Array(_) => (None, list),
        other => return Err(format!("{}, not a string, a list of messages or a dict with `messages`", kind(&other))),
    };
    let Value::Array(items) = messages else {
        return Err("`messages` that are not a list".to_string());
    };
    let mut out = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        let (role, content) = match item {
            Value::String(text) => ("user".to_string(), Value::String(text)),
            Value::Object(mut message) => {
                let role = match message.get("role").and_then(Value::as_str) {
                    None => "user".to_string(),
                    Some(role @ ("user" | "assistant")) => role.to_string(),
                    Some(other) => return Err(format!("message {i} with the role `{other}` (user or assistant)")),
                };
                (role, message.remove("content").unwrap_or(Value::Null))
            }
            other => return Err(format!("message {i} as {}, not a string or a dict", kind(&other))),
        };
        let blocks = match content {
            Value::Array(blocks) => blocks,
            block => vec![block],
        };
        for block in blocks {
            let block =
                prompt_block(&block).ok_or_else(|| format!("message {i} with content that is no block: {block}"))?;
            out.push(json!({ "role": role, "content": block }));
        }
    }
    let mut result = json!({ "resultType": "complete", "messages": out });
    if let Some(Value::String(description)) = description {
        result["description"] = json!(description);
    }
    Ok(result)
}

/// One content block of a prompt message (SPEC §10's blocks): a string is text;
/// `{"type": "text" | "image" | "audio" | "resource", ...}` as MCP has them, an image
/// or audio's MIME type recognised from its data when not given.
fn prompt_block(block: &Value) -> Option<Value> {
    match block {
        Value::String(text) => Some(json!({ "type": "text", "text": text })),
        Value::Object(fields) => match fields.get("type").and_then(Value::as_str)? {
            "text" => fields.get("text").and_then(Value::as_str).map(|text| json!({ "type": "text", "text": text })),
            "image" => serde_json::to_value(content::block("images", block)?).ok(),
            "audio" => serde_json::to_value(content::block("audio", block)?).ok(),
            "resource" => serde_json::to_value(content::block("resources", fields.get("resource")?)?).ok(),
            _ => None,
        },
        _ => None,
    }
}

/// A resource function's contents (`{"text"}` / `{"blob"}` items, from the runtime)
/// with the URI read and the MIME type each lacks: the declared one, else
/// `text/plain` for text and `application/octet-stream` for a blob.
fn resource_contents(output: Value, uri: &str, mime_type: Option<&str>) -> Result<Vec<Value>, String> {
    let Value::Array(items) = output else {
        return Err(format!("{}, not a str, bytes or a list of contents", kind(&output)));
    };
    let mut contents = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let Value::Object(mut fields) = item else {
            return Err(format!("item {i} as {}, not a str, bytes or a dict with `text` or `blob`", kind(&item)));
        };
        let default_type = match (fields.get("text"), fields.get("blob")) {
            (Some(Value::String(_)), None) => "text/plain",
            (None, Some(Value::String(_))) => "application/octet-stream",
            _ => return Err(format!("item {i} without exactly one of `text` or `blob` as a string")),
        };
        fields.entry("uri").or_insert_with(|| json!(uri));
        if let Some(value) = fields.remove("mime_type") {
            fields.entry("mimeType").or_insert(value);
        }
        fields.entry("mimeType").or_insert_with(|| json!(mime_type.unwrap_or(default_type)));
        contents.push(Value::Object(fields));
    }
    if contents.is_empty() {
        return Err("no contents (an empty list)".to_string());
    }
    Ok(contents)
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "None",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a dict",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_values_become_messages() {
        let simple = prompt_result(json!("Hello")).unwrap();
        let hello = json!([{"role": "user", "content": {"type": "text", "text": "Hello"}}]);
        assert_eq!(simple, json!({"resultType": "complete", "messages": hello}));
        let listed = prompt_result(json!([
            {"role": "assistant", "content": ["One", {"type": "text", "text": "Two"}]},
            {"content": {"type": "resource", "resource": {"uri": "x://a", "text": "A"}}},
        ]))
        .unwrap();
        assert_eq!(listed["messages"].as_array().unwrap().len(), 3);
        assert_eq!(listed["messages"][1]["role"], "assistant");
        assert_eq!(listed["messages"][2]["content"]["resource"]["uri"], "x://a");
        let described = prompt_result(json!({"description": "D", "messages": ["M"]})).unwrap();
        assert_eq!(described["description"], "D");
        assert!(prompt_result(json!(3)).unwrap_err().contains("a number"));
        assert!(prompt_result(json!([{"role": "system", "content": "x"}])).unwrap_err().contains("`system`"));
        assert!(prompt_result(json!([{"content": {"type": "video"}}])).unwrap_err().contains("no block"));
    }

    #[test]
    fn a_template_variable_takes_one_segment() {
        let args = |value: &str| serde_json::Map::from_iter([("topic".to_string(), json!(value))]);
        for value in ["../../etc/hostname", "a/b", ".", "..", "a\0b"] {
            let refused = segment_refusal("notes://{topic}", &args(value)).unwrap_or_else(|| panic!("{value:?}"));
            assert!(refused.contains("`topic`"), "{refused}");
        }
        assert_eq!(segment_refusal("notes://{topic}", &args("..a")), None);
        assert_eq!(segment_refusal("files://{+topic}", &args("a/../b")), None);
    }

    #[test]
    fn resource_contents_get_the_uri_and_a_mime_type() {
        let text = resource_contents(json!([{"text": "T"}]), "x://a", None).unwrap();
        assert_eq!(text, [json!({"text": "T", "uri": "x://a", "mimeType": "text/plain"})]);
        let blob = resource_contents(json!([{"blob": "AAA="}]), "x://a", Some("image/png")).unwrap();
        assert_eq!(blob[0]["mimeType"], "image/png");
        assert!(resource_contents(json!([]), "x://a", None).unwrap_err().contains("empty"));
        assert!(resource_contents(json!([{"text": "a", "blob": "b"}]), "x://a", None).unwrap_err().contains("exactly"));
        assert!(resource_contents(json!([3]), "x://a", None).unwrap_err().contains("a number"));
    }
}
