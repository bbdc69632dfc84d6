//! lcp as a client of the MCP servers that are tool sources (SPEC §14).
//!
//! Owns connecting to each configured server (its command over stdio, in a process
//! group of its own, or its Streamable HTTP endpoint), listing its tools as libraries of the registry
//! ([`Origin::Mcp`]: full input and output schemas, description, annotations, a grade
//! from the annotations under the per-tool tables), with its prompts, resources and
//! resource templates (`members.rs`), and forwarding calls, prompts and reads, whose
//! results go back as the server sent them ([`Outcome::Relayed`]), over rmcp's client
//! session; completion and resource subscriptions are requests of lcp's own to the server that
//! serves the prompt or URI, and its `resources/updated` and `list_changed` reach
//! [`Upstreams::on_update`] and [`Upstreams::on_change`]. Servers start in
//! parallel, each within its `startup_timeout`; one that fails is skipped with one
//! diagnostic naming it and why, and the others are unaffected. A server that dies
//! is started again on the next call of one of its tools. Every server is ended
//! when [`Upstreams`] is dropped, as MCP ends a stdio server: its input closed, a
//! moment to exit, `SIGTERM`, a moment more, then `SIGKILL` to its whole process group.
//!
//! What lcp says about a server (diagnostics, failed calls) has the server's secrets
//! replaced (`ServerEntry::redact`); what it relays of the server's tools has the
//! control, bidi and zero-width characters of its texts stripped; a server with
//! `pin = true` has its tools checked against their recorded definitions (`pins.rs`).
//!
//! Must never: let one server's fault reach another's tools, leave a server running,
//! or show a server's secret.

mod members;
mod pins;
mod streams;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CancelledNotificationParam, ClientRequest, RequestId, ServerResult};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient, RunningService, ServiceError};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::Map;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

use self::streams::{Attributed, Stream};
use crate::diag::{Diagnostic, Level};
use crate::discovery::extract::{Library, Origin, Returns, SchemaText, Tool};
use crate::host::config::{ServerEntry, Transport};
use crate::host::text_safety;
use crate::host::view::Member;
use crate::policy::{Declared, Grade};
use crate::runtime::host_objects::{
    Answer, Callbacks, Generated, Generation, HostAnswer, HostRequest, Interaction, InteractionKind, LogRecord, Notice,
    Progress, level,
};
use crate::runtime::{CallOptions, Forward, Outcome, ToolResult};
use crate::sync;

/// Each forwarded call's key among its server's calls in progress (what [`Registered`]
/// removes it by). Process-wide only to be unique without an owner to count: every
/// `Upstreams` of the process draws from it.
static NEXT_TOKEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A call's place among its server's calls in progress, left when it ends however it ends.
struct Registered {
    calls: Arc<Mutex<Vec<Active>>>,
    token: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        sync::lock(&self.calls).retain(|call| call.token != self.token);
    }
}

/// A request sent and not answered yet: dropped before its answer, it tells the
/// server the request is cancelled.
struct Abandoned {
    peer: Option<Peer<RoleClient>>,
    id: RequestId,
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        let Some(peer) = self.peer.take() else { return };
        let params = CancelledNotificationParam::new(Some(self.id.clone()), Some("the call was stopped".to_string()));
        // Dropped on the driver's thread (the call's task is), where a task may start.
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let _ = peer.notify_cancelled(params).await;
            });
        }
    }
}

/// The longest a server of one stream is waited for after a call to it was stopped
/// before its answer ([`Upstream::settle`]).
const SETTLING: Duration = Duration::from_secs(2);

/// How much of what a server writes to its stderr is kept, to say why it failed.
const STDERR_KEPT: usize = 2048;

/// The connected servers of a config, for as long as their tools may be called.
pub struct Upstreams {
    // Ended first (see `Drop`), while the runtime still runs.
    servers: Vec<Arc<Upstream>>,
    /// What hears a server's `list_changed`; every server's client holds it.
    wake: Arc<Mutex<Option<Wake>>>,
    /// What hears a server's `notifications/resources/updated`; every client holds it.
    updated: Arc<Mutex<Option<Updated>>>,
    /// How many of lcp's subscribers each URI subscribed at its server has.
    subscriptions: Mutex<std::collections::HashMap<String, usize>>,
    runtime: Driver,
}

/// A single-threaded tokio runtime on a thread of its own: its tasks (the servers'
/// sessions, their notifications, the calls) run in the order they were woken, so
/// a server's notifications reach a call's callbacks in the order it sent them.
struct Driver {
    handle: tokio::runtime::Handle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Driver {
    fn start() -> Driver {
        let runtime =
            tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime starts");
        let handle = runtime.handle().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("lcp-upstream".to_string())
            .spawn(move || {
                let _ = runtime.block_on(stopped);
            })
            .expect("a thread starts");
        Driver { handle, stop: Some(stop), thread: Some(thread) }
    }

    /// Runs `future` on the driver's thread and waits for it (from a thread that is
    /// not the driver's).
    fn run<T: Send + 'static>(&self, future: impl Future<Output = T> + Send + 'static) -> Result<T, String> {
        let task = self.handle.spawn(future);
        self.handle.block_on(task).map_err(|err| err.to_string())
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Upstreams {
    fn drop(&mut self) {
        let servers = std::mem::take(&mut self.servers);
        let ending = async move {
            let ends: Vec<_> = servers
                .iter()
                // A server still starting is ended with its start, when the runtime stops.
                .filter_map(|server| server.connection.try_lock().ok().and_then(|mut live| live.take()))
                .map(|connection| tokio::spawn(connection.end()))
                .collect();
            for end in ends {
                let _ = end.await;
            }
        };
        // On a thread of its own: `Driver::run` waits, which a runtime's thread may not.
        std::thread::scope(|scope| {
            let _ = scope.spawn(|| self.runtime.run(ending)).join();
        });
    }
}

impl std::fmt::Debug for Upstreams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.servers.iter().map(|server| &server.entry.name)).finish()
    }
}

/// A server's tools as listed, with the problems that hid some (a changed pinned
/// tool); or why they could not be listed.
type Listing = Result<(Library, Vec<String>), String>;

struct Upstream {
    entry: ServerEntry,
    client: Client,
    connection: tokio::sync::Mutex<Option<Connection>>,
    /// Its tools as last listed (and the problems of the listing), or why it could not be.
    listed: Mutex<Option<Listing>>,
    /// `lcp check --accept`: its listed definitions are recorded as its pins.
    accept: bool,
}

/// A running session with a server, and its process.
struct Connection {
    service: RunningService<RoleClient, Client>,
    /// The server's process (stdio), ended with the connection.
    process: Option<Process>,
    stderr: Arc<Mutex<VecDeque<u8>>>,
}

