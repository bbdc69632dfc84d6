//! `lcp serve`: the tools of a registry over the Model Context Protocol.
//!
//! The only code that touches `rmcp`. The server is written by hand over the
//! registry: `tools/list` is the registry's `mcp` export, `tools/call` goes through
//! the runtime, and both the `initialize` handshake and the handshake-less
//! (2026-07-28) lifecycle are served, over stdio or Streamable HTTP.
//!
//! - `mod.rs`: the `ServerHandler`, tool listing and `list_changed` (after a rescan
//!   that changed the tools, sent to handshake sessions and to `subscriptions/listen`
//!   streams).
//! - `watch.rs`: when to rescan (change notifications, or polling where there are none).
//! - `listing.rs`: the serialized `tools/list`, kept per registry generation and
//!   configuration, and spliced into responses by the transports.
//! - `call.rs`: one call: confirmations as elicitations, cancellation, results.
//! - `requester.rs`: the client a call answers to, and how it reaches it.
//! - `docs.rs`: `docs_index` and `resolve_doc` (`[mcp] docs_tools`).
//! - `search_tool.rs`: `search_tools` and its index (`[mcp] tool_search`, SPEC §21).
//! - `members.rs`: prompts, resources and completion (SPEC §15).
//! - `state.rs`: the signed `requestState` of a call parked on a question (SPEC §16).
//! - `tasks.rs`: calls run as MCP tasks, in memory or in Redis (SPEC §16).
//! - `stdio.rs`: the protocol on private duplicates of fd 0 and 1.
//! - `http.rs`: Streamable HTTP.
//! - `upstream.rs`: lcp as a client of the config's MCP servers, whose tools are a
//!   source (SPEC §14): listed into the registry, calls forwarded.
//!
//! What is listed and callable is the host's view (`crate::host::view`): the profile's
//! tools under their aliases, minus what the policy forbids, with the config file read
//! again when it changes; the tools' and profile's docs are resources, read when asked.
//!
//! Invariant: a tool that fails is a result with `isError: true`; a protocol error
//! is only for a request that cannot be routed (an unknown tool).

mod auth;
mod call;
mod content;
mod docs;
mod host;
pub mod http;
mod listing;
mod members;
mod requester;
mod search_tool;
mod state;
mod stdio;
mod tasks;
pub mod upstream;
mod watch;

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock};
use std::time::Duration;

#[allow(deprecated)] // MCP's logging (SEP-2577) is deprecated but still what clients read.
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams, CompleteResult,
    GetPromptRequestParams, GetPromptResponse, GetTaskParams, GetTaskResult, Implementation, InitializeRequestParams,
    InitializeResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ResourceUpdatedNotificationParam, ServerCapabilities, ServerConfig, SubscribeRequestParams,
    SubscriptionFilter, UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::{Peer, RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use tokio::sync::broadcast;

use crate::diag::{Diagnostic, print_to_stderr};
use crate::discovery::registry::{Descriptions, Registry};
use crate::export::{self, Format, Layout};
use crate::host::config::{Config, Watched};
use crate::host::profile::{self, Choice, Selection};
use crate::host::view::{self, Admission, Member, View};
use crate::runtime::{CallOptions, Confirmation, Runtime, RuntimeConfig};
use crate::sync;

/// How `lcp serve` runs; every field is a command-line option.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Streamable HTTP on this address instead of stdio.
    pub http: Option<SocketAddr>,
    /// The libraries' configuration and autonomy level (`--config`).
    pub runtime: RuntimeConfig,
    /// Working directory of every call and prompt provider; `None`: the server's.
    pub workspace: Option<PathBuf>,
    /// Longest a call may run; `None` waits as long as the tool takes.
    pub timeout: Option<Duration>,
    /// Allow what a tool asks to confirm when the client cannot ask the user
    /// (no elicitation support). Without it such confirmations are rejected.
    pub yes: bool,
    /// Texts of a result longer than this many bytes are cut, with a marker.
    pub max_output: usize,
    /// The config file (`--config`), read again when it changes: its profiles, tool
    /// declarations and policy apply to the next listing or call.
    pub config: Arc<Watched>,
    /// `--profile` and `--extra-tools`, if given.
    pub profile: Option<Choice>,
    /// Serve an address other machines reach without credentials (`--allow-unauthenticated`).
    pub allow_unauthenticated: bool,
    /// The config's MCP servers, connected, whose tools the registry lists (SPEC §14).
    pub upstreams: Option<Arc<upstream::Upstreams>>,
}

pub use crate::runtime::DEFAULT_MAX_OUTPUT;

/// How long `lcp serve` runs before it starts a worker ahead of the first call: a
/// session that only lists and ends (a client or a gateway listing its servers) starts
/// no Python at all, and a call that comes sooner starts its worker itself.
const WARM_UP_AFTER: Duration = Duration::from_millis(100);

