//! A tool's result as MCP content (SPEC §10, §12): the text for the model, the
//! `structuredContent`, and the images, audio and embedded resources a result dict
//! carries, after the text.
//!
//! A string is its own text; any other value is its JSON text, and the structured
//! content is the value (an object as it is, anything else under `result`). The
//! `images`, `audio` and `resources` of a dict become content blocks and are left out
//! of the text (and of the structured content when no output schema asks for them).
//! Must never: drop what a tool returned without saying so (a cut text says how much
//! was left out), or pass off a cut value as structured content.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::{Value, json};

use crate::runtime::{Outcome, ToolResult};

/// The keys of a result dict that carry content for the model (SPEC §10).
use crate::runtime::CONTENT_KEYS;

/// What a tool's output schema asks of its results' `structuredContent` (SPEC §12).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    /// No output schema: an object as it is, anything else under `result`.
    Free,
    /// An object type: the object as it is.
    Object,
    /// Any other type: every value under `result`, objects included.
    Wrapped,
}

/// Images or audio.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Media {
    Image,
    Audio,
}

/// The tool's result as MCP. A failure is `isError: true` with the error and its
/// traceback as text (a tool-reported failure keeps its output as text), and no
/// `structuredContent`. What the tool
/// printed follows as more text. Each text longer than `max_output` bytes is cut with
/// a marker; cut output carries no `structuredContent`, so for a tool with an output
/// schema it is an error result (a success must carry the structured content its
/// schema describes).
pub(super) fn tool_result(result: ToolResult, max_output: usize, shape: Shape) -> CallToolResult {
    // Another server's result goes on as it sent it (SPEC §14).
    if let Outcome::Relayed { .. } = result.outcome
        && let Ok(mut relayed) = <CallToolResult as serde::Deserialize>::deserialize(&result.output)
    {
        // Complete whatever the server's own protocol version said (it may not say);
        // rmcp leaves the field out again for clients of older versions.
        relayed.result_type = Some(rmcp::model::ResultType::COMPLETE);
        return relayed;
    }
    let ok = result.ok();
    let ToolResult { outcome: _, output, error, traceback, stdout, stderr, output_cut_from, refused } = result;
    let mut blocks = Vec::new();
    let mut wrapped = false;
    let (text, structured) = match (output, error) {
        (Value::Null, Some(error)) if !ok => {
            let text = match &traceback {
                Some(traceback) if !traceback.is_empty() => format!("{error}\n\n{traceback}"),
                _ => error.clone(),
            };
            (Some(text), Value::Null)
        }
        (output, _) => {
            let (shown, carried) = split_content(output, shape, &mut blocks);
            let text = match &shown {
                None => None,
                Some(Value::String(text)) => Some(text.clone()),
                Some(value) => {
                    Some(serde_json::to_string(value).unwrap_or_else(|err| format!("the output is not JSON: {err}")))
                }
            };
            let structured = match carried {
                Value::Object(object) if !(shape == Shape::Wrapped && ok) => Value::Object(object),
                other => {
                    wrapped = shape == Shape::Wrapped;
                    json!({ "result": other })
                }
            };
            (text, structured)
        }
    };
    let (text, structured) = match (text, output_cut_from) {
        // Cut where it was made: the text is its start, and the marker says of how much.
        (Some(text), Some(total)) => (Some(marked(&text, total)), None),
        (Some(text), None) => match cut(&text, max_output) {
            Some(cut) => (Some(cut), None),
            None => (Some(text), Some(structured)),
        },
        (None, _) => (None, Some(structured)),
    };
    let mut content: Vec<ContentBlock> = text.map(ContentBlock::text).into_iter().collect();
    let ok = if ok && structured.is_none() && shape != Shape::Free {
        content.push(ContentBlock::text(
            "[the result was cut, so it cannot be given as the structured content the tool's output schema describes]",
        ));
        false
    } else {
        ok
    };
    content.extend(blocks);
    for (stream, printed) in [("stdout", stdout), ("stderr", stderr)] {
        if !printed.is_empty() {
            let printed = cut(&printed, max_output).unwrap_or(printed);
            content.push(ContentBlock::text(format!("[the tool printed to {stream}]\n{printed}")));
        }
    }
    if !refused.is_empty() {
        // A subprocess's bare `Permission denied` explained (SPEC §18).
        content.push(ContentBlock::text(format!("[the sandbox refused]\n{}", refused.join("\n"))));
    }
    let mut result = if ok { CallToolResult::success(content) } else { CallToolResult::error(content) };
    // An error result carries no structured content (SPEC §5): a client checks
    // structured content against the output schema, which an error never matches.
    result.structured_content = structured.filter(|_| ok);
    if wrapped && result.structured_content.is_some() {
        result.meta = Some(rmcp::model::MetaObject(wrap_marker()));
    }
    result
}