/// A stdio server's process.
struct Process {
    group: Group,
    /// Told when the process has exited.
    exited: tokio::sync::oneshot::Receiver<()>,
}

/// How long a server is given to exit once told to (its input closed, then `SIGTERM`).
const EXIT_GRACE: Duration = Duration::from_millis(500);

impl Connection {
    /// Ends the server as MCP's stdio lifecycle says: its input closed, then
    /// `SIGTERM` if it has not exited within [`EXIT_GRACE`], then `SIGKILL` to its
    /// process group (which also ends whatever it started and left behind).
    async fn end(self) {
        let Connection { service, process, .. } = self;
        // The session's end drops the transport, which closes the server's input.
        let _ = tokio::time::timeout(EXIT_GRACE, service.cancel()).await;
        if let Some(Process { group, mut exited }) = process
            && tokio::time::timeout(EXIT_GRACE, &mut exited).await.is_err()
        {
            group.signal(libc::SIGTERM);
            let _ = tokio::time::timeout(EXIT_GRACE, exited).await;
        }
    }
}

/// A server's process group, made for it alone: ended (every process in it) when
/// dropped, so a start that fails, times out or is abandoned leaves nothing behind.
struct Group(i32);

impl Group {
    fn signal(&self, signal: libc::c_int) {
        // SAFETY: signals the process group lcp made for this server alone.
        unsafe { libc::killpg(self.0, signal) };
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.signal(libc::SIGKILL);
    }
}

/// What lcp answers a server as its client: what the server asks or tells during a
/// call (progress, log messages, elicitation, sampling) goes to that call's host
/// callbacks, exactly as a Python tool's would (SPEC §9, §14).
#[derive(Clone, Default)]
struct Client {
    /// The calls in progress on this server (SPEC §17: what a server asks or tells
    /// reaches the call it belongs to, never another). Progress finds its call by
    /// token. A log message, an elicitation or a sampling request names no call: over
    /// Streamable HTTP it finds its call by the response stream it came on (rmcp marks
    /// requests, [`Attributed`] notifications); over stdio, one stream for all, the
    /// server runs one call at a time (`turn`), and they go to that one call.
    calls: Arc<Mutex<Vec<Active>>>,
    /// On a server whose calls take turns (stdio): held by the call in progress, from
    /// before it is in `calls` until it left them.
    turn: Option<Arc<tokio::sync::Mutex<()>>>,
    /// Set by the server's `notifications/tools/list_changed` (or its prompts' or
    /// resources'): list it again.
    changed: Arc<std::sync::atomic::AtomicBool>,
    /// Told of each such change ([`Upstreams::on_change`]); shared by every server.
    wake: Arc<Mutex<Option<Wake>>>,
    /// Told of each `notifications/resources/updated` ([`Upstreams::on_update`]).
    updated: Arc<Mutex<Option<Updated>>>,
}

/// What hears that a server's tools, prompts or resources changed.
type Wake = Arc<dyn Fn() + Send + Sync>;

/// What hears that a resource a server serves was updated: its URI.
type Updated = Arc<dyn Fn(&str) + Send + Sync>;

#[derive(Clone, Default)]
struct Active {
    /// The call's key among its server's calls.
    token: u64,
    /// The progress token of its `tools/call` request (chosen by rmcp when it is sent).
    progress: Option<Value>,
    /// The id of that request (chosen by rmcp too).
    request: Option<RequestId>,
    tool: String,
    /// The server's name, as what it asks names it.
    server: String,
    callbacks: Callbacks,
    log_level: u32,
}

impl Client {
    /// The server said a list of its changed: it is listed again on the next rescan.
    fn list_changed(&self) {
        self.changed.store(true, std::sync::atomic::Ordering::Release);
        let wake = sync::lock(&self.wake).clone();
        if let Some(wake) = wake {
            wake();
        }
    }

    /// The call a message of the server's came for, by the stream it came on; `None`
    /// when that is no call in progress of lcp's.
    fn call_on(&self, stream: Stream) -> Option<Active> {
        let calls = sync::lock(&self.calls);
        match stream {
            Stream::Request(id) => calls.iter().find(|call| call.request.as_ref() == Some(&id)).cloned(),
            Stream::Unassociated => None,
            // One stream for every call: only a server whose calls take turns has
            // one call in progress to give it to.
            Stream::Unmarked => calls.last().filter(|_| self.turn.is_some()).cloned(),
        }
    }

    /// The call a request of the server's belongs to, by the stream rmcp heard it on.
    fn asked_by(&self, context: &rmcp::service::RequestContext<RoleClient>) -> Option<Active> {
        use rmcp::service::InboundStreamOrigin;
        self.call_on(match context.extensions.get::<InboundStreamOrigin>() {
            Some(InboundStreamOrigin::OutboundRequest(id)) => Stream::Request(id.clone()),
            Some(InboundStreamOrigin::Unassociated) => Stream::Unassociated,
            None => Stream::Unmarked,
        })
    }
}

impl Active {
    /// A call of `tool` that is starting, with its own token.
    fn of(tool: &Tool, server: &str, options: &CallOptions) -> Active {
        Active {
            token: NEXT_TOKEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            progress: None,
            request: None,
            tool: tool.name.clone(),
            server: server.to_string(),
            callbacks: options.callbacks.clone(),
            log_level: options.log_level.unwrap_or(level::INFO),
        }
    }

    /// Who asks, as lcp's host shows it beside the tool's name: the server.
    fn asker(&self) -> String {
        format!("MCP server `{}`", self.server)
    }

    /// A `notifications/progress` of the call's, told to its host.
    fn progress(&self, params: &Value) {
        let mut meta = serde_json::Map::new();
        for key in ["progress", "total"] {
            if let Some(value) = params.get(key).filter(|v| v.is_number()) {
                meta.insert(key.to_string(), value.clone());
            }
        }
        self.callbacks.notify(&Notice::Progress(Progress {
            tool: Some(self.tool.clone()),
            text: params["message"].as_str().unwrap_or_default().to_string(),
            progress: params["progress"].as_f64(),
            total: params["total"].as_f64(),
            meta,
        }));
    }

