//! `lcp serve`: the tools of a registry over the Model Context Protocol.
//!
//! The only code that touches `rmcp`. The server is written by hand over the
//! registry: `tools/list` is the registry's `mcp` export, `tools/call` goes through
//! the runtime, and both the `initialize` handshake and the handshake-less
//! (2026-07-28) lifecycle are served, over stdio or Streamable HTTP.
//!
//! - `mod.rs`: the `ServerHandler`, tool listing and `list_changed` (a rescan every
//!   second, and before each `tools/list`, sent to handshake sessions and to
//!   `subscriptions/listen` streams).
//! - `call.rs`: one call: confirmations as elicitations, cancellation, results.
//! - `stdio.rs`: the protocol on private duplicates of fd 0 and 1.
//! - `http.rs`: Streamable HTTP. `config.rs`: `--config FILE`.
//!
//! Invariant: a tool that fails is a result with `isError: true`; a protocol error
//! is only for a request that cannot be routed (an unknown tool).

mod call;
pub mod config;
pub mod http;
mod stdio;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, InitializeRequestParams, InitializeResult,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, SubscriptionFilter, Tool,
};
use rmcp::service::{Peer, RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio::sync::broadcast;

use crate::export::{self, Format};
use crate::registry::Registry;
use crate::runtime::{CallOptions, Confirmation, Runtime, RuntimeConfig};

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
}

pub const DEFAULT_MAX_OUTPUT: usize = 1024 * 1024;

/// How often served folders are checked for added, changed or removed files.
const RESCAN_EVERY: Duration = Duration::from_secs(1);

/// Serves until the client closes stdin (stdio) or the process is stopped (HTTP).
pub fn serve(registry: Registry, settings: Settings) -> Result<(), String> {
    // Before anything else: from here on, fd 1 is stderr for everyone but the protocol.
    let stdio = match settings.http {
        None => Some(stdio::take().map_err(|err| format!("cannot set up stdio: {err}"))?),
        Some(_) => None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| format!("cannot start the async runtime: {err}"))?;
    let server = Server::new(registry, settings.clone());
    let result = runtime.block_on(async {
        tokio::spawn(watch(server.clone()));
        let warming = server.clone();
        tokio::task::spawn_blocking(move || {
            if let Ok(python) = warming.python() {
                python.warm_up();
            }
        });
        let serving = async {
            match (stdio, settings.http) {
                (Some(fds), _) => {
                    let transport = stdio::transport(fds).map_err(|err| format!("cannot use stdio: {err}"))?;
                    let running =
                        server.clone().serve(transport).await.map_err(|err| format!("MCP session failed: {err}"))?;
                    running.waiting().await.map(drop).map_err(|err| err.to_string())
                }
                (None, Some(address)) => http::serve(server.clone(), address).await,
                (None, None) => unreachable!("stdio is taken whenever --http is absent"),
            }
        };
        tokio::select! {
            result = serving => result,
            () = stopped() => Ok(()),
        }
    });
    // The worker processes end with the server, and are waited for.
    if let Some(Ok(python)) = server.shared.python.get() {
        python.shutdown();
    }
    // A call still running in Python (in-process, cancelled or abandoned by the client) must
    // not keep the process alive once the session is over.
    runtime.shutdown_background();
    result
}

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
}

struct Shared {
    /// The registry rescans update.
    registry: Mutex<Registry>,
    /// The registry as of the last change, for listings and calls.
    snapshot: RwLock<Arc<Registry>>,
    settings: Settings,
    runtime_config: RuntimeConfig,
    /// The runtime for prompt providers and for dropping changed modules; it exists
    /// once Python has started (by the first call or listing that needs it).
    python: OnceLock<Result<Runtime, String>>,
    /// Fires after a rescan that changed the tool list.
    tools_changed: broadcast::Sender<()>,
    parked: call::Parked,
}

impl Server {
    fn new(registry: Registry, settings: Settings) -> Server {
        let (tools_changed, _) = broadcast::channel(16);
        let shared = Shared {
            snapshot: RwLock::new(Arc::new(registry.clone())),
            registry: Mutex::new(registry),
            runtime_config: settings.runtime.clone(),
            settings,
            python: OnceLock::new(),
            tools_changed,
            parked: call::Parked::default(),
        };
        Server { shared: Arc::new(shared) }
    }

