//! `[auth]`: who may reach `lcp serve --http` (SPEC §17). Plain data read from the
//! config file; `mcp::auth` checks requests against it.
//!
//! ```toml
//! [auth]
//! issuer = "https://auth.example.com/"        # tokens' `iss`; its RFC 8414 metadata names the JWKS
//! jwks_uri = "https://auth.example.com/jwks"  # optional: else from the issuer's metadata
//! resource = "https://tools.example.com/mcp"  # this server's URI: the tokens' `aud`
//! tokens_file = "tokens.sha256"               # optional static tokens
//! allowed_origins = ["https://app.example.com"]
//! [auth.scopes]
//! "tools:notes" = "notes"                     # a token with this scope sees profile notes
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer};

use crate::located::{Entries, Node, Reader};

/// `[auth]`, as written (relative paths taken from the config file's folder).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, expecting = "a table")]
pub struct AuthConfig {
    /// The authorization server whose tokens are accepted: their `iss`.
    #[serde(deserialize_with = "super::non_empty")]
    pub issuer: Option<String>,
    /// Where its keys are; `None`: named by its metadata.
    #[serde(deserialize_with = "super::non_empty")]
    pub jwks_uri: Option<String>,
    /// This server's resource URI: the `aud` tokens must carry.
    #[serde(deserialize_with = "super::non_empty")]
    pub resource: Option<String>,
    /// A file of hex SHA-256 digests of static tokens, one a line.
    #[serde(deserialize_with = "tokens_file")]
    pub tokens_file: Option<PathBuf>,
    /// Browser origins allowed on a public address.
    pub allowed_origins: Vec<String>,
    /// `(scope, profile)`: a token with the scope sees the profile (of a token's
    /// scopes, the first that has a line here).
    #[serde(deserialize_with = "scopes")]
    pub scopes: Vec<(String, String)>,
}

impl AuthConfig {
    /// Whether any credential is asked for.
    pub fn requires_credentials(&self) -> bool {
        self.issuer.is_some() || self.tokens_file.is_some()
    }
}

fn tokens_file<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<PathBuf>, D::Error> {
    super::non_empty(deserializer).map(|file| file.map(PathBuf::from))
}

fn scopes<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<(String, String)>, D::Error> {
    Entries::deserialize(deserializer).map(|scopes| scopes.0)
}

/// Reads `[auth]`; `base` is the folder `tokens_file` is relative to.
pub(super) fn read(node: &Node, base: &Path, mut reader: Reader<'_>) -> AuthConfig {
    let Some(mut auth) = reader.read::<AuthConfig>(node) else { return AuthConfig::default() };
    auth.tokens_file = auth.tokens_file.map(|file| base.join(file));
    if auth.issuer.is_some() && node.get("resource").is_none() {
        reader.error(
            node.at,
            "`auth.issuer` needs `auth.resource`, this server's URI, which tokens must name as their audience",
        );
    }
    if !auth.scopes.is_empty() && node.get("issuer").is_none() {
        let at = node.get("scopes").and_then(|scopes| scopes.at);
        reader.error(at, "`auth.scopes` needs `auth.issuer`: only tokens it issues carry scopes");
    }
    auth
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::located::Style;

    fn from_json(value: Value, base: &Path) -> (AuthConfig, Vec<String>) {
        let mut errors = Vec::new();
        let auth =
            read(&Node::from_json(value), base, Reader::new(Path::new("lcp.json"), Style::Is, "auth", &mut errors));
        (auth, errors.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn every_key_is_read_and_paths_are_taken_from_the_config_folder() {
        let (auth, problems) = from_json(
            json!({"issuer": "https://a.example/", "resource": "https://t.example/mcp", "tokens_file": "t.sha256",
                    "allowed_origins": ["https://app.example"], "scopes": {"tools:notes": "notes"}}),
            Path::new("/etc/lcp"),
        );
        assert_eq!(problems, Vec::<String>::new());
        assert_eq!(auth.tokens_file, Some(PathBuf::from("/etc/lcp/t.sha256")));
        assert_eq!(auth.scopes, vec![("tools:notes".to_string(), "notes".to_string())]);
        assert!(auth.requires_credentials());
    }

    #[test]
    fn wrong_values_and_an_issuer_without_a_resource_are_problems() {
        let (_, messages) =
            from_json(json!({"issuer": "https://a.example/", "nope": 1, "allowed_origins": "x"}), Path::new(""));
        assert_eq!(messages.len(), 3, "{messages:?}");
        assert!(messages[0].contains("unknown key `nope`"), "{messages:?}");
        assert!(messages[2].contains("needs `auth.resource`"), "{messages:?}");
    }
}