/// The `_meta` of a result whose value its output schema wraps as `{"result": value}`
/// (a type that is not an object's, SPEC §12): FastMCP's
/// marker (`fastmcp.wrap_result`, and the `x-fastmcp-wrap-result` its earlier clients
/// read), so its clients show the value rather than the wrapping.
fn wrap_marker() -> serde_json::Map<String, Value> {
    let mut meta = serde_json::Map::new();
    meta.insert("fastmcp".to_string(), json!({ "wrap_result": true }));
    meta.insert("x-fastmcp-wrap-result".to_string(), Value::Bool(true));
    meta
}

/// Takes a dict's content keys out as blocks: returns what the text shows (`None`
/// when nothing but content is left) and what the structured content carries.
fn split_content(output: Value, shape: Shape, blocks: &mut Vec<ContentBlock>) -> (Option<Value>, Value) {
    let Value::Object(mut fields) = output else { return (Some(output.clone()), output) };
    if !CONTENT_KEYS.iter().any(|key| fields.get(*key).is_some_and(Value::is_array)) {
        let output = Value::Object(fields);
        return (Some(output.clone()), output);
    }
    let full = Value::Object(fields.clone());
    for key in CONTENT_KEYS {
        let Some(Value::Array(items)) = fields.get(key) else { continue };
        for item in items {
            if let Some(block) = block(key, item) {
                blocks.push(block);
            }
        }
        fields.remove(key);
    }
    let shown = (!fields.is_empty()).then(|| Value::Object(fields.clone()));
    // An output schema may name the content keys: its structured content keeps them.
    let carried = if shape == Shape::Free { Value::Object(fields) } else { full };
    (shown, carried)
}

/// One item of `images`, `audio` or `resources` as a content block; an item that is
/// none of their shapes is left out.
pub(super) fn block(key: &str, item: &Value) -> Option<ContentBlock> {
    let media = match key {
        "images" => Media::Image,
        "audio" => Media::Audio,
        _ => {
            let resource: ResourceContents = serde_json::from_value(item.clone()).ok()?;
            return Some(ContentBlock::resource(resource));
        }
    };
    let (data, mime) = match item {
        Value::String(text) => media_owned(text, media),
        Value::Object(fields) => {
            let data = fields.get("data").and_then(Value::as_str)?;
            let (data, sniffed) = media_owned(data, media);
            let mime = fields.get("mimeType").or(fields.get("mime_type")).and_then(Value::as_str);
            (data, mime.map_or(sniffed, str::to_string))
        }
        _ => return None,
    };
    Some(match media {
        Media::Image => ContentBlock::image(data, mime),
        Media::Audio => ContentBlock::audio(data, mime),
    })
}

fn media_owned(text: &str, kind: Media) -> (String, String) {
    let (data, mime) = media(text, kind);
    (data.to_string(), mime)
}

/// The base64 data and MIME type of an image or audio given as base64 or as a
/// `data:<mime>;base64,` URI: the URI's type, else recognised from the bytes.
pub(super) fn media(text: &str, media: Media) -> (&str, String) {
    if let Some(rest) = text.strip_prefix("data:")
        && let Some((header, data)) = rest.split_once(',')
    {
        let mime = header.split(';').next().unwrap_or_default();
        if !mime.is_empty() {
            return (data, mime.to_string());
        }
        return (data, sniff(data, media));
    }
    (text, sniff(text, media))
}

/// The MIME type recognised from the first bytes of base64 data.
fn sniff(data: &str, media: Media) -> String {
    // 64 characters of base64 are 48 bytes: enough for every signature below.
    let head: String = data.chars().filter(|c| !c.is_whitespace()).take(64).collect();
    let bytes = decode_base64(&head);
    let starts = |signature: &[u8]| bytes.starts_with(signature);
    let riff = |kind: &[u8]| bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == kind;
    let known = if starts(b"\x89PNG\r\n\x1a\n") {
        "image/png"
    } else if starts(b"\xff\xd8\xff") {
        "image/jpeg"
    } else if starts(b"GIF87a") || starts(b"GIF89a") {
        "image/gif"
    } else if riff(b"WEBP") {
        "image/webp"
    } else if starts(b"BM") && media == Media::Image {
        "image/bmp"
    } else if starts(b"<svg") || starts(b"<?xml") && media == Media::Image {
        "image/svg+xml"
    } else if riff(b"WAVE") {
        "audio/wav"
    } else if starts(b"ID3") || starts(b"\xff\xfb") || starts(b"\xff\xf3") || starts(b"\xff\xf2") {
        "audio/mpeg"
    } else if starts(b"OggS") {
        "audio/ogg"
    } else if starts(b"fLaC") {
        "audio/flac"
    } else if bytes.len() >= 8 && &bytes[4..8] == b"ftyp" {
        if media == Media::Audio { "audio/mp4" } else { "video/mp4" }
    } else {
        "application/octet-stream"
    };
    known.to_string()
}