    fn registry(&self) -> MutexGuard<'_, Registry> {
        // A panic while holding the lock leaves the registry as valid as before it.
        self.shared.registry.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn snapshot(&self) -> Arc<Registry> {
        Arc::clone(&self.shared.snapshot.read().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }

    /// Starts Python (once); blocks, so only on a blocking thread.
    fn python(&self) -> Result<&Runtime, String> {
        let started = self.shared.python.get_or_init(|| {
            let runtime = Runtime::new(self.shared.runtime_config.clone())?;
            // Libraries loaded by a prompt provider must get the confirm bridge too.
            runtime.set_confirm_handler(|_| Confirmation::reject("a prompt provider cannot ask for confirmation"));
            Ok(runtime)
        });
        started.as_ref().map_err(|err| format!("cannot start Python: {err}"))
    }

    /// Re-reads changed files (cheap when nothing changed), drops the loaded modules
    /// of changed files, and tells every listener when the tool list changed.
    async fn rescan(&self) {
        let server = self.clone();
        let changed = tokio::task::spawn_blocking(move || {
            let mut registry = server.registry();
            let changes = match server.shared.python.get() {
                Some(Ok(python)) => python.rescan(&mut registry),
                _ => registry.rescan(),
            };
            if changes.is_empty() {
                return false;
            }
            *server.shared.snapshot.write().unwrap_or_else(|poisoned| poisoned.into_inner()) =
                Arc::new(registry.clone());
            true
        });
        if changed.await.unwrap_or(false) {
            let _ = self.shared.tools_changed.send(());
        }
    }

    /// The registry's `mcp` export, with the prompt providers' descriptions, as rmcp
    /// tools (tools whose names MCP refuses are left out, as in `lcp export`).
    async fn tools(&self) -> Vec<Tool> {
        let server = self.clone();
        let listed = tokio::task::spawn_blocking(move || {
            let mut registry = (*server.snapshot()).clone();
            if registry.tools().any(|(_, tool)| tool.prompt_provider.is_some()) {
                match server.python() {
                    Ok(python) => {
                        let options = CallOptions {
                            workspace: server.shared.settings.workspace.clone(),
                            ..CallOptions::default()
                        };
                        let descriptions = python.describe(&registry, &options);
                        for diagnostic in &descriptions.diagnostics {
                            eprintln!("{diagnostic}");
                        }
                        descriptions.apply(&mut registry);
                    }
                    Err(err) => eprintln!("lcp: descriptions are the static ones: {err}"),
                }
            }
            let (document, _) = export::export(&registry, Format::Mcp, false);
            document
        });
        let Ok(Value::Object(mut document)) = listed.await else { return Vec::new() };
        let Some(Value::Array(tools)) = document.remove("tools") else { return Vec::new() };
        tools.into_iter().filter_map(|tool| serde_json::from_value(tool).ok()).collect()
    }

    /// Sends `notifications/tools/list_changed` to a handshake session until it closes.
    fn forward_list_changes(&self, peer: Peer<RoleServer>) {
        let mut changes = self.shared.tools_changed.subscribe();
        tokio::spawn(async move {
            loop {
                match changes.recv().await {
                    Ok(()) | Err(broadcast::error::RecvError::Lagged(_)) => {
                        if peer.is_transport_closed() || peer.notify_tool_list_changed().await.is_err() {
                            return;
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
    }
}

async fn watch(server: Server) {
    let mut tick = tokio::time::interval(RESCAN_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        server.rescan().await;
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build())
            .with_server_info(Implementation::new("lcp", env!("CARGO_PKG_VERSION")))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        self.forward_list_changes(context.peer.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.rescan().await;
        Ok(ListToolsResult::with_all_items(self.tools().await))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        call::call_tool(self, request, context).await
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        Some(requested.supported_by(&self.get_info().capabilities))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let mut changes = self.shared.tools_changed.subscribe();
        let wants_tools = context.accepted().tools_list_changed == Some(true);
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                change = changes.recv() => match change {
                    Ok(()) | Err(broadcast::error::RecvError::Lagged(_)) => {
                        if wants_tools && context.sink().notify_tool_list_changed().await.is_err() {
                            return Ok(());
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return Ok(()),
                },
            }
        }
    }
}
