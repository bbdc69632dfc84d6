//! `tools/list` as text: the serialized tool list, kept for as long as what it was
//! built from stays the same, so that answering a list is a copy of bytes.
//!
//! rmcp serializes every response itself, so the handler answers a list with a
//! *stand-in*: a result whose one tool is a placeholder named with a random nonce
//! and a NUL character (no Python tool can have that name). The transports replace
//! the placeholder's text by the tools' text as they write it: [`SplicingBody`] for
//! HTTP, [`SplicingWriter`] for stdio. Nothing here knows what a tool's JSON holds:
//! the list is whatever text it was built as. With the splice off (`LCP_SLOW_PATHS`),
//! the handler answers with the tools themselves.

use std::collections::VecDeque;
use std::hash::{BuildHasher, Hasher};
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};

use http_body_util::combinators::BoxBody;
use hyper::body::{Body, Bytes, Frame, SizeHint};
use rmcp::model::{ListToolsResult, Tool};
use tokio::io::AsyncWrite;

use crate::fast_paths::FastPath;
use crate::sync;

/// The last list built, with what it was built from.
pub struct Listings {
    placeholder: Tool,
    /// The placeholder as rmcp writes it, inside the `tools` array.
    placeholder_text: Vec<u8>,
    /// The key of the last list, its text, and (with the splice off) its tools.
    current: Mutex<(Option<Key>, Bytes, Vec<Tool>)>,
    /// What each listed tool's code can do (`lcp audit`), for the same key.
    found: Mutex<Option<(Key, Found)>>,
}

/// Each listed tool's name with what its code can do.
type Found = Arc<Vec<(String, crate::policy::Found)>>;

/// What a list depends on: the registry's generation and the configuration as read
/// (compared by identity: a configuration read again is a new `Arc`).
#[derive(Clone)]
pub struct Key {
    pub generation: u64,
    pub config: Arc<crate::host::config::Config>,
    /// The profile a token's scope chose, if any.
    pub profile: Option<String>,
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        self.generation == other.generation && Arc::ptr_eq(&self.config, &other.config) && self.profile == other.profile
    }
}

impl Listings {
    pub fn new() -> Listings {
        let nonce = std::collections::hash_map::RandomState::new().build_hasher().finish();
        let name = format!("\0lcp tools/list {nonce:016x}");
        let placeholder = Tool::new(name, "", Arc::new(serde_json::Map::new()));
        let placeholder_text = serde_json::to_vec(&placeholder).expect("a tool serializes");
        Listings {
            placeholder,
            placeholder_text,
            current: Mutex::new((None, Bytes::new(), Vec::new())),
            found: Mutex::new(None),
        }
    }

    /// What the listed tools' code can do for `key`: kept from the last list built
    /// from the same key (a list with prompt providers' descriptions is built anew,
    /// but the code it lists is the same), else the one `read` gives.
    pub fn found(&self, key: &Key, read: impl FnOnce() -> Vec<(String, crate::policy::Found)>) -> Found {
        let mut kept = sync::lock(&self.found);
        match kept.as_ref() {
            Some((from, found)) if from == key => Arc::clone(found),
            _ => {
                let found = Arc::new(read());
                *kept = Some((key.clone(), Arc::clone(&found)));
                found
            }
        }
    }

    /// The stand-in result for the list built from `key` (`None`: built anew each
    /// time, as when descriptions come from prompt providers): the list kept if it
    /// was built from the same key, else the one `build` writes (the tools' JSON
    /// texts separated by commas, without brackets).
    ///
    /// With [`FastPath::Splice`] off, the answer is the list itself, as rmcp's `Tool`s
    /// read from the text built (and kept as the text is), which rmcp then serialises:
    /// nothing is spliced.
    pub fn answer(&self, key: Option<Key>, build: impl FnOnce() -> Vec<u8>) -> ListToolsResult {
        let spliced = FastPath::Splice.on();
        let mut current = sync::lock(&self.current);
        if key.is_none() || current.0 != key {
            let text = Bytes::from(build());
            let tools = if spliced { Vec::new() } else { tools_of(&text) };
            *current = (key, text, tools);
        }
        match spliced {
            true => ListToolsResult::with_all_items(vec![self.placeholder.clone()]),
            false => ListToolsResult::with_all_items(current.2.clone()),
        }
    }

    /// `text` cut around the placeholder, with the tools' text in its place; `None`
    /// when `text` holds no placeholder.
    fn splice(&self, text: &Bytes) -> Option<[Bytes; 3]> {
        let at = memchr::memmem::find(text, &self.placeholder_text)?;
        let tools = sync::lock(&self.current).1.clone();
        Some([text.slice(..at), tools, text.slice(at + self.placeholder_text.len()..)])
    }
}

/// The tools of a list's text (their JSON texts separated by commas), as rmcp's `Tool`s;
/// one that does not read as one is left out with an error on stderr.
fn tools_of(text: &[u8]) -> Vec<Tool> {
    let listed = [b"[".as_slice(), text, b"]"].concat();
    let values: Vec<serde_json::Value> = serde_json::from_slice(&listed).unwrap_or_else(|err| {
        eprintln!("lcp: tools/list: the list's text is not JSON: {err}");
        Vec::new()
    });
    values
        .into_iter()
        .filter_map(|value| {
            let name = value["name"].as_str().unwrap_or_default().to_string();
            serde_json::from_value(value)
                .map_err(|err| eprintln!("lcp: tools/list: `{name}` is not an MCP tool as rmcp reads it: {err}"))
                .ok()
        })
        .collect()
}

/// An HTTP response body with the placeholder of a list replaced (rmcp writes each
/// message, JSON or one SSE event, as one frame).
pub struct SplicingBody {
    inner: BoxBody<Bytes, std::convert::Infallible>,
    listings: Arc<Listings>,
    queued: VecDeque<Bytes>,
}