    /// A `notifications/message`, told to the call's host when at its level.
    fn log(&self, params: &Value) {
        let level = match params["level"].as_str().unwrap_or_default() {
            "debug" => level::DEBUG,
            "info" | "notice" => level::INFO,
            "warning" => level::WARNING,
            "error" => level::ERROR,
            _ => level::CRITICAL,
        };
        if level < self.log_level {
            return;
        }
        let message = match &params["data"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        let logger = params["logger"].as_str().unwrap_or("root").to_string();
        self.callbacks.notify(&Notice::Log(LogRecord { tool: Some(self.tool.clone()), level, logger, message }));
    }

    /// An `elicitation/create`, asked of lcp's host as the call's question (it may
    /// block: a terminal prompt); the `ElicitResult`.
    fn elicit(&self, request: &Value) -> Result<Value, String> {
        let interaction = Interaction {
            library: self.asker(),
            tool: Some(self.tool.clone()),
            kind: InteractionKind::Form,
            title: self.tool.clone(),
            // What the server asks is shown as it would be plain.
            prompt: text_safety::strip_invisible(request["message"].as_str().unwrap_or_default()).into_owned(),
            options: Vec::new(),
            default: None,
            schema: request.get("requestedSchema").cloned().map(|mut schema| {
                text_safety::strip_schema_texts(&mut schema);
                schema
            }),
            key: None,
        };
        match self.callbacks.answer(&HostRequest::Interact(interaction)) {
            HostAnswer::Interact(Answer::Given(content)) => Ok(json!({"action": "accept", "content": content})),
            HostAnswer::Interact(Answer::Declined) => Ok(json!({"action": "decline"})),
            HostAnswer::Interact(Answer::Unavailable(why)) => Err(why),
            other => Err(format!("the host answered another question: {other:?}")),
        }
    }

    /// A `sampling/createMessage`, for lcp's host's model (it may block); the
    /// `CreateMessageResult`.
    fn sample(&self, params: &Value) -> Result<Value, String> {
        let messages = params["messages"].as_array().cloned().unwrap_or_default();
        let prompt = messages
            .iter()
            .filter_map(|message| {
                message["content"]["text"].as_str().map(|text| (message["role"].as_str().unwrap_or("user"), text))
            })
            .map(|(role, text)| if messages.len() == 1 { text.to_string() } else { format!("{role}: {text}") })
            .collect::<Vec<_>>()
            .join("\n");
        let generation = Generation {
            library: self.asker(),
            tool: Some(self.tool.clone()),
            prompt,
            images: Vec::new(),
            n_predict: params["maxTokens"].as_u64(),
            temperature: params["temperature"].as_f64(),
            system_prompt: params["systemPrompt"].as_str().map(str::to_string),
            extra: serde_json::Map::new(),
            key: None,
        };
        let Generated { text, model } = match self.callbacks.answer(&HostRequest::Generate(generation)) {
            HostAnswer::Generate(generated) => generated?,
            other => return Err(format!("the host answered another question: {other:?}")),
        };
        // The model a client of `lcp serve` answered with is the one it named; a model
        // the host does not name (a terminal's `lcp call`) is `lcp-host`.
        let model = model.unwrap_or_else(|| "lcp-host".to_string());
        Ok(json!({"role": "assistant", "content": {"type": "text", "text": text}, "model": model}))
    }
}

/// Why a server's request that belongs to no call of lcp's is refused.
const UNATTRIBUTED: &str = "the request belongs to no call of lcp's in progress (it came on no call's stream)";

fn unavailable(message: String) -> rmcp::ErrorData {
    rmcp::ErrorData::invalid_request(message, None)
}

impl ClientHandler for Client {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut info = rmcp::model::ClientConfig::default();
        info.client_info = rmcp::model::Implementation::new("lcp", env!("CARGO_PKG_VERSION"));
        // What lcp's own host can answer: its user (elicitation) and its model (sampling).
        if let Ok(capabilities) = serde_json::from_value(json!({"sampling": {}, "elicitation": {"form": {}}})) {
            info.capabilities = capabilities;
        }
        info
    }

    async fn on_tool_list_changed(&self, _: rmcp::service::NotificationContext<RoleClient>) {
        self.list_changed();
    }

    async fn on_prompt_list_changed(&self, _: rmcp::service::NotificationContext<RoleClient>) {
        self.list_changed();
    }

    async fn on_resource_list_changed(&self, _: rmcp::service::NotificationContext<RoleClient>) {
        self.list_changed();
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _: rmcp::service::NotificationContext<RoleClient>,
    ) {
        let updated = sync::lock(&self.updated).clone();
        if let Some(updated) = updated {
            updated(&params.uri);
        }
    }

    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _: rmcp::service::NotificationContext<RoleClient>,
    ) {
        let params = serde_json::to_value(&params).unwrap_or_default();
        let call = sync::lock(&self.calls)
            .iter()
            .find(|call| call.progress.as_ref() == Some(&params["progressToken"]))
            .cloned();
        if let Some(call) = call {
            call.progress(&params);
        }
    }

    #[allow(deprecated)] // MCP's logging (SEP-2577) is deprecated but still what servers send.
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        let params = serde_json::to_value(&params).unwrap_or_default();
        if let Some(call) = self.call_on(Stream::of_notification(&context)) {
            call.log(&params);
        }
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        let request = serde_json::to_value(&request).unwrap_or_default();
        let call = self.asked_by(&context).ok_or_else(|| unavailable(UNATTRIBUTED.to_string()))?;
        // The host may block (a terminal prompt): off the async threads.
        let result = tokio::task::spawn_blocking(move || call.elicit(&request))
            .await
            .map_err(|err| unavailable(format!("asking the user failed: {err}")))?
            .map_err(unavailable)?;
        serde_json::from_value(result)
            .map_err(|err| unavailable(format!("the answer is not an elicitation result: {err}")))
    }

    #[allow(deprecated)] // Sampling (SEP-2577) is deprecated but still what servers ask.
    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        let params = serde_json::to_value(&params).unwrap_or_default();
        let call = self.asked_by(&context).ok_or_else(|| unavailable(UNATTRIBUTED.to_string()))?;
        let result = tokio::task::spawn_blocking(move || call.sample(&params))
            .await
            .map_err(|err| unavailable(format!("the host's model failed: {err}")))?
            .map_err(unavailable)?;
        serde_json::from_value(result)
            .map_err(|err| unavailable(format!("the model's answer is not a sampling result: {err}")))
    }
}

impl Upstreams {
    /// Connects to every server of `entries` in parallel and lists their tools: one
    /// library per server that answered, and a diagnostic for each that did not.
    pub fn connect(entries: &[ServerEntry]) -> (Upstreams, Vec<Library>, Vec<Diagnostic>) {
        Upstreams::connect_with(entries, false)
    }

