//! The `requestState` of an `InputRequiredResult` (SPEC §16): what a call parked on
//! a question is found by when the client answers, signed by lcp.
//!
//! Owns the key (`[mcp] state_key`, `$LCP_STATE_KEY`, else one made at start), the
//! state's text (`<base64url payload>.<base64url HMAC-SHA256>`) and its check: a state
//! whose signature does not match (tampered, or signed with another key) or whose time
//! is up is refused before any of it is read. A state names its caller and its call
//! (tool and arguments) only by digests ([`digest`], [`canonical`]). Must never: trust a field of a state
//! whose signature it has not checked, or compare signatures in variable time.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{KeyInit, Mac};
use serde_json::{Value, json};

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// The environment variable that holds the key when the config gives none.
pub const KEY_VARIABLE: &str = "LCP_STATE_KEY";

/// What signs and checks request states.
#[derive(Clone)]
pub(super) struct StateKey(Vec<u8>);

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateKey(..)")
    }
}

/// Why a state is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Refused {
    /// Not lcp's text, changed since it was signed, or signed with another key.
    Forged,
    /// Its time is up.
    Expired,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Refused::Forged => {
                "requestState failed its integrity check (changed, or not made by this server): make the request again"
            }
            Refused::Expired => "requestState has expired: make the request again",
        })
    }
}

impl StateKey {
    /// The key of `configured` (`[mcp] state_key`), else of `$LCP_STATE_KEY`, else 32
    /// random bytes (states then hold for this process only). A key shorter than 16
    /// bytes is refused: it could be guessed.
    pub(super) fn new(configured: Option<&str>) -> Result<StateKey, String> {
        let given = configured.map(str::to_string).or_else(|| std::env::var(KEY_VARIABLE).ok());
        match given {
            Some(key) if key.len() < 16 => Err(format!(
                "the requestState key ([mcp] state_key or ${KEY_VARIABLE}) has {} bytes; it needs at least 16",
                key.len()
            )),
            Some(key) => Ok(StateKey(key.into_bytes())),
            None => random_bytes().map(StateKey).ok_or_else(|| "the system has no randomness to offer".to_string()),
        }
    }

    /// `payload`, with the time it expires at, signed.
    pub(super) fn sign(&self, mut payload: Value, lasts: Duration) -> String {
        payload["exp"] = json!(now_seconds() + lasts.as_secs());
        let text = URL_SAFE_NO_PAD.encode(payload.to_string());
        let mac = URL_SAFE_NO_PAD.encode(self.mac(text.as_bytes()));
        format!("{text}.{mac}")
    }

    /// The payload of a state this key signed, whose time is not up.
    pub(super) fn open(&self, state: &str) -> Result<Value, Refused> {
        let (text, mac) = state.split_once('.').ok_or(Refused::Forged)?;
        let mac = URL_SAFE_NO_PAD.decode(mac).map_err(|_| Refused::Forged)?;
        let mut check = HmacSha256::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        check.update(text.as_bytes());
        check.verify_slice(&mac).map_err(|_| Refused::Forged)?;
        let payload = URL_SAFE_NO_PAD.decode(text).map_err(|_| Refused::Forged)?;
        let payload: Value = serde_json::from_slice(&payload).map_err(|_| Refused::Forged)?;
        match payload["exp"].as_u64() {
            Some(expires) if expires >= now_seconds() => Ok(payload),
            Some(_) => Err(Refused::Expired),
            None => Err(Refused::Forged),
        }
    }

    fn mac(&self, text: &[u8]) -> Vec<u8> {
        let mut mac = HmacSha256::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        mac.update(text);
        mac.finalize().into_bytes().to_vec()
    }
}

/// The SHA-256 of `parts` (each length-prefixed, so no two lists run together), as
/// base64url: what a state carries of its caller and of its call, never the text itself.
pub(super) fn digest(parts: &[&str]) -> String {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part.as_bytes());
    }
    URL_SAFE_NO_PAD.encode(hasher.finalize())
}

