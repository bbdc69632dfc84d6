//! `lcp serve --http` as an OAuth 2.1 resource server (MCP authorization, SPEC §17).
//!
//! A request carries `Authorization: Bearer TOKEN`. A static token is accepted when
//! its SHA-256 is a line of `[auth] tokens_file`; any other token must be a JWT
//! signed (RS256, ES256 or EdDSA) by a key of the issuer's JWKS, with its `iss`, `aud`
//! (this server's resource URI), `exp` and `nbf` checked. Keys are fetched when
//! first needed and again when a token names a key not seen (at most once a
//! minute); a failure to fetch them refuses the request. With `[auth.scopes]`, a
//! token's scope chooses the profile its calls see. A request's [`Caller`] is who it
//! comes from (the token's subject, else the static token's digest, else its profile)
//! and that profile: what it makes (sessions, tasks, parked calls) is bound to it. What
//! a refused request gets is a
//! 401 (or 403 for a missing scope) whose `WWW-Authenticate` names the Protected
//! Resource Metadata (RFC 9728) this server publishes.
//! Must never: let a request through when a check cannot be made.

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{JwkSet, KeyAlgorithm};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::host::config::AuthConfig;
use crate::sync;

/// The path of the Protected Resource Metadata (RFC 9728).
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";
/// How often keys may be fetched again for a token whose key is unknown.
const REFETCH_AFTER: Duration = Duration::from_secs(60);
/// How long fetching the issuer's metadata or keys may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest metadata or key set read.
const MAX_FETCHED_BYTES: u64 = 1024 * 1024;
/// Clock skew allowed on `exp` and `nbf`.
const LEEWAY_SECONDS: u64 = 30;

/// Who a request's token says it is allowed to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// Who made the request: the token's subject (`sub:…`), else the static token's
    /// digest (`token:…`), else its profile (`profile:…`); [`ANONYMOUS`] without
    /// credentials. What a caller makes (sessions, tasks, parked calls) is its own.
    pub id: String,
    /// The profile its token's scope chose (`[auth.scopes]`), if any.
    pub profile: Option<String>,
}

/// The one caller of a server that asks for no credentials.
pub const ANONYMOUS: &str = "anonymous";

impl Caller {
    /// The caller of a request without credentials (a server without `[auth]`, stdio).
    pub fn anonymous() -> Caller {
        Caller { id: ANONYMOUS.to_string(), profile: None }
    }

    /// The caller and its profile in one text: what a task or a parked call is bound to.
    pub fn key(&self) -> String {
        match &self.profile {
            Some(profile) => format!("{}\nprofile:{profile}", self.id),
            None => self.id.clone(),
        }
    }

    /// A caller whose profile is `profile` and who is known by nothing else.
    fn of_profile(profile: Option<String>) -> Caller {
        let id = format!("profile:{}", profile.as_deref().unwrap_or_default());
        Caller { id, profile }
    }
}

/// Why a request is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No token, or one that does not check out (401): the reason, for the log and
    /// the `error_description`.
    Unauthorized(String),
    /// A valid token without any scope that chooses a profile (403).
    InsufficientScope,
}

/// The checks of one server, from `[auth]`.
pub struct Gate {
    config: AuthConfig,
    /// SHA-256 digests of the static tokens.
    static_tokens: Vec<[u8; 32]>,
    keys: Mutex<Keys>,
}

#[derive(Default)]
struct Keys {
    set: Option<JwkSet>,
    fetched: Option<Instant>,
}

/// The claims lcp reads beyond those `jsonwebtoken` checks.
#[derive(Deserialize)]
struct Claims {
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    scp: Option<Vec<String>>,
}

impl Gate {
    /// The gate of `config`; the static tokens' file is read now.
    pub fn new(config: &AuthConfig) -> Result<Gate, String> {
        let static_tokens = match &config.tokens_file {
            Some(file) => read_digests(file)?,
            None => Vec::new(),
        };
        Ok(Gate { config: config.clone(), static_tokens, keys: Mutex::default() })
    }

    /// The Protected Resource Metadata document, when an issuer is configured.
    pub fn metadata(&self) -> Option<Value> {
        let (issuer, resource) = (self.config.issuer.as_ref()?, self.config.resource.as_ref()?);
        let scopes: Vec<&str> = self.config.scopes.iter().map(|(scope, _)| scope.as_str()).collect();
        Some(json!({
            "resource": resource,
            "authorization_servers": [issuer],
            "bearer_methods_supported": ["header"],
            "scopes_supported": scopes,
        }))
    }