impl SplicingBody {
    pub fn new(inner: BoxBody<Bytes, std::convert::Infallible>, listings: Arc<Listings>) -> SplicingBody {
        SplicingBody { inner, listings, queued: VecDeque::new() }
    }
}

impl Body for SplicingBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::convert::Infallible>>> {
        if let Some(next) = self.queued.pop_front() {
            return Poll::Ready(Some(Ok(Frame::data(next))));
        }
        let frame = match ready!(Pin::new(&mut self.inner).poll_frame(cx)) {
            Some(Ok(frame)) => frame,
            other => return Poll::Ready(other),
        };
        let data = match frame.into_data() {
            Ok(data) => data,
            Err(frame) => return Poll::Ready(Some(Ok(frame))),
        };
        let Some(parts) = self.listings.splice(&data) else { return Poll::Ready(Some(Ok(Frame::data(data)))) };
        let [first, rest @ ..] = parts;
        self.queued.extend(rest.into_iter().filter(|part| !part.is_empty()));
        Poll::Ready(Some(Ok(Frame::data(first))))
    }

    fn is_end_stream(&self) -> bool {
        self.queued.is_empty() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        // Unknown until each frame is seen: a splice changes the length.
        SizeHint::default()
    }
}

/// The stdio writer with the placeholder of a list replaced. rmcp hands it whole
/// messages (the rest of its buffer after a short write still starts and ends on
/// message bounds), so a placeholder is never cut between two writes.
pub struct SplicingWriter<W> {
    inner: W,
    listings: Arc<Listings>,
    /// The tools' text still to write, before anything else.
    pending: Bytes,
}

impl<W> SplicingWriter<W> {
    pub fn new(inner: W, listings: Arc<Listings>) -> SplicingWriter<W> {
        SplicingWriter { inner, listings, pending: Bytes::new() }
    }
}

impl<W: AsyncWrite + Unpin> SplicingWriter<W> {
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.pending.is_empty() {
            let written = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.pending))?;
            if written == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            let _ = self.pending.split_to(written);
        }
        Poll::Ready(Ok(()))
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for SplicingWriter<W> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        ready!(this.poll_pending(cx))?;
        match memchr::memmem::find(buf, &this.listings.placeholder_text) {
            Some(0) => {
                let placeholder = Bytes::copy_from_slice(&this.listings.placeholder_text);
                this.pending = match this.listings.splice(&placeholder) {
                    Some([_, tools, _]) => tools,
                    None => Bytes::new(),
                };
                Poll::Ready(Ok(placeholder.len()))
            }
            Some(at) => Pin::new(&mut this.inner).poll_write(cx, &buf[..at]),
            None => Pin::new(&mut this.inner).poll_write(cx, buf),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::{BodyExt, Full};
    use tokio::io::AsyncWriteExt;

    use super::*;

    fn listings_with(tools: &str) -> (Arc<Listings>, Vec<u8>) {
        let listings = Arc::new(Listings::new());
        let result = listings.answer(None, || tools.as_bytes().to_vec());
        let text = serde_json::to_vec(&serde_json::json!({"id": 1, "result": result})).unwrap();
        (listings, text)
    }

    fn expected(text: &[u8], tools: &str) -> String {
        let mut value: serde_json::Value = serde_json::from_slice(text).unwrap();
        value["result"]["tools"] = serde_json::from_str(&format!("[{tools}]")).unwrap();
        serde_json::to_string(&value).unwrap()
    }

    const TOOLS: &str = r#"{"name":"a","inputSchema":{"type":"object"}},{"name":"b","inputSchema":{}}"#;

    #[test]
    fn the_stand_in_is_replaced_by_the_tools_in_an_http_body() {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        for tools in [TOOLS, ""] {
            let (listings, text) = listings_with(tools);
            let event = [b"data: ".as_slice(), &text, b"\n\n"].concat();
            let body = Full::new(Bytes::from(event)).boxed();
            let collected = runtime.block_on(SplicingBody::new(body, listings).collect()).unwrap().to_bytes();
            let written = String::from_utf8(collected.to_vec()).unwrap();
            assert_eq!(written, format!("data: {}\n\n", expected(&text, tools)));
        }
    }

    #[test]
    fn a_body_without_a_stand_in_is_passed_through() {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let (listings, _) = listings_with(TOOLS);
        let body = Full::new(Bytes::from_static(b"{\"id\":2,\"result\":{}}")).boxed();
        let collected = runtime.block_on(SplicingBody::new(body, listings).collect()).unwrap().to_bytes();
        assert_eq!(&collected[..], b"{\"id\":2,\"result\":{}}");
    }

    #[test]
    fn the_stand_in_is_replaced_by_the_tools_on_the_stdio_writer_even_through_short_writes() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let (listings, text) = listings_with(TOOLS);
        let mut message = text.clone();
        message.push(b'\n');
        // A pipe of 64 bytes: every write is short, as on a full pipe.
        let written = runtime.block_on(async {
            let (writer, mut reader) = tokio::io::duplex(64);
            let reading = tokio::spawn(async move {
                let mut all = Vec::new();
                tokio::io::AsyncReadExt::read_to_end(&mut reader, &mut all).await.unwrap();
                all
            });
            let mut splicing = SplicingWriter::new(writer, listings);
            splicing.write_all(&message).await.unwrap();
            splicing.write_all(&message).await.unwrap();
            splicing.shutdown().await.unwrap();
            drop(splicing);
            reading.await.unwrap()
        });
        let line = format!("{}\n", expected(&text, TOOLS));
        assert_eq!(String::from_utf8(written).unwrap(), line.repeat(2));
    }
}
