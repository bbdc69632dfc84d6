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

use serde_json::Value;

/// The keys of `[auth]`.
const KEYS: [&str; 6] = ["issuer", "jwks_uri", "resource", "tokens_file", "allowed_origins", "scopes"];

/// `[auth]`, as written (relative paths taken from the config file's folder).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthConfig {
    /// The authorization server whose tokens are accepted: their `iss`.
    pub issuer: Option<String>,
    /// Where its keys are; `None`: named by its metadata.
    pub jwks_uri: Option<String>,
    /// This server's resource URI: the `aud` tokens must carry.
    pub resource: Option<String>,
    /// A file of hex SHA-256 digests of static tokens, one a line.
    pub tokens_file: Option<PathBuf>,
    /// Browser origins allowed on a public address.
    pub allowed_origins: Vec<String>,
    /// `(scope, profile)`: a token with the scope sees the profile (of a token's
    /// scopes, the first that has a line here).
    pub scopes: Vec<(String, String)>,
}

impl AuthConfig {
    /// Whether any credential is asked for.
    pub fn requires_credentials(&self) -> bool {
        self.issuer.is_some() || self.tokens_file.is_some()
    }
}

/// `[auth]` from its JSON value, and the problems found as `(key, message)` (the key
/// empty for the table itself).
pub fn from_json(value: &Value, base: &Path) -> (AuthConfig, Vec<(String, String)>) {
    let mut auth = AuthConfig::default();
    let mut problems = Vec::new();
    let Value::Object(table) = value else {
        problems.push((String::new(), "`auth` must be a table".to_string()));
        return (auth, problems);
    };
    for (key, value) in table {
        let mut text = |slot: &mut Option<String>| match value {
            Value::String(text) if !text.trim().is_empty() => *slot = Some(text.trim().to_string()),
            other => problems.push((key.clone(), format!("`auth.{key}` is {other}; expected a non-empty string"))),
        };
        match key.as_str() {
            "issuer" => text(&mut auth.issuer),
            "jwks_uri" => text(&mut auth.jwks_uri),
            "resource" => text(&mut auth.resource),
            "tokens_file" => {
                let mut file = None;
                text(&mut file);
                auth.tokens_file = file.map(|file| base.join(file));
            }
            "allowed_origins" => match value.as_array() {
                Some(origins) if origins.iter().all(Value::is_string) => {
                    auth.allowed_origins = origins.iter().filter_map(Value::as_str).map(str::to_string).collect();
                }
                _ => problems.push((key.clone(), "`auth.allowed_origins` must be a list of origins".to_string())),
            },
            "scopes" => match value.as_object() {
                Some(scopes) => {
                    for (scope, profile) in scopes {
                        match profile.as_str() {
                            Some(profile) => auth.scopes.push((scope.clone(), profile.to_string())),
                            None => problems.push((
                                format!("scopes/{scope}"),
                                format!("`auth.scopes.\"{scope}\"` is {profile}; expected a profile's name"),
                            )),
                        }
                    }
                }
                None => problems.push((key.clone(), "`auth.scopes` must be a table of scope = profile".to_string())),
            },
            _ => problems.push((key.clone(), format!("unknown key `{key}`; expected one of {}", KEYS.join(", ")))),
        }
    }
    if auth.issuer.is_some() && auth.resource.is_none() {
        problems.push((
            String::new(),
            "`auth.issuer` needs `auth.resource`, this server's URI, which tokens must name as their audience"
                .to_string(),
        ));
    }
    if !auth.scopes.is_empty() && auth.issuer.is_none() {
        problems.push((
            "scopes".to_string(),
            "`auth.scopes` needs `auth.issuer`: only tokens it issues carry scopes".to_string(),
        ));
    }
    (auth, problems)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_key_is_read_and_paths_are_taken_from_the_config_folder() {
        let (auth, problems) = from_json(
            &json!({"issuer": "https://a.example/", "resource": "https://t.example/mcp", "tokens_file": "t.sha256",
                    "allowed_origins": ["https://app.example"], "scopes": {"tools:notes": "notes"}}),
            Path::new("/etc/lcp"),
        );
        assert_eq!(problems, Vec::<(String, String)>::new());
        assert_eq!(auth.tokens_file, Some(PathBuf::from("/etc/lcp/t.sha256")));
        assert_eq!(auth.scopes, vec![("tools:notes".to_string(), "notes".to_string())]);
        assert!(auth.requires_credentials());
    }

    #[test]
    fn wrong_values_and_an_issuer_without_a_resource_are_problems() {
        let (_, problems) =
            from_json(&json!({"issuer": "https://a.example/", "nope": 1, "allowed_origins": "x"}), Path::new(""));
        let messages: Vec<&str> = problems.iter().map(|(_, message)| message.as_str()).collect();
        assert_eq!(messages.len(), 3, "{messages:?}");
        assert!(messages[0].contains("unknown key `nope`"), "{messages:?}");
        assert!(messages[2].contains("needs `auth.resource`"), "{messages:?}");
    }
}