/// Serves until the client closes stdin (stdio) or the process is stopped (HTTP).
pub fn serve(registry: Registry, settings: Settings) -> Result<(), ServeError> {
    // Before anything else: from here on, fd 1 is stderr for everyone but the protocol.
    let stdio = match settings.http {
        None => Some(stdio::take().map_err(ServeError::Stdio)?),
        Some(_) => None,
    };
    let gate = match settings.http {
        Some(address) => access(address, &settings)?,
        None => None,
    };
    let key = state::StateKey::new(settings.config.current().mcp.state_key.as_deref()).map_err(ServeError::Config)?;
    let tasks = tasks::Tasks::new(settings.config.current().mcp.task_store.as_deref()).map_err(ServeError::Config)?;
    let listings = Arc::new(listing::Listings::new());
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(ServeError::AsyncRuntime)?;
    let server = Server::new(registry, settings.clone(), Arc::clone(&listings), key, tasks);
    let result = runtime.block_on(async {
        tokio::spawn(watch::watch(server.clone()));
        let warming = server.clone();
        tokio::spawn(async move {
            tokio::time::sleep(WARM_UP_AFTER).await;
            tokio::task::spawn_blocking(move || {
                if let Ok(python) = warming.python() {
                    python.warm_up(warming.shared.settings.workspace.as_deref());
                }
            });
        });
        let serving = async {
            match (stdio, settings.http) {
                (Some(fds), _) => {
                    let (input, output) = stdio::transport(fds).map_err(ServeError::Stdio)?;
                    let transport = (input, listing::SplicingWriter::new(output, listings));
                    let running =
                        server.clone().serve(transport).await.map_err(|err| ServeError::Session(err.to_string()))?;
                    running.waiting().await.map(drop).map_err(|err| ServeError::Session(err.to_string()))
                }
                (None, Some(address)) => http::serve(server.clone(), address, listings, gate).await,
                (None, None) => unreachable!("stdio is taken whenever --http is absent"),
            }
        };
        let result = tokio::select! {
            result = serving => result,
            () = stopped() => Ok(()),
        };
        // Its tasks end with it: failed, saying so, for whoever asks after them.
        server.shared.tasks.abandon().await;
        result
    });
    // The worker processes end with the server, and are waited for: a start of Python
    // in progress (the warm-up) is waited for first, and none begins after this.
    *sync::lock(&server.shared.ending) = true;
    if let Some(Ok(python)) = server.shared.python.get() {
        python.shutdown();
    }
    // A call still running in Python (in-process, cancelled or abandoned by the client) must
    // not keep the process alive once the session is over.
    runtime.shutdown_background();
    result
}

/// The credentials `--http address` asks for (SPEC §17): `[auth]`'s, or none on
/// loopback; an address other machines reach needs them, or `--allow-unauthenticated`
/// (said with a warning).
fn access(address: SocketAddr, settings: &Settings) -> Result<Option<auth::Gate>, ServeError> {
    let config = settings.config.current();
    if config.auth.requires_credentials() {
        for (scope, profile) in &config.auth.scopes {
            if config.profile(profile).is_none() {
                return Err(ServeError::Auth(format!("scope `{scope}` names no profile `{profile}`")));
            }
        }
        return auth::Gate::new(&config.auth).map(Some).map_err(ServeError::Auth);
    }
    if !address.ip().is_loopback() {
        if !settings.allow_unauthenticated {
            return Err(ServeError::Unauthenticated { address });
        }
        eprintln!(
            "lcp: warning: --allow-unauthenticated: anyone who can reach {address} can list and call these tools"
        );
    }
    Ok(None)
}

/// Why `lcp serve` stopped serving before it was asked to.
#[derive(Debug)]
#[non_exhaustive]
pub enum ServeError {
    /// Standard input and output could not be set up for the protocol.
    Stdio(std::io::Error),
    /// The async runtime could not start.
    AsyncRuntime(std::io::Error),
    /// The MCP session over stdio failed.
    Session(String),
    /// The HTTP endpoint could not be served (`--http`).
    Http {
        /// The address asked for.
        address: SocketAddr,
        /// Why it cannot be served on.
        error: std::io::Error,
    },
    /// An address other machines reach, without `[auth]` and without
    /// `--allow-unauthenticated`.
    Unauthenticated {
        /// The address asked for.
        address: SocketAddr,
    },
    /// `[auth]` cannot be used as it is (its tokens file, a scope's profile).
    Auth(String),
    /// The config cannot be served as it is (its `[mcp] state_key`).
    Config(String),
}

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServeError::Stdio(err) => write!(f, "cannot set up stdio: {err}"),
            ServeError::AsyncRuntime(err) => write!(f, "cannot start the async runtime: {err}"),
            ServeError::Session(message) => write!(f, "MCP session failed: {message}"),
            ServeError::Http { address, error } => write!(f, "--http {address}: {error}"),
            ServeError::Unauthenticated { address } => write!(
                f,
                "--http {address} is reachable from other machines: configure [auth] in the config file \
                 (an OAuth issuer, or a tokens_file) or pass --allow-unauthenticated"
            ),
            ServeError::Auth(message) => write!(f, "[auth]: {message}"),
            ServeError::Config(message) => write!(f, "{message}"),
        }
    }
}

impl std::error::Error for ServeError {}

/// Resolves when the process is asked to stop (SIGTERM, SIGINT, SIGHUP).
async fn stopped() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut terminate), Ok(mut interrupt), Ok(mut hangup)) =
        (signal(SignalKind::terminate()), signal(SignalKind::interrupt()), signal(SignalKind::hangup()))
    else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = terminate.recv() => {}
        _ = interrupt.recv() => {}
        _ = hangup.recv() => {}
    }
}

/// One per session (HTTP makes one per session or request); all share the registry.
#[derive(Clone)]
pub struct Server {
    shared: Arc<Shared>,
    session: Arc<Session>,
}

/// What one session set.
#[derive(Default)]
struct Session {
    /// `logging/setLevel`'s level, as a Python level; `None`: info (SPEC §9).
    log_level: Mutex<Option<u32>>,
    /// The profile its first request's token chose (`[auth.scopes]`); every later
    /// request must come with a token that chooses the same (SPEC §17).
    caller: OnceLock<Option<String>>,
    /// The resource URIs `resources/subscribe` named (SPEC §15).
    subscribed: Arc<Mutex<std::collections::HashSet<String>>>,
}

/// What a rescan changed: the problems of the files read again (told to every
/// session), the files added, changed or removed, and whether the prompts or
/// resources shown may differ.
struct Changed {
    problems: Vec<Diagnostic>,
    files: Vec<PathBuf>,
    members: bool,
    /// Resources an MCP server said were updated (`notifications/resources/updated`):
    /// when there are any, nothing else changed.
    updated: Vec<String>,
}

