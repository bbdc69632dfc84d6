//! Which of lcp's requests a Streamable HTTP server's notification belongs to: the
//! stream it arrived on (SPEC §17: what a server tells reaches the call it belongs to).
//!
//! rmcp's client marks each request a server sends with the stream it came on
//! (`InboundStreamOrigin`), not its notifications. [`Attributed`] is rmcp's reqwest
//! client with the same mark on every notification: its `_meta` gets
//! [`STREAM_KEY`], the id of the request whose response stream carried it, or `null`
//! on the server's own stream (or a resumed one, whose request is not known here).
//! What the server put under that key itself is replaced.
//!
//! Owns only that mark. Must never: change anything else of a message, or buffer a
//! stream (each event passes as it arrives).

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, NotificationMetaObject, RequestId};
use rmcp::service::{NotificationContext, RoleClient};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use serde_json::Value;
use sse_stream::Sse;

/// The `_meta` key of a notification naming the request whose stream carried it.
pub(super) const STREAM_KEY: &str = "dev.lcp/stream";

/// Where a notification came from, as [`Attributed`] marked it.
#[derive(Debug, PartialEq)]
pub(super) enum Stream {
    /// The response stream of this request of lcp's.
    Request(RequestId),
    /// A stream of no request of lcp's that is known.
    Unassociated,
    /// Not marked: a transport with one stream (stdio).
    Unmarked,
}

impl Stream {
    /// The stream a notification came on, by the mark in its `_meta`. (rmcp 3.11
    /// hands a notification's `_meta` over with its extensions, leaving the context's
    /// `meta` empty: both are read.)
    pub(super) fn of_notification(context: &NotificationContext<RoleClient>) -> Stream {
        let kept = context.extensions.get::<NotificationMetaObject>();
        match kept.filter(|meta| meta.contains_key(STREAM_KEY)) {
            Some(meta) => Stream::of(meta),
            None => Stream::of(&context.meta),
        }
    }

    /// The stream named by a notification's `_meta`.
    fn of(meta: &serde_json::Map<String, Value>) -> Stream {
        match meta.get(STREAM_KEY) {
            None => Stream::Unmarked,
            Some(id) => serde_json::from_value(id.clone()).map_or(Stream::Unassociated, Stream::Request),
        }
    }
}

/// rmcp's reqwest client, each notification marked with its stream.
#[derive(Clone)]
pub(super) struct Attributed(pub(super) reqwest::Client);

type Events = BoxStream<'static, Result<Sse, SseError>>;

/// Every post and every stream goes through the two methods rmcp's transport calls
/// (`post_message_with_response_limits`, `get_stream_with_max_sse_event_size`), the
/// others with rmcp's default limits, so each is marked in one place.
impl StreamableHttpClient for Attributed {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let limits = StreamableHttpResponseLimits::default();
        self.post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits).await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits).await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        // A request's response stream is its own.
        let origin = match &message {
            JsonRpcMessage::Request(request) => Some(request.id.clone()),
            _ => None,
        };
        let response = self
            .0
            .post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits)
            .await?;
        Ok(match response {
            StreamableHttpPostResponse::Sse(events, session) => {
                StreamableHttpPostResponse::Sse(marked(events, origin), session)
            }
            other => other,
        })
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.0.delete_session(uri, session_id, auth_header, custom_headers).await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<Events, StreamableHttpError<Self::Error>> {
        let limit = StreamableHttpResponseLimits::default().max_sse_event_size;
        self.get_stream_with_max_sse_event_size(uri, session_id, last_event_id, auth_header, custom_headers, limit)
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<Events, StreamableHttpError<Self::Error>> {
        let events = self
            .0
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await?;
        // The server's own stream, or a resumed one: no request of lcp's is known.
        Ok(marked(events, None))
    }
}

fn marked(events: Events, origin: Option<RequestId>) -> Events {
    let origin = serde_json::to_value(&origin).unwrap_or(Value::Null);
    events.map(move |event| event.map(|sse| mark(sse, &origin))).boxed()
}

/// `sse` with [`STREAM_KEY`] set to `origin` in its `_meta` when it is a notification.
fn mark(mut sse: Sse, origin: &Value) -> Sse {
    let Some(data) = sse.data.as_deref() else { return sse };
    // Only notifications: a response or a request (marked by rmcp) passes untouched.
    if !data.contains("\"method\"") {
        return sse;
    }
    let Ok(Value::Object(mut message)) = serde_json::from_str::<Value>(data) else { return sse };
    if message.contains_key("id") || !message.contains_key("method") {
        return sse;
    }
    let params = message.entry("params").or_insert_with(|| Value::Object(Default::default()));
    let Value::Object(params) = params else { return sse };
    let meta = params.entry("_meta").or_insert_with(|| Value::Object(Default::default()));
    let Value::Object(meta) = meta else { return sse };
    meta.insert(STREAM_KEY.to_string(), origin.clone());
    sse.data = serde_json::to_string(&message).ok().or(sse.data);
    sse
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(data: &str) -> Sse {
        Sse { event: None, data: Some(data.to_string()), id: Some("7".to_string()), retry: None }
    }

    fn meta_of(sse: &Sse) -> serde_json::Map<String, Value> {
        let message: Value = serde_json::from_str(sse.data.as_deref().unwrap()).unwrap();
        message["params"]["_meta"].as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_notification_is_marked_with_its_stream_and_nothing_else_is_changed() {
        let log = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}"#;
        let marked = mark(event(log), &serde_json::json!(4));
        assert_eq!(Stream::of(&meta_of(&marked)), Stream::Request(RequestId::Number(4)));
        assert_eq!(marked.id.as_deref(), Some("7"), "the event id is kept");
        let message: Value = serde_json::from_str(marked.data.as_deref().unwrap()).unwrap();
        assert_eq!(message["params"]["data"], "x");

        let on_its_own = mark(event(log), &Value::Null);
        assert_eq!(Stream::of(&meta_of(&on_its_own)), Stream::Unassociated);

        // A server's own mark is replaced by where the message came from.
        let forged = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"_meta":{"dev.lcp/stream":9}}}"#;
        assert_eq!(Stream::of(&meta_of(&mark(event(forged), &Value::Null))), Stream::Unassociated);

        for untouched in [
            r#"{"jsonrpc":"2.0","id":3,"result":{"method":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"elicitation/create","params":{}}"#,
            "not json \"method\"",
        ] {
            assert_eq!(mark(event(untouched), &serde_json::json!(1)).data.as_deref(), Some(untouched));
        }
        assert_eq!(Stream::of(&serde_json::Map::new()), Stream::Unmarked);
    }
}