    /// `WWW-Authenticate` for a refusal: `Bearer`, with where the metadata is and,
    /// for a token that failed, why.
    pub fn challenge(&self, refusal: &Refusal) -> String {
        let mut challenge = String::from("Bearer");
        let mut parameters = Vec::new();
        if let Some(url) = self.config.resource.as_deref().and_then(metadata_url) {
            parameters.push(format!("resource_metadata=\"{url}\""));
        }
        match refusal {
            Refusal::Unauthorized(reason) if reason != MISSING => {
                parameters.push("error=\"invalid_token\"".to_string());
                parameters.push(format!("error_description=\"{}\"", reason.replace(['"', '\\'], "'")));
            }
            Refusal::Unauthorized(_) => {}
            Refusal::InsufficientScope => {
                parameters.push("error=\"insufficient_scope\"".to_string());
                let scopes: Vec<&str> = self.config.scopes.iter().map(|(scope, _)| scope.as_str()).collect();
                parameters.push(format!("scope=\"{}\"", scopes.join(" ")));
            }
        }
        if !parameters.is_empty() {
            challenge.push(' ');
            challenge.push_str(&parameters.join(", "));
        }
        challenge
    }

    /// Checks a request's `Authorization` headers (all of them: exactly one must be
    /// there). Blocks while keys are fetched: call it on a blocking thread.
    pub fn check(&self, authorization: &[&[u8]]) -> Result<Caller, Refusal> {
        let token = match authorization {
            [] => return Err(Refusal::Unauthorized(MISSING.to_string())),
            [one] => bearer(one).ok_or_else(|| unauthorized("the Authorization header is not `Bearer TOKEN`"))?,
            _ => return Err(unauthorized("more than one Authorization header")),
        };
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if self.static_tokens.iter().any(|known| equal_in_constant_time(known, &digest)) {
            let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
            return Ok(Caller { id: format!("token:{hex}"), profile: None });
        }
        if self.config.issuer.is_none() {
            return Err(unauthorized("the token is not one of the server's tokens"));
        }
        let claims = self.verify(token)?;
        // The subject, when the token names one; else the profile alone.
        let caller = |profile: Option<String>| match claims.sub.as_deref().filter(|sub| !sub.is_empty()) {
            Some(sub) => Caller { id: format!("sub:{sub}"), profile },
            None => Caller::of_profile(profile),
        };
        if self.config.scopes.is_empty() {
            return Ok(caller(None));
        }
        let granted: Vec<&str> = match (&claims.scope, &claims.scp) {
            (Some(scope), _) => scope.split_whitespace().collect(),
            (None, Some(scp)) => scp.iter().map(String::as_str).collect(),
            (None, None) => Vec::new(),
        };
        // The token's first scope that names a profile.
        let chosen = granted.iter().find_map(|granted| self.config.scopes.iter().find(|(scope, _)| scope == granted));
        match chosen {
            Some((_, profile)) => Ok(caller(Some(profile.clone()))),
            None => Err(Refusal::InsufficientScope),
        }
    }

    /// The token's claims, once its signature, issuer, audience and times check out.
    fn verify(&self, token: &str) -> Result<Claims, Refusal> {
        let header = jsonwebtoken::decode_header(token).map_err(|err| unauthorized(&format!("not a JWT: {err}")))?;
        if !matches!(header.alg, Algorithm::RS256 | Algorithm::ES256 | Algorithm::EdDSA) {
            return Err(unauthorized(&format!(
                "the token is signed with {:?}; RS256, ES256 or EdDSA is required",
                header.alg
            )));
        }
        let key = self.key(header.kid.as_deref(), header.alg)?;
        let mut validation = Validation::new(header.alg);
        validation.leeway = LEEWAY_SECONDS;
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.set_issuer(&[self.config.issuer.as_deref().unwrap_or_default()]);
        validation.set_audience(&[self.config.resource.as_deref().unwrap_or_default()]);
        jsonwebtoken::decode::<Claims>(token, &key, &validation)
            .map(|data| data.claims)
            .map_err(|err| unauthorized(&format!("the token was refused: {err}")))
    }