    /// [`Upstreams::connect`]; with `accept` (`lcp check --accept`), the definitions
    /// listed by the servers with `pin = true` are recorded as their pins.
    pub fn connect_with(entries: &[ServerEntry], accept: bool) -> (Upstreams, Vec<Library>, Vec<Diagnostic>) {
        let runtime = Driver::start();
        let wake: Arc<Mutex<Option<Wake>>> = Arc::default();
        let updated: Arc<Mutex<Option<Updated>>> = Arc::default();
        let servers: Vec<Arc<Upstream>> = entries
            .iter()
            .map(|entry| {
                let client = Client {
                    wake: Arc::clone(&wake),
                    updated: Arc::clone(&updated),
                    turn: matches!(entry.transport, Transport::Stdio { .. }).then(Arc::default),
                    ..Client::default()
                };
                Arc::new(Upstream {
                    entry: entry.clone(),
                    client,
                    connection: tokio::sync::Mutex::new(None),
                    listed: Mutex::new(None),
                    accept,
                })
            })
            .collect();
        let listing: Vec<Arc<Upstream>> = servers.iter().map(Arc::clone).collect();
        let listed = runtime
            .run(async move {
                let tasks: Vec<_> = listing.into_iter().map(|server| tokio::spawn(server.list())).collect();
                let mut listed = Vec::with_capacity(tasks.len());
                for task in tasks {
                    listed.push(task.await.unwrap_or_else(|err| Err(format!("its listing failed: {err}"))));
                }
                listed
            })
            .unwrap_or_else(|err| vec![Err(format!("the listing failed: {err}")); servers.len()]);
        for (server, listed) in servers.iter().zip(listed) {
            *sync::lock(&server.listed) = Some(listed);
        }
        let upstreams = Upstreams { servers, wake, updated, subscriptions: Mutex::default(), runtime };
        let (libraries, diagnostics) = upstreams.libraries();
        (upstreams, libraries, diagnostics)
    }

    /// Every server's tools as last listed, and a diagnostic for each that could not be.
    fn libraries(&self) -> (Vec<Library>, Vec<Diagnostic>) {
        let (mut libraries, mut diagnostics) = (Vec::new(), Vec::new());
        for server in &self.servers {
            match sync::lock(&server.listed).clone() {
                Some(Ok((library, problems))) => {
                    libraries.push(library);
                    diagnostics.extend(problems.into_iter().map(|problem| server.diagnostic(Level::Error, problem)));
                }
                Some(Err(why)) => diagnostics.push(server.diagnostic(Level::Error, format!("it is skipped: {why}"))),
                None => {}
            }
        }
        (libraries, diagnostics)
    }

    /// Calls `wake` whenever a server says its tools changed (`list_changed`); then
    /// [`Upstreams::relist`] has the new lists.
    pub fn on_change(&self, wake: impl Fn() + Send + Sync + 'static) {
        *sync::lock(&self.wake) = Some(Arc::new(wake));
    }

    /// Calls `updated` with the URI of each `notifications/resources/updated` a server
    /// sends (for the resources subscribed through [`Upstreams::subscribe`]).
    pub fn on_update(&self, updated: impl Fn(&str) + Send + Sync + 'static) {
        *sync::lock(&self.updated) = Some(Arc::new(updated));
    }

    /// The server that serves `uri`: one of its resources has that URI, else one of
    /// its templates matches it (in the order the servers are configured).
    fn server_of(&self, uri: &str) -> Option<&Arc<Upstream>> {
        let serves = |server: &&Arc<Upstream>, templates: bool| {
            let listed = sync::lock(&server.listed);
            let Some(Ok((library, _))) = listed.as_ref() else { return false };
            library.resources.iter().any(|resource| {
                resource.is_template() == templates
                    && (resource.uri == uri || (templates && resource.arguments_of(uri).is_some()))
            })
        };
        let servers = || self.servers.iter();
        servers().find(|server| serves(server, false)).or_else(|| servers().find(|server| serves(server, true)))
    }

    /// `resources/subscribe` of `uri` at the server that serves it, when it is the
    /// first of lcp's subscribers to it: `None` when no server serves it, else
    /// whether the server took it (its `notifications/resources/updated` then reach
    /// [`Upstreams::on_update`]).
    pub fn subscribe(&self, uri: &str) -> Option<Result<(), String>> {
        let server = Arc::clone(self.server_of(uri)?);
        {
            let mut subscriptions = sync::lock(&self.subscriptions);
            let count = subscriptions.entry(uri.to_string()).or_default();
            *count += 1;
            if *count > 1 {
                return Some(Ok(()));
            }
        }
        #[allow(deprecated)] // `resources/subscribe` is what servers of the handshake protocol take.
        let request = ClientRequest::SubscribeRequest(rmcp::model::SubscribeRequest::new(
            rmcp::model::SubscribeRequestParams::new(uri),
        ));
        let done = self.request(&server, request);
        if done.is_err() {
            let mut subscriptions = sync::lock(&self.subscriptions);
            if let Some(count) = subscriptions.get_mut(uri) {
                *count = count.saturating_sub(1);
                if *count == 0 {
                    subscriptions.remove(uri);
                }
            }
        }
        Some(done.map(|_| ()))
    }

    /// `resources/unsubscribe` of `uri` at its server, when its last subscriber of
    /// lcp's leaves; `None` when no server serves it.
    pub fn unsubscribe(&self, uri: &str) -> Option<Result<(), String>> {
        let server = Arc::clone(self.server_of(uri)?);
        {
            let mut subscriptions = sync::lock(&self.subscriptions);
            match subscriptions.get_mut(uri) {
                Some(count) if *count > 1 => {
                    *count -= 1;
                    return Some(Ok(()));
                }
                Some(_) => {
                    subscriptions.remove(uri);
                }
                None => return Some(Ok(())),
            }
        }
        #[allow(deprecated)] // As `resources/subscribe`.
        let request = ClientRequest::UnsubscribeRequest(rmcp::model::UnsubscribeRequest::new(
            rmcp::model::UnsubscribeRequestParams::new(uri),
        ));
        Some(self.request(&server, request).map(|_| ()))
    }

    /// `completion/complete` of `argument` (what was typed: `value`; the other
    /// arguments given: `context`) of a prompt (`member` [`Member::Prompt`], `function`
    /// its record) or a resource template of a server: the server's `completion`
    /// (`values`, `total`, `hasMore`), or why there is none. It blocks: not on an
    /// async thread.
    pub(crate) fn complete(
        &self,
        library: &Library,
        function: &Tool,
        member: Member,
        argument: &str,
        value: &str,
        context: Option<&Map<String, Value>>,
    ) -> Result<Value, String> {
        let (server, name) = self.route(library, function)?;
        let reference = match member {
            Member::Prompt => json!({ "type": "ref/prompt", "name": name }),
            _ => {
                let uri = library.resources.iter().find(|r| r.function.name == function.name).map(|r| &r.uri);
                json!({ "type": "ref/resource", "uri": uri.unwrap_or(&function.name) })
            }
        };
        let mut params = json!({ "ref": reference, "argument": { "name": argument, "value": value } });
        if let Some(context) = context.filter(|context| !context.is_empty()) {
            params["context"] = json!({ "arguments": context });
        }
        let params = serde_json::from_value(params).map_err(|err| err.to_string())?;
        let request = ClientRequest::CompleteRequest(rmcp::model::CompleteRequest::new(params));
        let answer = self.request(server, request)?;
        let completion = answer.get("completion").filter(|c| c.is_object()).cloned();
        completion.ok_or_else(|| {
            format!("the MCP server `{}` answered the completion without `completion`", server.entry.name)
        })
    }