impl Changed {
    /// A change as a listener heard it: one it missed (it lagged) may have been
    /// anything, so the prompts and resources may differ; `None` once no more come.
    fn heard(change: Result<Arc<Changed>, broadcast::error::RecvError>) -> Option<Arc<Changed>> {
        match change {
            Ok(changed) => Some(changed),
            Err(broadcast::error::RecvError::Lagged(_)) => {
                Some(Arc::new(Changed { problems: Vec::new(), files: Vec::new(), members: true, updated: Vec::new() }))
            }
            Err(broadcast::error::RecvError::Closed) => None,
        }
    }
}

struct Shared {
    /// The registry rescans update.
    registry: Mutex<Registry>,
    /// The registry as of the last change, for listings and calls, and how many
    /// changes came before it (its generation).
    snapshot: RwLock<(u64, Arc<Registry>)>,
    /// The last `tools/list` built.
    listings: Arc<listing::Listings>,
    /// The last catalog `search_tools` searched.
    searches: search_tool::Searches,
    /// Whether change notifications tell of changed files (else a list rescans first).
    notified: AtomicBool,
    /// A change was notified and its rescan has not finished: a listing waits for it.
    change_pending: AtomicBool,
    settings: Settings,
    runtime_config: RuntimeConfig,
    upstreams: Option<Arc<upstream::Upstreams>>,
    /// The runtime for prompt providers and for dropping changed modules; it exists
    /// once Python has started (by the first call or listing that needs it).
    python: OnceLock<Result<Runtime, String>>,
    /// Held while Python starts; `true` once the server is ending: no start begins
    /// after, and the end waits for one in progress (whose workers it then ends).
    ending: Mutex<bool>,
    /// Fires after a rescan that changed the tool list.
    tools_changed: broadcast::Sender<Arc<Changed>>,
    parked: call::Parked,
    /// The calls run as tasks (SPEC §16).
    tasks: Arc<tasks::Tasks>,
    /// How long a session stays open unused (`[mcp] session_idle`).
    session_idle: Duration,
    /// The profiles chosen, checked against the registry and config now current, and
    /// the views made of them.
    views: Views,
}

/// What each choice of profile makes of a registry under a config, kept while both
/// are current: the profile checked against the tools ([`profile::select`]), so a
/// call's admission does not check it again, and the view built from it on first
/// need, so a listing of prompts or resources, a read or a docs call does not build
/// it again. Holding the registry and config keeps the ones it was made from alive,
/// so a new registry or config is never taken for them.
#[derive(Default)]
struct Views(Mutex<Vec<Arc<Viewed>>>);

/// A choice of profile (`None`: every tool) over a registry under a config.
struct Viewed {
    registry: Arc<Registry>,
    config: Arc<Config>,
    choice: Option<Choice>,
    /// The profile checked, or why there is none (a profile the config no longer has).
    selection: Result<Option<Arc<Selection>>, String>,
    view: OnceLock<Arc<View>>,
}

impl Views {
    /// What `choice` makes of `registry` under `config`, kept or made now.
    fn of(&self, registry: &Arc<Registry>, config: &Arc<Config>, choice: Option<Choice>) -> Arc<Viewed> {
        let mut kept = sync::lock(&self.0);
        let current = |kept: &Viewed| Arc::ptr_eq(&kept.registry, registry) && Arc::ptr_eq(&kept.config, config);
        if let Some(found) = kept.iter().find(|kept| current(kept) && kept.choice == choice) {
            return Arc::clone(found);
        }
        let selection = match &choice {
            None => Ok(None),
            Some(choice) => match choice.profile(&config.profiles) {
                Ok(profile) => Ok(Some(Arc::new(profile::select(&profile, registry)))),
                Err(err) => Err(err.to_string()),
            },
        };
        // Those of an earlier registry or config are never asked for again.
        kept.retain(|kept| current(kept));
        let (registry, config) = (Arc::clone(registry), Arc::clone(config));
        let viewed = Arc::new(Viewed { registry, config, choice, selection, view: OnceLock::new() });
        kept.push(Arc::clone(&viewed));
        viewed
    }
}

impl Viewed {
    /// What the host shows: the tools the profile selects under the config's policy;
    /// none, with the error said once, when the profile is gone.
    fn view(&self) -> Arc<View> {
        let view = self.view.get_or_init(|| {
            Arc::new(match &self.selection {
                Ok(selection) => view::view_selected(&self.registry, &self.config, selection.clone()),
                Err(err) => {
                    eprintln!("lcp: {err}");
                    let registry = Registry::from_libraries(Vec::new(), self.registry.diagnostics().to_vec());
                    View { registry, ..View::default() }
                }
            })
        });
        Arc::clone(view)
    }
}

impl Server {
    fn new(
        registry: Registry,
        settings: Settings,
        listings: Arc<listing::Listings>,
        key: state::StateKey,
        tasks: tasks::Tasks,
    ) -> Server {
        let (tools_changed, _) = broadcast::channel(16);
        let idle =
            settings.config.current().mcp.session_idle.unwrap_or(crate::host::config::McpConfig::DEFAULT_SESSION_IDLE);
        let shared = Shared {
            snapshot: RwLock::new((0, Arc::new(registry.clone()))),
            registry: Mutex::new(registry),
            listings,
            searches: search_tool::Searches::default(),
            notified: AtomicBool::new(false),
            change_pending: AtomicBool::new(false),
            runtime_config: settings.runtime.clone(),
            upstreams: settings.upstreams.clone(),
            settings,
            python: OnceLock::new(),
            ending: Mutex::new(false),
            tools_changed,
            parked: call::Parked::new(key),
            tasks: Arc::new(tasks),
            session_idle: idle,
            views: Views::default(),
        };
        // What an MCP server says of a resource it serves reaches the sessions that
        // subscribed to it.
        if let Some(upstreams) = &shared.upstreams {
            let changed = shared.tools_changed.clone();
            upstreams.on_update(move |uri| {
                let update =
                    Changed { problems: Vec::new(), files: Vec::new(), members: false, updated: vec![uri.to_string()] };
                let _ = changed.send(Arc::new(update));
            });
        }
        Server { shared: Arc::new(shared), session: Arc::default() }
    }