/// The bytes of base64 text, as far as it is valid (only a head is ever decoded).
fn decode_base64(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' | b'-' => Some(62),
        b'/' | b'_' => Some(63),
        _ => None,
    };
    let (mut bytes, mut bits, mut count) = (Vec::new(), 0u32, 0);
    for sextet in text.bytes().map_while(value) {
        bits = bits << 6 | u32::from(sextet);
        count += 6;
        if count >= 8 {
            count -= 8;
            bytes.push((bits >> count) as u8);
            bits &= (1 << count) - 1;
        }
    }
    bytes
}

/// `text` cut to at most `max` bytes (on a character boundary) plus a marker, or
/// `None` when it fits.
pub(super) fn cut(text: &str, max: usize) -> Option<String> {
    if text.len() <= max {
        return None;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Some(marked(&text[..end], text.len()))
}

/// The start of a text of `total` bytes, with the marker that says it was cut.
fn marked(start: &str, total: usize) -> String {
    format!("{start}\n[output cut: {} of {total} bytes shown; `lcp serve --max-output` sets the limit]", start.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::Outcome;

    fn check(result: ToolResult, max: usize, expected: Value) {
        assert_eq!(serde_json::to_value(tool_result(result, max, Shape::Free)).unwrap(), expected);
    }

    fn ok(output: Value) -> ToolResult {
        ToolResult {
            outcome: Outcome::Returned,
            output,
            error: None,
            traceback: None,
            stdout: String::new(),
            stderr: String::new(),
            output_cut_from: None,
            refused: Vec::new(),
        }
    }

    #[test]
    fn results() {
        check(
            ok(json!({"a": 1})),
            100,
            json!({"resultType": "complete", "content": [{"type": "text", "text": "{\"a\":1}"}], "structuredContent": {"a": 1}, "isError": false}),
        );
        check(
            ok(json!([1, 2])),
            100,
            json!({"resultType": "complete", "content": [{"type": "text", "text": "[1,2]"}], "structuredContent": {"result": [1, 2]}, "isError": false}),
        );
        check(
            ToolResult {
                outcome: Outcome::Reported,
                error: Some("no".into()),
                ..ok(json!({"success": false, "error": "no"}))
            },
            100,
            json!({"resultType": "complete", "content": [{"type": "text", "text": "{\"success\":false,\"error\":\"no\"}"}], "isError": true}),
        );
        check(
            ToolResult { traceback: Some("Traceback ...".into()), ..ToolResult::failure("ValueError: x") },
            100,
            json!({"resultType": "complete", "content": [{"type": "text", "text": "ValueError: x\n\nTraceback ..."}], "isError": true}),
        );
        check(
            ToolResult { stdout: "hello\n".into(), ..ok(json!(1)) },
            100,
            json!({"resultType": "complete", "content": [{"type": "text", "text": "1"}, {"type": "text", "text": "[the tool printed to stdout]\nhello\n"}], "structuredContent": {"result": 1}, "isError": false}),
        );
    }

    #[test]
    fn a_string_is_its_own_text() {
        check(
            ok(json!("ok \"quoted\"")),
            100,
            json!({"resultType": "complete", "content": [{"type": "text", "text": "ok \"quoted\""}], "structuredContent": {"result": "ok \"quoted\""}, "isError": false}),
        );
    }

    const PNG: &str =
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

    #[test]
    fn images_audio_and_resources_become_blocks_after_the_text() {
        let output = json!({
            "caption": "a pixel",
            "images": [PNG, "data:image/gif;base64,R0lGODlhAQABAAAAACw="],
            "audio": ["UklGRiQAAABXQVZFZm10IBAAAAABAAEA"],
            "resources": [{"uri": "test://r", "mimeType": "application/json", "text": "{}"}, {"uri": "test://b", "blob": "AAAA"}],
        });
        let result = serde_json::to_value(tool_result(ok(output), 10_000, Shape::Free)).unwrap();
        assert_eq!(
            result["content"],
            json!([
                {"type": "text", "text": "{\"caption\":\"a pixel\"}"},
                {"type": "image", "data": PNG, "mimeType": "image/png"},
                {"type": "image", "data": "R0lGODlhAQABAAAAACw=", "mimeType": "image/gif"},
                {"type": "audio", "data": "UklGRiQAAABXQVZFZm10IBAAAAABAAEA", "mimeType": "audio/wav"},
                {"type": "resource", "resource": {"uri": "test://r", "mimeType": "application/json", "text": "{}"}},
                {"type": "resource", "resource": {"uri": "test://b", "blob": "AAAA"}},
            ])
        );
        assert_eq!(result["structuredContent"], json!({"caption": "a pixel"}));
        let only = serde_json::to_value(tool_result(ok(json!({"images": [PNG]})), 10_000, Shape::Free)).unwrap();
        assert_eq!(only["content"], json!([{"type": "image", "data": PNG, "mimeType": "image/png"}]));
        let typed = serde_json::to_value(tool_result(ok(json!({"images": [PNG]})), 10_000, Shape::Object)).unwrap();
        assert_eq!(typed["structuredContent"], json!({"images": [PNG]}), "an output schema keeps its fields");
    }

    #[test]
    fn base64_heads_decode() {
        assert_eq!(decode_base64("aGVsbG8="), b"hello");
        assert_eq!(decode_base64("aGVsbG8gd29ybGQ"), b"hello world");
    }

    #[test]
    fn mime_types_come_from_the_uri_or_the_bytes() {
        assert_eq!(media("data:image/webp;base64,AAAA", Media::Image), ("AAAA", "image/webp".to_string()));
        assert_eq!(media("/9j/4AAQSkZJRg==", Media::Image).1, "image/jpeg");
        assert_eq!(media("SUQzBAAAAAAA", Media::Audio).1, "audio/mpeg");
        assert_eq!(media("T2dnUwACAAAA", Media::Audio).1, "audio/ogg");
        assert_eq!(media("not base64 at all", Media::Image).1, "application/octet-stream");
    }

    #[test]
    fn an_output_schema_that_is_not_an_object_type_puts_every_value_under_result() {
        let wrapped = serde_json::to_value(tool_result(ok(json!({"a": 1})), 100, Shape::Wrapped)).unwrap();
        assert_eq!(wrapped["structuredContent"], json!({"result": {"a": 1}}));
        let object = serde_json::to_value(tool_result(ok(json!({"a": 1})), 100, Shape::Object)).unwrap();
        assert_eq!(object["structuredContent"], json!({"a": 1}));
        assert!(object.get("_meta").is_none(), "{object}");
        let failed = ToolResult {
            outcome: Outcome::Reported,
            error: Some("no".into()),
            ..ok(json!({"success": false, "error": "no"}))
        };
        let failed = serde_json::to_value(tool_result(failed, 100, Shape::Wrapped)).unwrap();
        assert!(failed.get("structuredContent").is_none(), "an error result carries none: {failed}");
    }

    #[test]
    fn a_wrapped_result_is_marked_as_fastmcp_marks_it() {
        let marker = json!({"fastmcp": {"wrap_result": true}, "x-fastmcp-wrap-result": true});
        let scalar = serde_json::to_value(tool_result(ok(json!([1, 2])), 100, Shape::Wrapped)).unwrap();
        assert_eq!(scalar["structuredContent"], json!({"result": [1, 2]}));
        assert_eq!(scalar["_meta"], marker, "{scalar}");
        let wrapped_object = serde_json::to_value(tool_result(ok(json!({"a": 1})), 100, Shape::Wrapped)).unwrap();
        assert_eq!(wrapped_object["_meta"], marker);
        // Without an output schema nothing says the value is wrapped.
        let free = serde_json::to_value(tool_result(ok(json!([1, 2])), 100, Shape::Free)).unwrap();
        assert!(free.get("_meta").is_none(), "{free}");
    }

    #[test]
    fn a_cut_result_of_a_tool_with_an_output_schema_is_an_error() {
        let free = serde_json::to_value(tool_result(ok(json!("x".repeat(50))), 10, Shape::Free)).unwrap();
        assert_eq!(free["isError"], false);
        let typed = serde_json::to_value(tool_result(ok(json!("x".repeat(50))), 10, Shape::Wrapped)).unwrap();
        assert_eq!(typed["isError"], true);
        assert!(typed.get("structuredContent").is_none());
        assert!(typed["content"][1]["text"].as_str().unwrap().contains("output schema"), "{typed}");
    }

    #[test]
    fn long_output_is_cut_on_a_character_boundary_with_a_marker() {
        assert_eq!(cut("abc", 3), None);
        assert_eq!(
            cut("aé", 2).unwrap(),
            "a\n[output cut: 1 of 3 bytes shown; `lcp serve --max-output` sets the limit]"
        );
        let result = serde_json::to_value(tool_result(ok(json!("x".repeat(50))), 10, Shape::Free)).unwrap();
        assert!(result.get("structuredContent").is_none());
        assert!(result["content"][0]["text"].as_str().unwrap().starts_with("xxxxxxxxxx\n[output cut: 10 of 50 bytes"));
    }
}