    /// One request of lcp's own to `server` (no call of a client's is behind it, so
    /// nothing it asks has anyone to reach), awaited; its result, or why there is
    /// none with the server's secrets redacted.
    fn request(&self, server: &Arc<Upstream>, request: ClientRequest) -> Result<Value, String> {
        let upstream = Arc::clone(server);
        let limit = server.entry.startup_timeout.max(Duration::from_secs(10));
        let answered = self.runtime.run(async move {
            let peer = match upstream.peer().await {
                Ok(peer) => peer,
                Err(failed) => return Err(failed.error.unwrap_or_default()),
            };
            let sent = tokio::time::timeout(limit, peer.send_request(request)).await;
            match sent {
                Ok(Ok(result)) => Ok(serde_json::to_value(&result).unwrap_or(Value::Null)),
                Ok(Err(err)) => Err(format!("the MCP server `{}` failed: {err}", upstream.entry.name)),
                Err(_) => Err(format!("the MCP server `{}` did not answer within {limit:?}", upstream.entry.name)),
            }
        });
        answered.unwrap_or_else(Err).map_err(|why| server.entry.redact(&why))
    }

    /// Lists again the servers that said their tools changed: every server's tools
    /// and problems, or `None` when none did.
    pub fn relist(&self) -> Option<(Vec<Library>, Vec<Diagnostic>)> {
        use std::sync::atomic::Ordering;
        let changed: Vec<Arc<Upstream>> =
            self.servers.iter().filter(|s| s.client.changed.swap(false, Ordering::AcqRel)).cloned().collect();
        if changed.is_empty() {
            return None;
        }
        for server in changed {
            let listed = self.runtime.run(Arc::clone(&server).list()).unwrap_or_else(Err);
            *sync::lock(&server.listed) = Some(listed);
        }
        Some(self.libraries())
    }

    /// What [`crate::runtime::Runtime::set_forwarder`] takes: calls of these servers' tools.
    pub(crate) fn forwarder(self: &Arc<Self>) -> Forward {
        let upstreams = Arc::clone(self);
        Arc::new(move |library, tool, member, args, options| upstreams.call(library, tool, member, args, options))
    }

    /// The server of a tool of one of these servers, and the tool's name there; or why
    /// there is none.
    fn route(&self, library: &Library, tool: &Tool) -> Result<(&Arc<Upstream>, String), String> {
        let Origin::Mcp { server } = &library.origin else {
            return Err(format!("`{}` is not a tool of an MCP server", tool.name));
        };
        let Some(upstream) = self.servers.iter().find(|s| &s.entry.name == server) else {
            return Err(format!("no MCP server `{server}` is configured"));
        };
        // Its name on the server: lcp's without the server's `prefix`.
        let name = tool.name.strip_prefix(upstream.entry.prefix.as_str()).unwrap_or(&tool.name).to_string();
        Ok((upstream, name))
    }