    /// The server for a new session: the same tools, its own settings.
    fn new_session(&self) -> Server {
        self.of_session(Arc::default())
    }

    /// The server of `session`.
    fn of_session(&self, session: Arc<Session>) -> Server {
        Server { shared: Arc::clone(&self.shared), session }
    }

    /// The Python level below which a request's records are neither made nor sent:
    /// the request's own (`io.modelcontextprotocol/logLevel`), else the session's
    /// (`logging/setLevel`, default info). A handshake-less request that names none
    /// asked for no log messages.
    fn log_level(&self, context: &RequestContext<RoleServer>) -> u32 {
        #[allow(deprecated)] // MCP's logging (SEP-2577) is deprecated but still what clients read.
        if let Some(level) = context.meta.log_level() {
            return host::python_level(level);
        }
        let handshake_less = context.protocol_version().is_some_and(|version| !version.has_initialize());
        if handshake_less {
            return crate::runtime::host_objects::level::OFF;
        }
        self.session_log_level()
    }

    /// The session's level (`logging/setLevel`, default info).
    fn session_log_level(&self) -> u32 {
        sync::lock(&self.session.log_level).unwrap_or(crate::runtime::host_objects::level::INFO)
    }

    fn registry(&self) -> MutexGuard<'_, Registry> {
        // A panic while holding the lock leaves the registry as valid as before it.
        sync::lock(&self.shared.registry)
    }

    fn snapshot(&self) -> Arc<Registry> {
        self.generation().1
    }

    /// The snapshot with its generation.
    fn generation(&self) -> (u64, Arc<Registry>) {
        let snapshot = sync::read(&self.shared.snapshot);
        (snapshot.0, Arc::clone(&snapshot.1))
    }

    /// Whether a notified change waits for its rescan.
    fn set_change_pending(&self, pending: bool) {
        self.shared.change_pending.store(pending, Ordering::Release);
    }

    /// Waits (a few settling times at most) for the rescan of a notified change, so a
    /// listing right after a change is not the list from before it.
    async fn settled(&self) {
        for _ in 0..100 {
            if !self.shared.change_pending.load(Ordering::Acquire) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// `resources/subscribe` (`subscribe`) or `unsubscribe` of `uri` passed to the MCP
    /// server that serves it, if one does: a server that refuses is the request's error.
    async fn subscribe_upstream(&self, uri: &str, subscribe: bool) -> Result<(), ErrorData> {
        let Some(upstreams) = self.upstreams().cloned() else { return Ok(()) };
        let uri = uri.to_string();
        let done = tokio::task::spawn_blocking(move || {
            if subscribe { upstreams.subscribe(&uri) } else { upstreams.unsubscribe(&uri) }
        });
        match done.await.ok().flatten() {
            Some(Err(why)) => Err(ErrorData::internal_error(why, None)),
            _ => Ok(()),
        }
    }

    /// The config's MCP servers, when it has any.
    fn upstreams(&self) -> Option<&Arc<upstream::Upstreams>> {
        self.shared.upstreams.as_ref()
    }

    /// From now on, change notifications start every rescan.
    fn set_notified(&self) {
        self.shared.notified.store(true, Ordering::Release);
    }

    /// Starts Python (once); blocks, so only on a blocking thread.
    fn python(&self) -> Result<&Runtime, String> {
        if let Some(started) = self.shared.python.get() {
            return started.as_ref().map_err(|err| format!("cannot start Python: {err}"));
        }
        let ending = sync::lock(&self.shared.ending);
        if *ending {
            return Err("lcp serve is ending".to_string());
        }
        let started = self.shared.python.get_or_init(|| {
            let runtime = Runtime::new(self.shared.runtime_config.clone()).map_err(|err| err.to_string())?;
            // Libraries loaded by a prompt provider must get the confirm bridge too.
            runtime.set_confirm_handler(|_| Confirmation::reject("a prompt provider cannot ask for confirmation"));
            if let Some(upstreams) = &self.shared.upstreams {
                runtime.set_forwarder(upstreams.forwarder());
            }
            Ok(runtime)
        });
        drop(ending);
        started.as_ref().map_err(|err| format!("cannot start Python: {err}"))
    }

    /// Re-reads changed files (cheap when nothing changed), drops the loaded modules
    /// of changed files, and tells every listener when the tool list changed, with
    /// the problems found in the files read again: on stderr, and to every handshake
    /// session as log messages (a broken file dropped in is never silent).
    async fn rescan(&self) {
        let server = self.clone();
        let changed = tokio::task::spawn_blocking(move || {
            let mut registry = server.registry();
            let changes = match server.shared.python.get() {
                Some(Ok(python)) => python.rescan(&mut registry),
                _ => registry.rescan(),
            };
            // An MCP server that said its tools changed is listed again (SPEC §14).
            let relisted = server.shared.upstreams.as_ref().and_then(|upstreams| upstreams.relist());
            let servers_changed = relisted.is_some();
            if let Some((libraries, diagnostics)) = relisted {
                registry.set_server_tools(libraries, diagnostics);
            }
            if changes.is_empty() && !servers_changed {
                return None;
            }
            let read: Vec<&PathBuf> = changes.added.iter().chain(&changes.changed).collect();
            let problems: Vec<Diagnostic> =
                registry.diagnostics().iter().filter(|d| read.contains(&&d.path)).cloned().collect();
            print_to_stderr(&problems);
            let mut snapshot = sync::write(&server.shared.snapshot);
            let (before, after) = (&snapshot.1, &*registry);
            let members_changed = !before.prompts().map(|(_, p)| p).eq(after.prompts().map(|(_, p)| p))
                || !before.resources().map(|(_, r)| r).eq(after.resources().map(|(_, r)| r));
            *snapshot = (snapshot.0 + 1, Arc::new(registry.clone()));
            let files = changes.added.iter().chain(&changes.changed).chain(&changes.removed).cloned().collect();
            Some(Changed { problems, files, members: members_changed, updated: Vec::new() })
        });
        if let Ok(Some(changed)) = changed.await {
            let _ = self.shared.tools_changed.send(Arc::new(changed));
        }
    }

    /// The `tools/list` result: a stand-in for the list kept for this registry
    /// generation and configuration, or for one built now (see `listing`). Prompt
    /// providers' descriptions are asked for on every list, so such a list is not kept.
    async fn list(&self) -> ListToolsResult {
        let server = self.clone();
        let listed = tokio::task::spawn_blocking(move || {
            let (generation, snapshot) = server.generation();
            let config = server.shared.settings.config.current();
            let asks_python = snapshot.has_prompt_providers();
            let key = server.key(generation, &config);
            let kept = (!asks_python).then(|| key.clone());
            server.shared.listings.answer(kept, || server.tools_text(&snapshot, &config, &key))
        });
        listed.await.unwrap_or_else(|_| ListToolsResult::with_all_items(Vec::new()))
    }

    /// What a list or a search of this session's view of the registry of `generation`
    /// depends on.
    fn key(&self, generation: u64, config: &Arc<Config>) -> listing::Key {
        listing::Key { generation, config: Arc::clone(config), profile: self.session.caller.get().cloned().flatten() }
    }

    /// The registry's `mcp` export as shown (with the prompt providers' descriptions):
    /// the tools' JSON texts separated by commas; with tool search on, only the tools
    /// of `[mcp] always_list` and `search_tools` (SPEC §21). Tools MCP cannot carry (a
    /// name it refuses, a schema nested too deep) are left out with an error on
    /// stderr, as in `lcp export`.
    fn tools_text(&self, snapshot: &Arc<Registry>, config: &Arc<Config>, key: &listing::Key) -> Vec<u8> {
        let view = self.view_with(snapshot, config);
        for problem in view.selection.iter().flat_map(|selection| &selection.problems) {
            eprintln!("lcp: {problem}");
        }
        let searched = search_tool::is_on(&view.registry, &config.mcp);
        let listed = searched.then(|| search_tool::always_listed(&view.registry, &config.mcp.always_list));
        let (registry, routes) = (listed.as_ref().unwrap_or(&view.registry), &view.routes);
        let mut descriptions = self.descriptions(registry);
        descriptions.set_enforcement(crate::runtime::sandbox::enforcement(&self.shared.runtime_config));
        // What the tools' code can do is read once per generation, prompt providers or not.
        let found = self.shared.listings.found(key, || crate::host::audit::found(registry, config, routes));
        descriptions.set_found(found.iter().cloned());
        let mut text = Vec::new();
        let format = Format::Mcp { inline_refs: config.mcp.inline_refs };
        let written = export::write_entries(registry, &descriptions, format, Layout::Compact, &mut text);
        // Writing into memory cannot fail; a tool MCP cannot carry is left out, and
        // the error says which and why, as `lcp export` says it.
        print_to_stderr(written.iter().flatten());
        // The array's brackets are the response's own.
        text.pop();
        text.remove(0);
        let mut own = Vec::new();
        if config.mcp.docs_tools {
            let shown: Vec<&str> = registry.tools().map(|(_, tool)| tool.name.as_str()).collect();
            own.extend(docs::tools(&shown));
        }
        if searched {
            own.push(search_tool::tool());
        }
        for tool in own {
            if !text.is_empty() {
                text.push(b',');
            }
            serde_json::to_writer(&mut text, &tool).expect("a tool serializes");
        }
        text
    }

    /// The descriptions of `registry`'s tools that prompt providers give (none when it
    /// has no prompt provider; the static ones, saying why, when Python cannot start).
    fn descriptions(&self, registry: &Registry) -> Descriptions {
        if !registry.has_prompt_providers() {
            return Descriptions::default();
        }
        match self.python() {
            Ok(python) => {
                let options =
                    CallOptions { workspace: self.shared.settings.workspace.clone(), ..CallOptions::default() };
                let (descriptions, diagnostics) = python.prompt_descriptions(registry, &options);
                print_to_stderr(&diagnostics);
                descriptions
            }
            Err(err) => {
                eprintln!("lcp: descriptions are the static ones: {err}");
                Descriptions::default()
            }
        }
    }

    /// The answer of `search_tools` to a call with `arguments`, when tool search is on
    /// for this session's view (SPEC §21); `None` otherwise (the name is then a tool's
    /// name like any other). Every change made before the request is searched, as it
    /// is listed.
    async fn search_call(
        &self,
        arguments: Option<&serde_json::Map<String, serde_json::Value>>,
    ) -> Option<rmcp::model::CallToolResult> {
        watch::before_listing(self).await;
        let (server, arguments) = (self.clone(), arguments.cloned().unwrap_or_default());
        let answer = tokio::task::spawn_blocking(move || {
            let (generation, snapshot) = server.generation();
            let config = server.shared.settings.config.current();
            let catalog = server.shared.searches.catalog(server.key(generation, &config), |before| {
                let registry = server.view_with(&snapshot, &config).registry.clone();
                if !search_tool::is_on(&registry, &config.mcp) {
                    return None;
                }
                let descriptions = server.descriptions(&registry);
                Some(search_tool::Catalog::new(registry, descriptions, config.mcp.inline_refs, before))
            })?;
            Some(search_tool::call(&arguments, &catalog))
        });
        answer.await.ok().flatten()
    }

    /// What the host shows of `registry` now: the config as its file is now, and the
    /// profile chosen (a profile that is gone shows no tools).
    fn view(&self, registry: &Arc<Registry>) -> Arc<View> {
        self.view_with(registry, &self.shared.settings.config.current())
    }

    /// The profile this session sees: its token's, else `--profile`'s.
    fn choice(&self) -> Option<Choice> {
        match self.session.caller.get() {
            Some(Some(profile)) => Some(Choice { profile: profile.clone(), extra_tools: Vec::new() }),
            _ => self.shared.settings.profile.clone(),
        }
    }

    /// Ties the session to the profile its request's token chose (the first request
    /// decides); a request whose token chose another is refused.
    fn bind_caller(&self, context: &RequestContext<RoleServer>) -> Result<(), ErrorData> {
        self.bind_caller_of(context.extensions.get::<hyper::http::request::Parts>())
    }

    /// [`Server::bind_caller`] of a request's HTTP head, if it came over HTTP.
    fn bind_caller_of(&self, parts: Option<&hyper::http::request::Parts>) -> Result<(), ErrorData> {
        let caller =
            parts.and_then(|parts| parts.extensions.get::<auth::Caller>()).and_then(|caller| caller.profile.clone());
        let bound = self.session.caller.get_or_init(|| caller.clone());
        if *bound == caller {
            Ok(())
        } else {
            Err(ErrorData::invalid_request("this session was opened with a token that chose another profile", None))
        }
    }

    /// What this session's profile ([`Server::choice`]) shows of `registry` under
    /// `config`, as [`Views`] keeps it.
    fn view_with(&self, registry: &Arc<Registry>, config: &Arc<Config>) -> Arc<View> {
        self.shared.views.of(registry, config, self.choice()).view()
    }

    /// This session's profile checked against `registry` under `config`, as [`Views`]
    /// keeps it; `None` when no profile is chosen.
    fn selection(&self, registry: &Arc<Registry>, config: &Arc<Config>) -> Result<Option<Arc<Selection>>, String> {
        self.shared.views.of(registry, config, self.choice()).selection.clone()
    }

    /// The answer of lcp's own docs tools to a call of `name` that no tool shown
    /// has, when `[mcp] docs_tools` lists them; `None` otherwise.
    async fn docs_call(
        &self,
        registry: &Arc<Registry>,
        name: &str,
        arguments: Option<&serde_json::Map<String, serde_json::Value>>,
    ) -> Option<rmcp::model::CallToolResult> {
        let config = self.shared.settings.config.current();
        if !config.mcp.docs_tools || !docs::NAMES.contains(&name) {
            return None;
        }
        let (server, registry, name) = (self.clone(), Arc::clone(registry), name.to_string());
        let arguments = arguments.cloned().unwrap_or_default();
        let answer = tokio::task::spawn_blocking(move || {
            let docs = &server.view_with(&registry, &config).docs;
            docs::call(&name, &arguments, docs, &config.folder())
        });
        answer.await.ok().flatten()
    }

    /// The check of one call before any code runs (SPEC §11, §12), with the config
    /// as its file is now.
    fn admit(&self, registry: &Arc<Registry>, config: &Arc<Config>, name: &str) -> Admission {
        self.admit_as(registry, config, name, Member::Tool)
    }

    /// [`Server::admit`] of a tool, a prompt or a resource (SPEC §15).
    fn admit_as(&self, registry: &Arc<Registry>, config: &Arc<Config>, name: &str, member: Member) -> Admission {
        match self.selection(registry, config) {
            Ok(selection) => view::admit_member(registry, config, selection.as_deref(), name, member),
            Err(err) => Admission::Unknown(err),
        }
    }

    /// Sends `notifications/tools/list_changed` to a handshake session until it closes.
    fn forward_list_changes(&self, peer: Peer<RoleServer>) {
        let mut changes = self.shared.tools_changed.subscribe();
        let server = self.clone();
        tokio::spawn(async move {
            loop {
                let Some(changed) = Changed::heard(changes.recv().await) else { return };
                if !changed.updated.is_empty() {
                    let subscribed = sync::lock(&server.session.subscribed).clone();
                    for uri in changed.updated.iter().filter(|uri| subscribed.contains(*uri)) {
                        let _ = peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(uri.clone())).await;
                    }
                    continue;
                }
                for problem in &changed.problems {
                    #[allow(deprecated)] // MCP's logging (SEP-2577) is deprecated but still what clients read.
                    let _ = peer.notify_logging_message(host::diagnostic_message(problem)).await;
                }
                if peer.is_transport_closed() || peer.notify_tool_list_changed().await.is_err() {
                    return;
                }
                if changed.members {
                    let _ = peer.notify_prompt_list_changed().await;
                    let _ = peer.notify_resource_list_changed().await;
                }
                let subscribed = sync::lock(&server.session.subscribed).clone();
                if !subscribed.is_empty() {
                    let files = changed.files.clone();
                    let updating = server.clone();
                    let updated =
                        tokio::task::spawn_blocking(move || updating.updated_resources(&files, &subscribed)).await;
                    for uri in updated.unwrap_or_default() {
                        let _ = peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(uri)).await;
                    }
                }
            }
        });
    }
}

