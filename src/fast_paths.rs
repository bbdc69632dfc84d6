//! The paths lcp takes only for speed, and the one switch that turns them off:
//! `LCP_SLOW_PATHS`, a comma-separated list of [`FastPath`] names (or `all`), sends
//! those calls the general way, so every fast path can be compared with the path it
//! shortens (`.ci/run` runs the runtime and MCP suites both ways).
//!
//! Owns the names and reading the variable, once per process: the switch is
//! process-wide by nature (worker processes inherit it). Never decides anything else.

use std::sync::OnceLock;

/// The environment variable listing the fast paths turned off.
pub const VARIABLE: &str = "LCP_SLOW_PATHS";

/// A path taken only because it is faster than the general one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FastPath {
    /// A tool whose parameters are plain JSON types is called from Rust with its
    /// arguments built directly (`runtime::engine`), instead of through `host.py`.
    Direct,
    /// An export (`lcp export`, `tools/list`) written around its tools' text, each
    /// schema's compact text (parameters, and output in the manifest and MCP) laid out
    /// without being parsed (`export::splice`) or, for Gemini and OpenAI's strict mode,
    /// lowered on that text (`export::text`), the manifest's and MCP's entries
    /// serialized from their types, instead of the document built whole as
    /// `serde_json` values and printed; and
    /// `tools/list` spliced into rmcp's response text (`mcp::listing`), instead of
    /// answered with rmcp's own `Tool`s.
    Splice,
}

impl FastPath {
    /// Every fast path, by its name in [`VARIABLE`].
    pub const ALL: [(&'static str, FastPath); 2] = [("direct", FastPath::Direct), ("splice", FastPath::Splice)];

    /// Whether this path is taken: it is not listed in [`VARIABLE`].
    pub fn on(self) -> bool {
        static OFF: OnceLock<Vec<FastPath>> = OnceLock::new();
        let off = OFF.get_or_init(|| {
            let listed = std::env::var(VARIABLE).unwrap_or_default();
            let (off, unknown) = parse(&listed);
            for name in unknown {
                let known: Vec<&str> = FastPath::ALL.iter().map(|(name, _)| *name).collect();
                eprintln!("lcp: {VARIABLE}: no fast path `{name}` (known: {}, or all)", known.join(", "));
            }
            off
        });
        !off.contains(&self)
    }
}

/// The paths a value of [`VARIABLE`] turns off, and the names it lists that are none.
fn parse(listed: &str) -> (Vec<FastPath>, Vec<String>) {
    let (mut off, mut unknown) = (Vec::new(), Vec::new());
    for name in listed.split(',').map(str::trim).filter(|name| !name.is_empty()) {
        if name == "all" {
            off.extend(FastPath::ALL.iter().map(|(_, path)| *path));
        } else if let Some((_, path)) = FastPath::ALL.iter().find(|(known, _)| *known == name) {
            off.push(*path);
        } else {
            unknown.push(name.to_string());
        }
    }
    (off, unknown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variable_lists_paths_by_name_or_all_and_names_none_of_others() {
        assert_eq!(parse(""), (vec![], vec![]));
        assert_eq!(parse("direct, splice"), (vec![FastPath::Direct, FastPath::Splice], vec![]));
        assert_eq!(parse("all").0, [FastPath::Direct, FastPath::Splice]);
        assert_eq!(parse("direct,forward"), (vec![FastPath::Direct], vec!["forward".to_string()]));
    }
}