    /// The issuer's key for `kid` (or its only key of that kind), fetching the key
    /// set when it was never fetched, or when the key is unknown and the last fetch
    /// is a minute old.
    fn key(&self, kid: Option<&str>, alg: Algorithm) -> Result<DecodingKey, Refusal> {
        let mut keys = sync::lock(&self.keys);
        let stale = keys.fetched.is_none_or(|at| at.elapsed() >= REFETCH_AFTER);
        let found = keys.set.as_ref().and_then(|set| pick(set, kid, alg));
        if found.is_none() && stale {
            let fetched = fetch_keys(&self.config);
            keys.fetched = Some(Instant::now());
            match fetched {
                Ok(set) => keys.set = Some(set),
                Err(err) => return Err(unauthorized(&format!("the issuer's keys cannot be had: {err}"))),
            }
        }
        let jwk = keys.set.as_ref().and_then(|set| pick(set, kid, alg)).ok_or_else(|| {
            unauthorized(&format!("no key `{}` in the issuer's key set", kid.unwrap_or("(none named)")))
        })?;
        DecodingKey::from_jwk(&jwk).map_err(|err| unauthorized(&format!("the issuer's key cannot be used: {err}")))
    }
}

/// What a request without a token is told (no `error`, as RFC 6750 asks).
const MISSING: &str = "no token";

fn unauthorized(reason: &str) -> Refusal {
    Refusal::Unauthorized(reason.to_string())
}

/// The token of `Bearer TOKEN` (the scheme in any case).
fn bearer(header: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(header).ok()?.trim();
    let (scheme, token) = text.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && !token.contains(' ')).then_some(token)
}

fn equal_in_constant_time(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |difference, (x, y)| difference | (x ^ y)) == 0
}

/// The key of `set` named `kid`, else (no `kid`) the only one usable with `alg`.
fn pick(set: &JwkSet, kid: Option<&str>, alg: Algorithm) -> Option<jsonwebtoken::jwk::Jwk> {
    match kid {
        Some(kid) => set.find(kid).cloned(),
        None => {
            let usable: Vec<_> = set.keys.iter().filter(|jwk| DecodingKey::from_jwk(jwk).is_ok()).collect();
            let fitting: Vec<_> = usable
                .into_iter()
                .filter(|jwk| jwk.common.key_algorithm.is_none_or(|key| signs_with(key, alg)))
                .collect();
            (fitting.len() == 1).then(|| fitting[0].clone())
        }
    }
}

/// Whether a key declared for `key` signs tokens of `alg` (of those lcp accepts).
fn signs_with(key: KeyAlgorithm, alg: Algorithm) -> bool {
    matches!(
        (key, alg),
        (KeyAlgorithm::RS256, Algorithm::RS256)
            | (KeyAlgorithm::ES256, Algorithm::ES256)
            | (KeyAlgorithm::EdDSA, Algorithm::EdDSA)
    )
}

/// The static tokens' digests: one hex SHA-256 a line; `#` starts a comment.
fn read_digests(file: &Path) -> Result<Vec<[u8; 32]>, String> {
    let text = crate::host::config::read_regular_file(file).map_err(|err| format!("{}: {err}", file.display()))?;
    let mut digests = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        let digest = decode_hex(line).ok_or_else(|| {
            format!(
                "{}:{}: not a hex SHA-256 (64 hex digits): a line holds a token's digest, never the token",
                file.display(),
                number + 1
            )
        })?;
        digests.push(digest);
    }
    Ok(digests)
}

fn decode_hex(text: &str) -> Option<[u8; 32]> {
    let bytes = text.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let mut digest = [0u8; 32];
    for (index, pair) in bytes.chunks(2).enumerate() {
        let high = (pair[0] as char).to_digit(16)?;
        let low = (pair[1] as char).to_digit(16)?;
        digest[index] = (high * 16 + low) as u8;
    }
    Some(digest)
}

/// Where the metadata of `resource` is published: the well-known path inserted
/// before the resource's own path (RFC 9728 §3.1).
pub fn metadata_url(resource: &str) -> Option<String> {
    let url = url::Url::parse(resource).ok()?;
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    Some(format!("{origin}{METADATA_PATH}{path}"))
}

/// The issuer's key set: from `jwks_uri`, else from the `jwks_uri` its metadata
/// (RFC 8414, then OpenID discovery) names.
///
/// Fetched with the HTTP client lcp's MCP client uses (reqwest), on a thread of its
/// own with a runtime of its own: the check that asks for the keys is synchronous,
/// and may run on `lcp serve`'s runtime.
fn fetch_keys(config: &AuthConfig) -> Result<JwkSet, String> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|err| format!("cannot fetch the issuer's keys: {err}"))?;
                runtime.block_on(fetch_keys_with(config))
            })
            .join()
            .unwrap_or_else(|_| Err("fetching the issuer's keys failed".to_string()))
    })
}