/// Who made a request (SPEC §17): the caller its token showed over HTTP (`http.rs` puts
/// it in every request's head), else the one anonymous caller (stdio).
fn caller_of(parts: Option<&hyper::http::request::Parts>) -> auth::Caller {
    parts.and_then(|parts| parts.extensions.get::<auth::Caller>()).cloned().unwrap_or_else(auth::Caller::anonymous)
}

/// What a tool's `outputSchema` asks of its results' `structuredContent` (SPEC §12).
fn output_shape_of(tool: &crate::discovery::extract::Tool) -> content::Shape {
    match tool.output.as_ref() {
        None => content::Shape::Free,
        Some(schema) if export::mcp_output_wraps(schema.value()) => content::Shape::Wrapped,
        Some(_) => content::Shape::Object,
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        let config = self.shared.settings.config.current();
        let name = config.mcp.name.as_deref().unwrap_or("lcp");
        let info =
            ServerConfig::new(capabilities()).with_server_info(Implementation::new(name, env!("CARGO_PKG_VERSION")));
        match config.mcp.instructions.clone().or_else(|| library_descriptions(&self.snapshot())) {
            Some(instructions) => info.with_instructions(instructions),
            None => info,
        }
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        self.bind_caller(&context)?;
        context.peer.set_peer_info(request.clone());
        self.forward_list_changes(context.peer.clone());
        self.negotiate_initialize(&request)
    }

    /// `logging/setLevel`: the level of this session's log messages (SPEC §9).
    #[allow(deprecated)] // MCP's logging (SEP-2577) is deprecated but still what clients read.
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        *sync::lock(&self.session.log_level) = Some(host::python_level(request.level));
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.bind_caller(&context)?;
        // Every file change made before the request is in the list.
        watch::before_listing(self).await;
        Ok(self.list().await)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.bind_caller(&context)?;
        if request.name == search_tool::NAME
            && let Some(result) = self.search_call(request.arguments.as_ref()).await
        {
            return Ok(result.into());
        }
        call::call_tool(self, request, context).await
    }

    /// The docs of the tools shown and of the profile (SPEC §11), not read yet.
    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.bind_caller(&context)?;
        watch::before_listing(self).await;
        let server = self.clone();
        let docs =
            tokio::task::spawn_blocking(move || server.view(&server.snapshot()).docs.clone()).await.unwrap_or_default();
        let mut resources: Vec<Resource> = docs
            .into_iter()
            .map(|doc| {
                let description = format!("Documentation of {}", doc.name);
                Resource::new(doc.uri, doc.name).with_description(description).with_mime_type(mime_type(&doc.path))
            })
            .collect();
        let shown = self.shown_resources(false).await;
        resources.extend(shown.into_iter().filter_map(|resource| serde_json::from_value(resource).ok()));
        Ok(ListResourcesResult::with_all_items(resources))
    }

    /// The view's resource templates (SPEC §15).
    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.bind_caller(&context)?;
        watch::before_listing(self).await;
        Ok(self.list_templates_now().await)
    }

    /// The view's prompts (SPEC §15).
    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.bind_caller(&context)?;
        watch::before_listing(self).await;
        Ok(self.list_prompts_now().await)
    }

    /// One prompt, run with the arguments given (SPEC §15).
    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.bind_caller(&context)?;
        self.get_prompt_now(request, &context).await
    }

    /// Completion of a prompt's argument or a template's variable (SPEC §15).
    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.bind_caller(&context)?;
        self.complete_now(request).await
    }

    /// Remembers a resource URI whose changes this session hears of (SPEC §15). The
    /// handshake-less protocol has no such request.
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.bind_caller(&context)?;
        if context.protocol_version().is_some_and(|version| !version.has_initialize()) {
            return Err(ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                "resources/subscribe is not a method of this protocol version: use subscriptions/listen",
                None,
            ));
        }
        // A resource of an MCP server's is subscribed at the server too.
        self.subscribe_upstream(&request.uri, true).await?;
        sync::lock(&self.session.subscribed).insert(request.uri);
        Ok(())
    }

    /// Forgets a resource URI `resources/subscribe` named.
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.bind_caller(&context)?;
        if context.protocol_version().is_some_and(|version| !version.has_initialize()) {
            return Err(ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                "resources/unsubscribe is not a method of this protocol version: use subscriptions/listen",
                None,
            ));
        }
        if sync::lock(&self.session.subscribed).remove(&request.uri) {
            self.subscribe_upstream(&request.uri, false).await?;
        }
        Ok(())
    }

    /// Reads one doc, when it is asked for.
    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.bind_caller(&context)?;
        let server = self.clone();
        let uri = request.uri.clone();
        let found = tokio::task::spawn_blocking(move || {
            let view = server.view(&server.snapshot());
            let doc = view.docs.iter().find(|doc| doc.uri == uri)?;
            Some((std::fs::read_to_string(&doc.path), doc.path.clone()))
        });
        let found = found.await.ok().flatten();
        if found.is_none()
            && let Some(read) = self.read_member(&request, &context).await
        {
            return read;
        }
        match found {
            None => Err(ErrorData::invalid_params(
                format!("no resource `{}`", request.uri),
                Some(serde_json::json!({ "uri": request.uri })),
            )),
            Some((Err(err), path)) => {
                Err(ErrorData::internal_error(format!("{} cannot be read as text: {err}", path.display()), None))
            }
            Some((Ok(text), path)) => {
                let contents = ResourceContents::text(text, request.uri).with_mime_type(mime_type(&path));
                Ok(ReadResourceResult::new(vec![contents]).into())
            }
        }
    }

    /// `tasks/get` (SPEC §16).
    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.bind_caller(&context)?;
        let caller = caller_of(context.extensions.get::<hyper::http::request::Parts>());
        self.shared.tasks.get(&request.task_id, &caller.key()).await
    }

    /// `tasks/update`: the client's answers to a task's questions.
    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.bind_caller(&context)?;
        let caller = caller_of(context.extensions.get::<hyper::http::request::Parts>());
        self.shared.tasks.update(&request.task_id, request.input_responses, &caller.key()).await
    }

    /// `tasks/cancel`.
    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.bind_caller(&context)?;
        let caller = caller_of(context.extensions.get::<hyper::http::request::Parts>());
        self.shared.tasks.cancel(&request.task_id, &caller.key()).await
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        Some(requested.supported_by(&capabilities()))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        // The tasks its filter names (`taskIds`), whichever replica runs them (SPEC §16).
        self.shared.tasks.forward(context.request_context());
        let mut changes = self.shared.tools_changed.subscribe();
        let accepted = context.accepted();
        let wants_tools = accepted.tools_list_changed == Some(true);
        let wants_prompts = accepted.prompts_list_changed == Some(true);
        let wants_resources = accepted.resources_list_changed == Some(true);
        // The handshake-less protocol's `resources/subscribe` (SPEC §15).
        let subscribed: std::collections::HashSet<String> =
            accepted.resource_subscriptions.iter().flatten().cloned().collect();
        // A resource of an MCP server's is subscribed at the server while the stream lasts.
        for uri in &subscribed {
            self.subscribe_upstream(uri, true).await?;
        }
        let listened = async {
            loop {
                let changed = tokio::select! {
                    () = context.cancelled() => return,
                    change = changes.recv() => match Changed::heard(change) {
                        Some(changed) => changed,
                        None => return,
                    },
                };
                if !changed.updated.is_empty() {
                    for uri in changed.updated.iter().filter(|uri| subscribed.contains(*uri)) {
                        let _ = context.sink().notify_resource_updated(uri.clone()).await;
                    }
                    continue;
                }
                if wants_tools && context.sink().notify_tool_list_changed().await.is_err() {
                    return;
                }
                if wants_prompts && changed.members {
                    let _ = context.sink().notify_prompt_list_changed().await;
                }
                if wants_resources && changed.members {
                    let _ = context.sink().notify_resource_list_changed().await;
                }
                if !subscribed.is_empty() {
                    let (server, files, subscribed) = (self.clone(), changed.files.clone(), subscribed.clone());
                    let updated =
                        tokio::task::spawn_blocking(move || server.updated_resources(&files, &subscribed)).await;
                    for uri in updated.unwrap_or_default() {
                        let _ = context.sink().notify_resource_updated(uri).await;
                    }
                }
            }
        };
        listened.await;
        for uri in &subscribed {
            let _ = self.subscribe_upstream(uri, false).await;
        }
        Ok(())
    }
}