    fn call(&self, library: &Library, tool: &Tool, member: Member, args: &Value, options: &CallOptions) -> ToolResult {
        let (upstream, name) = match self.route(library, tool) {
            Ok(routed) => routed,
            Err(why) => return ToolResult::failure(why),
        };
        let entry = Arc::clone(upstream);
        let arguments = args.as_object().cloned().unwrap_or_default();
        let ask = match member {
            Member::Tool => Ask::Tool { name, arguments },
            Member::Prompt => Ask::Prompt { name, arguments },
            Member::Resource => {
                // Its function is named by its URI; a template's is made from the variables.
                let template = library.resources.iter().find(|r| r.function.name == tool.name).map(|r| &r.uri);
                Ask::Read { uri: members::expand(template.unwrap_or(&tool.name), &arguments) }
            }
        };
        let timeout = options.timeout;
        let cancel = options.cancel.clone();
        let upstream = Arc::clone(upstream);
        let server = upstream.entry.name.clone();
        let active = Active::of(tool, &server, options);
        let token = active.token;
        // On the runtime's own thread, where the server's notifications are handled: a
        // notification sent before the result was queued before this call woke, and
        // yielding lets it reach the call's callbacks before the call is over.
        let forwarded = self.runtime.run(async move {
            let turn = upstream.client.turn.clone();
            let calls = Arc::clone(&upstream.client.calls);
            // The turn once had, kept here so that it outlives a call stopped early.
            let kept: Arc<Mutex<Option<tokio::sync::OwnedMutexGuard<()>>>> = Arc::default();
            let settling = Arc::clone(&upstream);
            let call = {
                let kept = Arc::clone(&kept);
                async move {
                    // Its turn first, on a server of one stream: whatever the server
                    // asks or tells until the result belongs to this call and no other's.
                    if let Some(turn) = turn {
                        let guard = turn.lock_owned().await;
                        *sync::lock(&kept) = Some(guard);
                    }
                    sync::lock(&calls).push(active);
                    let registered = Registered { calls, token };
                    // Kept until the notifications sent before the result were heard.
                    (upstream.call(ask, token).await, Some(registered))
                }
            };
            let cancelled = async {
                loop {
                    if cancel.as_ref().is_some_and(|c| c.is_cancelled()) {
                        return Outcome::Cancelled;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            };
            let limit = async {
                match timeout {
                    Some(limit) => tokio::time::sleep(limit).await,
                    None => std::future::pending().await,
                }
            };
            let (result, held) = tokio::select! {
                answered = call => answered,
                outcome = cancelled => (stopped(outcome, &server, timeout), None),
                () = limit => (stopped(Outcome::TimedOut, &server, timeout), None),
            };
            let stopped = held.is_none();
            for _ in 0..4 {
                tokio::task::yield_now().await;
            }
            drop(held);
            // A call stopped before its answer may leave the server at work on it: until
            // the server answers a ping sent after the cancel notice (or `SETTLING`
            // passed), what it asks or tells belongs to no call and is refused, and
            // the next call waits for its turn.
            let turn = sync::lock(&kept).take();
            if stopped && turn.is_some() {
                settling.settle(SETTLING).await;
            }
            drop(turn);
            result
        });
        let result = forwarded.unwrap_or_else(|err| ToolResult::failure(format!("the forwarded call failed: {err}")));
        entry.redacted(result)
    }
}

impl Upstream {
    fn diagnostic(&self, level: Level, message: String) -> Diagnostic {
        Diagnostic::new(
            &self.entry.file,
            self.entry.line.unwrap_or(1),
            1,
            level,
            self.entry.redact(&format!("MCP server `{}`: {message}", self.entry.name)),
        )
    }

    /// `result` with this server's secrets out of what lcp says of it (its error,
    /// traceback and printed text; the server's own output is relayed as it sent it).
    fn redacted(&self, mut result: ToolResult) -> ToolResult {
        if self.entry.secrets.is_empty() {
            return result;
        }
        let redact = |text: &mut String| {
            if let std::borrow::Cow::Owned(redacted) = self.entry.secrets.redact(text) {
                *text = redacted;
            }
        };
        result.error.iter_mut().for_each(redact);
        result.traceback.iter_mut().for_each(redact);
        redact(&mut result.stdout);
        redact(&mut result.stderr);
        result
    }

    /// Connects (within the startup timeout) and lists the tools as a library.
    async fn list(self: Arc<Self>) -> Listing {
        let limit = self.entry.startup_timeout;
        let listed = tokio::time::timeout(limit, async {
            // The running session when there is one (a list_changed), else a new one.
            let mut connection = self.connection.lock().await;
            if connection.as_ref().is_none_or(|c| c.service.is_closed()) {
                *connection = None;
                *connection = Some(connect(&self.entry, self.client.clone()).await?);
            }
            let Some(live) = connection.as_ref() else { return Err("it is not running".to_string()) };
            let peer = live.service.peer();
            let tools = match peer.list_all_tools().await {
                Ok(tools) => tools,
                Err(err) => return Err(with_stderr(format!("listing its tools failed: {err}"), live)),
            };
            Ok((tools, list_members(peer).await))
        })
        .await
        .map_err(|_| format!("it did not start and list its tools within {limit:?} (`startup_timeout`)"))??;
        let (listed, members) = listed;
        let mut listed: Vec<Value> = listed.iter().filter_map(|tool| serde_json::to_value(tool).ok()).collect();
        let mut problems = members.problems;
        if self.entry.pin {
            let checked = pins::check(&self.entry, &listed, self.accept)?;
            listed.retain(|tool| !checked.changed.iter().any(|changed| tool["name"] == changed.tool.as_str()));
            problems.extend(checked.changed.iter().map(|changed| pins::hidden_message(changed, &checked.file)));
            problems.extend(checked.problems);
        }
        let tools = listed.iter().map(|tool| self.tool(&stripped(tool))).collect();
        let library = Library {
            path: self.entry.file.clone(),
            package: None,
            stem: self.entry.name.clone(),
            name: Some(self.entry.name.clone()),
            description: None,
            summary: None,
            icon: None,
            hooks: Default::default(),
            prompt_provider: None,
            tools,
            prompts: members.prompts.iter().filter_map(|prompt| members::prompt(&self.entry, prompt)).collect(),
            resources: (members.resources.iter().filter_map(|r| members::resource(&self.entry, r, false)))
                .chain(members.templates.iter().filter_map(|t| members::resource(&self.entry, t, true)))
                .collect(),
            completers: Vec::new(),
            origin: Origin::Mcp { server: self.entry.name.clone() },
        };
        Ok((library, problems))
    }

    /// One of its tools as lcp's: the schemas as the server gave them, the grade from
    /// its annotations (SPEC §14) under what the server's `tools` tables declare.
    fn tool(&self, listed: &Value) -> Tool {
        let name = listed["name"].as_str().unwrap_or_default();
        let annotations = &listed["annotations"];
        let hint = |key: &str| annotations[key].as_bool();
        let from_server = Declared {
            read_only: hint("readOnlyHint"),
            destructive: hint("destructiveHint"),
            idempotent: hint("idempotentHint"),
            open_world: hint("openWorldHint"),
            grade: Some(grade(annotations)),
            docs: None,
            // A server's own `x-mcp-header` marks stay in the schema it gave.
            mcp_headers: None,
            // A server's own tasks are not forwarded; lcp runs its calls as tasks
            // when the server's `tools` tables declare `task`.
            task: None,
        };
        let policy = match self.entry.declared(name) {
            Some(declared) => declared.over(&from_server),
            None => from_server,
        };
        let schema = match &listed["inputSchema"] {
            Value::Object(schema) => Value::Object(schema.clone()),
            _ => json!({"type": "object", "properties": {}}),
        };
        Tool {
            name: format!("{}{name}", self.entry.prefix),
            description: listed["description"]
                .as_str()
                .unwrap_or(crate::discovery::extract::NO_DESCRIPTION)
                .to_string(),
            parameters: SchemaText::new(&schema),
            parameters_with_defs: None,
            line: self.entry.line.unwrap_or(1),
            is_async: false,
            docstring: None,
            returns: Returns::default(),
            prompt_provider: None,
            output: listed.get("outputSchema").filter(|s| s.is_object()).map(SchemaText::new),
            policy,
            becomes_task: false,
        }
    }

    /// Forwards one call, connecting again first when the server is not running.
    /// Its running session's peer, starting it first when it is not running; or why
    /// it cannot be had.
    async fn peer(&self) -> Result<Peer<RoleClient>, ToolResult> {
        let server = &self.entry.name;
        let mut connection = self.connection.lock().await;
        if connection.as_ref().is_none_or(|c| c.service.is_closed()) {
            *connection = None;
            match tokio::time::timeout(self.entry.startup_timeout, connect(&self.entry, self.client.clone())).await {
                Ok(Ok(started)) => *connection = Some(started),
                Ok(Err(why)) => return Err(not_started(server, &why)),
                Err(_) => {
                    return Err(ToolResult::failure(format!(
                        "the MCP server `{server}` did not start within {:?}",
                        self.entry.startup_timeout
                    )));
                }
            }
        }
        let Some(live) = connection.as_ref() else {
            return Err(ToolResult::failure(format!("the MCP server `{server}` is not running")));
        };
        // Several calls may run on one session: the lock guards starting it, not calling.
        Ok(live.service.peer().clone())
    }

    /// Returns once the running server answered a ping, or after `limit`: a server
    /// that reads its messages in order has then read all sent before. Starts nothing.
    async fn settle(&self, limit: Duration) {
        let peer = match self.connection.lock().await.as_ref() {
            Some(live) if !live.service.is_closed() => live.service.peer().clone(),
            _ => return,
        };
        let ping = ClientRequest::PingRequest(rmcp::model::PingRequest {
            method: Default::default(),
            extensions: Default::default(),
        });
        let _ = tokio::time::timeout(limit, peer.send_request(ping)).await;
    }

    /// Forwards one request (a call, a prompt, a read), connecting again first when
    /// the server is not running.
    async fn call(self: Arc<Self>, ask: Ask, token: u64) -> ToolResult {
        let server = &self.entry.name;
        let peer = match self.peer().await {
            Ok(peer) => peer,
            Err(failed) => return failed,
        };
        let tool = ask.named();
        let request = match ask.request() {
            Ok(request) => request,
            Err(why) => return ToolResult::failure(format!("{tool} of the MCP server `{server}` failed: {why}")),
        };
        let sent = peer.send_request_with_option(request, PeerRequestOptions::no_options()).await;
        let answered = match sent {
            Ok(handle) => {
                // The server's progress notifications name the call by this token, the
                // stream of its answer by this id; both known before the request
                // leaves (it is sent on this thread, after this task yields).
                let progress = serde_json::to_value(&handle.progress_token).ok();
                if let Some(call) = sync::lock(&self.client.calls).iter_mut().find(|call| call.token == token) {
                    call.progress = progress;
                    call.request = Some(handle.id.clone());
                }
                // A call stopped before its answer (cancelled, timed out) is cancelled
                // on the server too.
                let mut abandoned = Abandoned { peer: Some(peer.clone()), id: handle.id.clone() };
                let answer = handle.await_response().await;
                abandoned.peer = None;
                answer
            }
            Err(err) => Err(err),
        };
        let answered = answered.and_then(|result| match (&ask, result) {
            (Ask::Tool { .. }, ServerResult::CallToolResult(result)) => {
                Ok(serde_json::to_value(&result).unwrap_or(Value::Null))
            }
            (Ask::Tool { .. }, _) => Err(ServiceError::UnexpectedResponse),
            (_, result) => Ok(serde_json::to_value(&result).unwrap_or(Value::Null)),
        });
        match answered {
            Ok(result) => match &ask {
                Ask::Tool { name, .. } => relayed(result, name, server),
                Ask::Prompt { .. } => member_result(result, "messages", &tool, server),
                Ask::Read { .. } => member_result(result, "contents", &tool, server),
            },
            Err(err) => {
                let ended = matches!(err, ServiceError::TransportClosed | ServiceError::TransportSend(_));
                let mut connection = self.connection.lock().await;
                let why = match connection.as_ref() {
                    // The next call starts it again.
                    Some(live) if ended => with_stderr(format!("it ended during the call ({err})"), live),
                    _ => err.to_string(),
                };
                if ended {
                    *connection = None;
                }
                let outcome = if ended { Outcome::Died } else { Outcome::Raised };
                ToolResult::ended(outcome, format!("{tool} of the MCP server `{server}` failed: {why}"))
            }
        }
    }
}

/// What a forwarded request asks of its server, under the server's names.
enum Ask {
    Tool { name: String, arguments: Map<String, Value> },
    Prompt { name: String, arguments: Map<String, Value> },
    Read { uri: String },
}

impl Ask {
    /// How what lcp says of it names it: `` `echo` ``, `` the prompt `p` ``,
    /// `` the resource `demo://a` ``.
    fn named(&self) -> String {
        match self {
            Ask::Tool { name, .. } => format!("`{name}`"),
            Ask::Prompt { name, .. } => format!("the prompt `{name}`"),
            Ask::Read { uri } => format!("the resource `{uri}`"),
        }
    }

    fn request(&self) -> Result<ClientRequest, String> {
        Ok(match self {
            Ask::Tool { name, arguments } => {
                let params = CallToolRequestParams::new(name.clone()).with_arguments(arguments.clone());
                ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params))
            }
            Ask::Prompt { name, arguments } => {
                // MCP's prompt arguments are strings.
                let arguments: Map<String, Value> = arguments
                    .iter()
                    .map(|(key, value)| match value {
                        Value::String(_) => (key.clone(), value.clone()),
                        other => (key.clone(), Value::String(other.to_string())),
                    })
                    .collect();
                let params = serde_json::from_value(json!({ "name": name, "arguments": arguments }))
                    .map_err(|err| err.to_string())?;
                ClientRequest::GetPromptRequest(rmcp::model::GetPromptRequest::new(params))
            }
            Ask::Read { uri } => {
                let params = serde_json::from_value(json!({ "uri": uri })).map_err(|err| err.to_string())?;
                ClientRequest::ReadResourceRequest(rmcp::model::ReadResourceRequest::new(params))
            }
        })
    }
}

