//! `lcp` reads Python tool libraries without running them and turns every `tool_*`
//! function into an LLM tool schema.
//!
//! One folder per layer, each naming only the layers below it (`tests/it/layers.rs`):
//!
//! - [`discovery`]: folders and files → the tool files (`scan`), their text
//!   (`source`), each file's tools, providers, metadata and hooks (`extract`, with
//!   `docstring` and `schema`), and the whole pipeline over many files with the
//!   first-wins rule for tool names (`registry`) (SPEC §1–§3).
//! - [`host`]: what a host makes of them: the `--config` file (`config`), profiles and
//!   kits (`profile`), what each tool's code can do (`audit`), what it shows and lets
//!   run (`view`), tool search (`search`) (SPEC §11, §12, §20, §21).
//! - [`export`]: the tools in each provider's format (SPEC §4).
//! - [`runtime`]: running a tool in an embedded CPython when it is called, the host
//!   hooks and host-side management (SPEC §5–§6); the only code that touches pyo3.
//! - [`mcp`]: `lcp serve`, the tools over the Model Context Protocol, and the client of
//!   the MCP servers that are tool sources (SPEC §14); the only code that touches rmcp.
//! - [`cli`]: the `lcp` command line (SPEC §7), with `lcp test` (SPEC §13).
//! - `pymodule` (the `extension` feature): `lcp_tools._lcp`, lcp as the extension
//!   module of the Python package `lcp-tools` (SPEC §19; `python/lcp_tools/`).
//!
//! Beneath them: [`policy`] (declarations, grades and the host's rules, SPEC §12),
//! [`diag`], [`path_json`] (how a path, UTF-8 or not, is written in JSON), and the
//! helpers `suggest`, `located`, `shown`, `sync`, `ordered`, `table`, [`fast_paths`].
//!
//! What a host embeds is public: the registry and its sources, the exports, the
//! view of a profile, the config (to read), the runtime's `Runtime`, `Outcome`,
//! `CallOptions`, `Catalog` and host objects, `mcp::serve` with its upstreams, and
//! the diagnostics. The rest (the sandbox, the worker's entry, admission, the schema
//! builder, the text safety of upstream servers) is the crate's own.
//!
//! Every step returns its value plus [`diag::Diagnostic`]s: bad input is reported,
//! never a panic. Nothing in this crate runs Python while discovering tools: only
//! [`runtime`] does, when a tool or a prompt provider is asked for. The cargo feature
//! `python` (on by default) is what runs tools: `runtime`'s `Runtime`, `mcp` and
//! `lcp test`; without it the crate discovers, checks and exports and links no Python.

#![deny(missing_docs)]

pub mod cli;
pub mod diag;
pub mod discovery;
pub mod export;
pub mod fast_paths;
pub mod host;
pub(crate) mod located;
#[cfg(feature = "python")]
pub mod mcp;
pub(crate) mod ordered;
pub mod path_json;
pub mod policy;
#[cfg(feature = "extension")]
mod pymodule;
pub mod runtime;
pub(crate) mod shown;
pub(crate) mod suggest;
mod sync;
pub(crate) mod table;