async fn fetch_keys_with(config: &AuthConfig) -> Result<JwkSet, String> {
    let agent = reqwest::Client::builder()
        .timeout(FETCH_TIMEOUT)
        .build()
        .map_err(|err| format!("cannot make an HTTP client: {err}"))?;
    let jwks_uri = match &config.jwks_uri {
        Some(uri) => uri.clone(),
        None => {
            let issuer = config.issuer.as_deref().unwrap_or_default();
            let mut last = String::new();
            let mut found = None;
            for url in discovery_urls(issuer) {
                match fetch_json(&agent, &url).await {
                    Ok(metadata) => match metadata["jwks_uri"].as_str() {
                        Some(uri) => {
                            found = Some(uri.to_string());
                            break;
                        }
                        None => last = format!("{url} names no jwks_uri"),
                    },
                    Err(err) => last = err,
                }
            }
            found.ok_or(last)?
        }
    };
    let set = fetch_json(&agent, &jwks_uri).await?;
    serde_json::from_value(set).map_err(|err| format!("{jwks_uri}: not a JWK set: {err}"))
}

/// Where an issuer's metadata may be: RFC 8414's path-inserted URL, then OpenID's.
fn discovery_urls(issuer: &str) -> Vec<String> {
    let Ok(url) = url::Url::parse(issuer) else { return Vec::new() };
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    vec![
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{}/.well-known/openid-configuration", issuer.trim_end_matches('/')),
    ]
}

/// A JSON document over HTTPS (plain HTTP only from this machine's loopback).
async fn fetch_json(agent: &reqwest::Client, url: &str) -> Result<Value, String> {
    let parsed = url::Url::parse(url).map_err(|err| format!("{url}: {err}"))?;
    let loopback = match parsed.host() {
        Some(url::Host::Domain(name)) => name == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    if parsed.scheme() != "https" && !(parsed.scheme() == "http" && loopback) {
        return Err(format!("{url}: keys are fetched over https only"));
    }
    let mut response = agent.get(url).send().await.map_err(|err| format!("{url}: {err}"))?;
    if !response.status().is_success() {
        return Err(format!("{url}: {}", response.status()));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|err| format!("{url}: {err}"))? {
        if body.len() + chunk.len() > MAX_FETCHED_BYTES as usize {
            return Err(format!("{url}: more than {MAX_FETCHED_BYTES} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&body).map_err(|err| format!("{url}: not JSON: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_url_inserts_the_well_known_path_before_the_resource_path() {
        assert_eq!(
            metadata_url("https://tools.example.com/mcp").as_deref(),
            Some("https://tools.example.com/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(
            metadata_url("http://127.0.0.1:8080/").as_deref(),
            Some("http://127.0.0.1:8080/.well-known/oauth-protected-resource")
        );
        assert_eq!(
            discovery_urls("https://auth.example.com/tenant/"),
            vec![
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant",
                "https://auth.example.com/tenant/.well-known/openid-configuration"
            ]
        );
    }

    #[test]
    fn bearer_tokens_are_read_strictly() {
        assert_eq!(bearer(b"Bearer abc"), Some("abc"));
        assert_eq!(bearer(b"bearer  abc "), Some("abc"));
        assert_eq!(bearer(b"Basic abc"), None);
        assert_eq!(bearer(b"Bearer a b"), None);
        assert_eq!(bearer(b"Bearer"), None);
    }

    #[test]
    fn static_tokens_are_digests_and_a_plain_token_in_the_file_is_refused() {
        let folder = std::env::temp_dir().join(format!("lcp-auth-{}", std::process::id()));
        std::fs::create_dir_all(&folder).unwrap();
        let file = folder.join("tokens.sha256");
        let digest: String = Sha256::digest(b"s3cret").iter().map(|b| format!("{b:02x}")).collect();
        std::fs::write(&file, format!("# ops\n{digest}\n")).unwrap();
        let config = AuthConfig { tokens_file: Some(file.clone()), ..AuthConfig::default() };
        let gate = Gate::new(&config).unwrap();
        let caller = gate.check(&[b"Bearer s3cret"]).unwrap();
        assert_eq!((caller.id.strip_prefix("token:"), caller.profile), (Some(digest.as_str()), None));
        assert!(matches!(gate.check(&[b"Bearer other"]), Err(Refusal::Unauthorized(_))));
        assert!(matches!(gate.check(&[]), Err(Refusal::Unauthorized(reason)) if reason == MISSING));
        assert!(matches!(gate.check(&[b"Bearer s3cret", b"Bearer s3cret"]), Err(Refusal::Unauthorized(_))));
        std::fs::write(&file, "s3cret\n").unwrap();
        assert!(Gate::new(&config).err().unwrap().contains("not a hex SHA-256"));
        std::fs::remove_dir_all(&folder).unwrap();
    }
}