/// A server's `GetPromptResult` or `ReadResourceResult`, relayed as it sent it (its
/// description stripped of invisible characters), when it holds its list `key`.
fn member_result(mut output: Value, key: &str, named: &str, server: &str) -> ToolResult {
    if !output.get(key).is_some_and(Value::is_array) {
        let why = format!("{named} of the MCP server `{server}` failed: its answer has no `{key}`");
        return ToolResult::ended(Outcome::Raised, why);
    }
    if let Some(Value::String(text)) = output.get_mut("description")
        && let std::borrow::Cow::Owned(plain) = text_safety::strip_invisible(text)
    {
        *text = plain;
    }
    ToolResult { outcome: Outcome::Relayed { is_error: false }, output, ..ToolResult::failure(String::new()) }
}

/// What a server lists besides its tools, as it sent it, and what could not be listed.
#[derive(Default)]
struct Members {
    prompts: Vec<Value>,
    resources: Vec<Value>,
    templates: Vec<Value>,
    problems: Vec<String>,
}

/// A server's prompts, resources and resource templates, each listed when its
/// capabilities offer them; a list that fails is a problem of the server's, and its
/// tools stay.
async fn list_members(peer: &Peer<RoleClient>) -> Members {
    let capabilities = serde_json::to_value(peer.peer_info()).unwrap_or_default()["capabilities"].clone();
    let mut members = Members::default();
    fn values<T: serde::Serialize>(
        items: Result<Vec<T>, ServiceError>,
        what: &str,
        problems: &mut Vec<String>,
    ) -> Vec<Value> {
        match items {
            Ok(items) => items.iter().filter_map(|item| serde_json::to_value(item).ok()).collect(),
            // A server that has no such list (a server with resources and no templates).
            Err(ServiceError::McpError(err)) if err.code == rmcp::model::ErrorCode::METHOD_NOT_FOUND => Vec::new(),
            Err(err) => {
                problems.push(format!("listing its {what} failed: {err}"));
                Vec::new()
            }
        }
    }
    if capabilities.get("prompts").is_some_and(Value::is_object) {
        members.prompts = values(peer.list_all_prompts().await, "prompts", &mut members.problems);
    }
    if capabilities.get("resources").is_some_and(Value::is_object) {
        members.resources = values(peer.list_all_resources().await, "resources", &mut members.problems);
        members.templates =
            values(peer.list_all_resource_templates().await, "resource templates", &mut members.problems);
    }
    members
}

/// A listed tool with the control, bidi and zero-width characters stripped from every
/// text lcp relays of it: its description and title, its schemas' `description` and
/// `title` strings, its annotations' title.
fn stripped(listed: &Value) -> Value {
    let mut tool = listed.clone();
    for key in ["description", "title"] {
        if let Some(Value::String(text)) = tool.get_mut(key)
            && let std::borrow::Cow::Owned(plain) = text_safety::strip_invisible(text)
        {
            *text = plain;
        }
    }
    if let Some(Value::String(text)) = tool.pointer_mut("/annotations/title")
        && let std::borrow::Cow::Owned(plain) = text_safety::strip_invisible(text)
    {
        *text = plain;
    }
    for key in ["inputSchema", "outputSchema"] {
        if let Some(schema) = tool.get_mut(key) {
            text_safety::strip_schema_texts(schema);
        }
    }
    tool
}

