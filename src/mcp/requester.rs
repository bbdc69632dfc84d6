//! The client a call answers to (`Requester`), as its request reached lcp: how to
//! reach it (rmcp's peer of the request), what it can be asked, its progress token and log level, and
//! what fires when it cancels the request. `call.rs` decides what to tell and ask;
//! this module only carries it.
//!
//! Must never: send a log record below the call's level, or decide what to ask
//! (`call.rs` does, `host.rs` translates).

#[allow(deprecated)] // MCP's logging (SEP-2577) is deprecated but still what clients read.
use rmcp::model::LoggingMessageNotification;
use rmcp::model::{
    ClientCapabilities, ProgressNotification, ProgressToken, ProtocolVersion, ServerNotification, ServerRequest,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::Server;
use super::host::{self, Able};
use crate::runtime::host_objects::{Notice, level};

/// Where a call's notices go: its progress token and log level, and how many
/// progress reports came so far.
pub(super) struct Reporter {
    pub(super) token: Option<ProgressToken>,
    /// Records below this Python level are not sent.
    pub(super) level: u32,
    pub(super) reports: u64,
}

impl Reporter {
    #[allow(deprecated)] // MCP's logging (SEP-2577) is deprecated but still what clients read.
    pub(super) async fn tell(&mut self, to: &Channel, notice: Notice) {
        let notification = match notice {
            Notice::Progress(progress) => match &self.token {
                Some(token) => {
                    let params = host::progress_notification(token, &progress, self.reports);
                    self.reports += 1;
                    ProgressNotification::new(params).into()
                }
                None if self.level <= level::INFO => {
                    LoggingMessageNotification::new(host::progress_message(&progress)).into()
                }
                None => return,
            },
            Notice::Log(record) if record.level >= self.level => {
                LoggingMessageNotification::new(host::log_message(&record)).into()
            }
            Notice::Log(_) => return,
            // Only a call that may become a task hears it, and `drive` takes it.
            Notice::BecomeTask(_) => return,
        };
        to.notify(notification).await;
    }
}

/// The client a call answers to, as its request reached lcp: how to reach it, what it
/// can be asked, and what fires when it cancels the request.
pub(super) struct Requester {
    pub(super) to: Channel,
    pub(super) ct: CancellationToken,
    /// The request is on the handshake-less protocol (2026-07-28 and later), which
    /// forbids server→client requests.
    pub(super) handshake_less: bool,
    pub(super) able: Able,
    pub(super) progress: Option<ProgressToken>,
    /// Records below this Python level are neither made nor sent.
    pub(super) level: u32,
}

impl Requester {
    /// The client of a request rmcp routed.
    pub(super) fn of(server: &Server, context: &RequestContext<RoleServer>) -> Requester {
        Requester {
            to: Channel(context.peer.clone()),
            ct: context.ct.clone(),
            handshake_less: handshake_less(context),
            able: able(server, context.client_capabilities().as_ref()),
            progress: context.meta.get_progress_token(),
            level: server.log_level(context),
        }
    }
}

/// How what a call tells and asks reaches its client: rmcp's peer of the request.
pub(super) struct Channel(pub(super) Peer<RoleServer>);

impl Channel {
    pub(super) async fn notify(&self, notification: ServerNotification) {
        // A client that went away hears nothing more; the call goes on to its end.
        let _ = self.0.send_notification(notification).await;
    }

    /// The client's answer to `request` (the response's `result`), or why there is none.
    pub(super) async fn ask(&self, request: ServerRequest) -> Result<Value, String> {
        match self.0.send_request(request).await {
            Ok(result) => {
                serde_json::to_value(&result).map_err(|err| format!("the client's answer is unreadable: {err}"))
            }
            Err(err) => Err(format!("the client could not answer: {err}")),
        }
    }
}

/// What a client that declared `capabilities` can be asked.
pub(super) fn able(server: &Server, capabilities: Option<&ClientCapabilities>) -> Able {
    let elicit = capabilities
        .and_then(|capabilities| capabilities.elicitation.as_ref())
        .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none());
    let sample = capabilities.is_some_and(|capabilities| capabilities.sampling.is_some());
    let roots = capabilities.is_some_and(|capabilities| capabilities.roots.is_some());
    Able { elicit, sample, roots, yes: server.shared.settings.yes }
}

/// The handshake-less protocol (2026-07-28 and later) forbids server→client requests.
fn handshake_less(context: &RequestContext<RoleServer>) -> bool {
    context.protocol_version().is_some_and(|version| version.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}