/// `value` as JSON text with every object's keys sorted: the same arguments give the
/// same text in whatever order a client wrote them.
pub(super) fn canonical(value: &Value) -> String {
    fn write(value: &Value, out: &mut String) {
        match value {
            Value::Object(object) => {
                let mut keys: Vec<&String> = object.keys().collect();
                keys.sort();
                out.push('{');
                for (index, key) in keys.into_iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(key.clone()).to_string());
                    out.push(':');
                    write(&object[key], out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (index, item) in items.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    write(item, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(value, &mut out);
    out
}

fn now_seconds() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs())
}

/// 32 random bytes from the kernel.
pub(super) fn random_bytes() -> Option<Vec<u8>> {
    let mut bytes = vec![0u8; 32];
    let mut filled = 0;
    while filled < bytes.len() {
        // SAFETY: writes at most the remaining length into the buffer.
        let n = unsafe { libc::getrandom(bytes[filled..].as_mut_ptr().cast(), bytes.len() - filled, 0) };
        match usize::try_from(n) {
            Ok(n) => filled += n,
            Err(_) if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(text: &str) -> StateKey {
        StateKey::new(Some(text)).unwrap()
    }

    #[test]
    fn a_signed_state_opens_and_a_changed_or_foreign_one_does_not() {
        let ours = key("a key of sixteen bytes or more");
        let state = ours.sign(json!({"call": "c1", "tool": "tool_x"}), Duration::from_secs(60));
        let payload = ours.open(&state).unwrap();
        assert_eq!((payload["call"].as_str(), payload["tool"].as_str()), (Some("c1"), Some("tool_x")));

        let (text, mac) = state.split_once('.').unwrap();
        let forged_payload =
            URL_SAFE_NO_PAD.encode(json!({"call": "c2", "tool": "tool_x", "exp": u64::MAX}).to_string());
        assert_eq!(ours.open(&format!("{forged_payload}.{mac}")), Err(Refused::Forged));
        let mut flipped = text.to_string().into_bytes();
        flipped[3] ^= 1;
        assert_eq!(ours.open(&format!("{}.{mac}", String::from_utf8(flipped).unwrap())), Err(Refused::Forged));
        assert_eq!(ours.open(&format!("{state}x")), Err(Refused::Forged));
        assert_eq!(ours.open("lcp-1-0123"), Err(Refused::Forged));
        assert_eq!(key("another key of sixteen bytes").open(&state), Err(Refused::Forged));

        // Signed with a time already past.
        let mut stale = json!({"call": "c1"});
        stale["exp"] = json!(1);
        let text = URL_SAFE_NO_PAD.encode(stale.to_string());
        let mac = URL_SAFE_NO_PAD.encode(ours.mac(text.as_bytes()));
        assert_eq!(ours.open(&format!("{text}.{mac}")), Err(Refused::Expired));
        assert!(StateKey::new(Some("short")).unwrap_err().contains("at least 16"));
    }

    #[test]
    fn the_digest_of_arguments_ignores_key_order_and_not_values() {
        let one: Value = serde_json::from_str(r#"{"b": [1, {"y": 2, "x": 1}], "a": "t"}"#).unwrap();
        let two: Value = serde_json::from_str(r#"{"a": "t", "b": [1, {"x": 1, "y": 2}]}"#).unwrap();
        assert_eq!(canonical(&one), canonical(&two));
        assert_eq!(canonical(&one), r#"{"a":"t","b":[1,{"x":1,"y":2}]}"#);
        let other: Value = serde_json::from_str(r#"{"a": "u", "b": [1, {"x": 1, "y": 2}]}"#).unwrap();
        assert_ne!(digest(&["tool", &canonical(&one)]), digest(&["tool", &canonical(&other)]));
        assert_ne!(digest(&["ab", "c"]), digest(&["a", "bc"]));
    }
}