/// A call whose server could not be started (or reached), saying why.
fn not_started(server: &str, why: &str) -> ToolResult {
    ToolResult::failure(format!("the MCP server `{server}` could not be started: {why}"))
}

/// A call lcp stopped: cancelled, or out of its `timeout`.
fn stopped(outcome: Outcome, server: &str, timeout: Option<Duration>) -> ToolResult {
    match outcome {
        Outcome::TimedOut => ToolResult::ended(
            outcome,
            format!("the MCP server `{server}` did not answer within {:?}", timeout.unwrap_or_default()),
        ),
        outcome => ToolResult::ended(outcome, "the call was cancelled".to_string()),
    }
}

/// A server's `CallToolResult`, relayed as it sent it (SPEC §14); the text of its
/// content is the error of a result marked `isError`.
fn relayed(output: Value, tool: &str, server: &str) -> ToolResult {
    use serde::Deserialize;
    if let Err(err) = rmcp::model::CallToolResult::deserialize(&output) {
        let why = format!("`{tool}` of the MCP server `{server}` failed: its result is not a tool's result: {err}");
        return ToolResult::ended(Outcome::Raised, why);
    }
    let is_error = output["isError"] == true;
    let error = is_error.then(|| {
        let blocks = output["content"].as_array().into_iter().flatten();
        let texts: Vec<&str> =
            blocks.filter(|block| block["type"] == "text").filter_map(|b| b["text"].as_str()).collect();
        if texts.is_empty() { format!("`{tool}` of the MCP server `{server}` failed") } else { texts.join("\n") }
    });
    ToolResult { outcome: Outcome::Relayed { is_error }, output, error, ..ToolResult::failure(String::new()) }
}

/// SPEC §14: `d` is 0 with `readOnlyHint: true`, else 2 with `destructiveHint: false`,
/// else 3; `w` is 1 with `openWorldHint: false`, else 3.
fn grade(annotations: &Value) -> Grade {
    let d = if annotations["readOnlyHint"] == true {
        0
    } else if annotations["destructiveHint"] == false {
        2
    } else {
        3
    };
    let w = if annotations["openWorldHint"] == false { 1 } else { 3 };
    Grade { w, d }
}

async fn connect(entry: &ServerEntry, client: Client) -> Result<Connection, String> {
    match &entry.transport {
        Transport::Stdio { command, args, env, cwd } => {
            let mut process = tokio::process::Command::new(command);
            process
                .args(args)
                .envs(env.iter().map(|(k, v)| (k, v)))
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .process_group(0)
                .kill_on_drop(true);
            if let Some(dir) = cwd {
                process.current_dir(dir);
            }
            let mut child = process.spawn().map_err(|err| format!("`{command}` could not be started: {err}"))?;
            // From here on, however the start ends, the server's processes end with it.
            let group = child.id().map(|pid| Group(pid as i32));
            let stderr = Arc::new(Mutex::new(VecDeque::new()));
            if let Some(mut pipe) = child.stderr.take() {
                let kept = Arc::clone(&stderr);
                tokio::spawn(async move {
                    let mut buffer = [0u8; 1024];
                    while let Ok(n @ 1..) = pipe.read(&mut buffer).await {
                        let mut kept = sync::lock(&kept);
                        kept.extend(&buffer[..n]);
                        let over = kept.len().saturating_sub(STDERR_KEPT);
                        kept.drain(..over);
                    }
                });
            }
            let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
                return Err("its standard input and output could not be opened".to_string());
            };
            // The child is ended through its group when the connection goes; tokio
            // reaps it, and the connection hears of its exit.
            let (exit, exited) = tokio::sync::oneshot::channel();
            tokio::spawn(async move {
                let _ = child.wait().await;
                let _ = exit.send(());
            });
            let mut connection_stderr = Some(stderr);
            let service = match client.serve((stdout, stdin)).await {
                Ok(service) => service,
                Err(err) => {
                    drop(group);
                    let kept = connection_stderr.take().map(|s| stderr_text(&s)).unwrap_or_default();
                    return Err(if kept.is_empty() {
                        format!("it did not initialize: {err}")
                    } else {
                        format!("it did not initialize: {err}; its stderr: {kept}")
                    });
                }
            };
            let process = group.map(|group| Process { group, exited });
            Ok(Connection { service, process, stderr: connection_stderr.take().unwrap_or_default() })
        }
        Transport::Http { url, headers } => {
            use hyper::header::{AUTHORIZATION, HeaderName, HeaderValue};
            use rmcp::transport::streamable_http_client::{
                StreamableHttpClientTransport, StreamableHttpClientTransportConfig,
            };
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            let mut custom = std::collections::HashMap::new();
            for (name, value) in headers {
                let header = HeaderName::try_from(name.as_str()).map_err(|err| format!("header `{name}`: {err}"))?;
                if header == AUTHORIZATION {
                    // rmcp writes `Authorization: Bearer <token>` itself.
                    config = config.auth_header(value.strip_prefix("Bearer ").unwrap_or(value).trim());
                    continue;
                }
                let value = HeaderValue::try_from(value.as_str()).map_err(|err| format!("header `{name}`: {err}"))?;
                custom.insert(header, value);
            }
            let transport =
                StreamableHttpClientTransport::with_client(Attributed(http_client()), config.custom_headers(custom));
            let service = client
                .serve(transport)
                .await
                .map_err(|err| format!("`{}` did not initialize: {err}", text_safety::shown_url(url)))?;
            Ok(Connection { service, process: None, stderr: Arc::default() })
        }
    }
}

/// The HTTP client of a server over Streamable HTTP: rmcp's, redirects as rmcp
/// follows them (307 and 308 to the same origin, at most 10), except that it keeps
/// its connections to the server between requests.
fn http_client() -> reqwest::Client {
    let redirects = reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = matches!(
            attempt.status(),
            reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
        );
        let same_origin = attempt.previous().first().is_some_and(|first| first.origin() == attempt.url().origin());
        if !keeps_body || !same_origin || attempt.previous().len() > 10 { attempt.stop() } else { attempt.follow() }
    });
    reqwest::Client::builder().redirect(redirects).build().expect("an HTTP client builds")
}

fn stderr_text(stderr: &Mutex<VecDeque<u8>>) -> String {
    let kept = sync::lock(stderr);
    let (a, b) = kept.as_slices();
    String::from_utf8_lossy(&[a, b].concat()).trim().to_string()
}

fn with_stderr(message: String, connection: &Connection) -> String {
    let kept = stderr_text(&connection.stderr);
    if kept.is_empty() { message } else { format!("{message}; its stderr: {kept}") }
}