/// What the server offers: logging, tools, prompts and resources (and their lists
/// changing), resource subscriptions, completion, tasks.
fn capabilities() -> ServerCapabilities {
    #[allow(deprecated)] // MCP's logging (SEP-2577) is deprecated but still what clients read.
    let builder = ServerCapabilities::builder()
        .enable_logging()
        .enable_completions()
        .enable_prompts()
        .enable_prompts_list_changed()
        .enable_resources()
        .enable_resources_list_changed()
        .enable_resources_subscribe()
        .enable_tools()
        .enable_tool_list_changed()
        .enable_tasks();
    builder.build()
}

/// The default `instructions`: each library's `TOOL_LIBRARY_DESC` (the first file of
/// a library folder that has one), `Name: description` a line; `None` when no library
/// describes itself.
fn library_descriptions(registry: &Registry) -> Option<String> {
    let mut seen = Vec::new();
    let mut lines = Vec::new();
    let serves = |library: &&Arc<crate::discovery::extract::Library>| {
        !(library.tools.is_empty() && library.prompts.is_empty() && library.resources.is_empty())
    };
    for library in registry.libraries().iter().filter(serves) {
        let key = crate::runtime::library_key(library);
        let Some(description) = library.description.as_deref().map(str::trim).filter(|d| !d.is_empty()) else {
            continue;
        };
        if seen.contains(&key) {
            continue;
        }
        lines.push(format!("{}: {description}", library.name.as_deref().unwrap_or(&key)));
        seen.push(key);
    }
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// The MIME type of a doc, from its extension.
fn mime_type(path: &std::path::Path) -> &'static str {
    match path.extension().and_then(|ext| ext.to_str()).map(str::to_ascii_lowercase).as_deref() {
        Some("md" | "markdown") => "text/markdown",
        Some("html" | "htm") => "text/html",
        Some("json") => "application/json",
        _ => "text/plain",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_is_checked_and_its_view_made_once_per_registry_and_config() {
        let views = Views::default();
        let (registry, config) = (Arc::new(Registry::default()), Arc::new(Config::default()));
        let choice = || Some(Choice { profile: "a,b".into(), extra_tools: Vec::new() });
        let selection = |viewed: Arc<Viewed>| viewed.selection.clone().unwrap().unwrap();
        let first = views.of(&registry, &config, choice());
        let again = views.of(&registry, &config, choice());
        assert!(Arc::ptr_eq(&selection(first.clone()), &selection(again.clone())), "the same check");
        assert!(Arc::ptr_eq(&first.view(), &again.view()), "the same view");
        let other = Some(Choice { profile: "c,d".into(), extra_tools: Vec::new() });
        assert_eq!(selection(views.of(&registry, &config, other)).routes.len(), 0);
        let every_tool = views.of(&registry, &config, None);
        assert!(every_tool.selection.as_ref().unwrap().is_none(), "no profile: nothing to check");
        assert_eq!(sync::lock(&views.0).len(), 3, "one per choice");

        let rescanned = Arc::new(Registry::default());
        let after = views.of(&rescanned, &config, choice());
        assert!(!Arc::ptr_eq(&selection(first.clone()), &selection(after.clone())), "a new registry: checked again");
        assert!(!Arc::ptr_eq(&first.view(), &after.view()), "and viewed again");
        assert_eq!(sync::lock(&views.0).len(), 1, "those of the registry before are dropped");
        let gone = Some(Choice { profile: "nobody".into(), extra_tools: Vec::new() });
        let gone = views.of(&rescanned, &config, gone);
        assert!(gone.selection.as_ref().unwrap_err().contains("nobody"));
        assert_eq!(gone.view().registry.tools().count(), 0, "a profile that is gone shows no tools");
    }
}
