//! `lcp` reads Python tool libraries without running them and turns every `tool_*`
//! function into an LLM tool schema.
//!
//! The pipeline, one module per step:
//!
//! - [`scan`]: folders and files → the tool files, in discovery order (SPEC §1).
//! - [`source`]: a file's bytes → normalised text, or why it cannot be read safely.
//! - [`extract`]: text → a [`extract::Library`] with its tools, providers, metadata and
//!   hooks (SPEC §2), using `docstring` and `schema` (SPEC §3).
//! - [`registry`]: the whole pipeline over many files, in parallel, with the
//!   first-wins rule for tool names.
//! - [`export`]: the registry in each provider's format (SPEC §4).
//! - [`default_tools`]: where the built-in tool libraries live.
//! - [`config`]: the `--config` file. [`profile`]: profiles and kits (SPEC §11).
//!   [`policy`]: declarations, grades and the host's rules (SPEC §12). [`view`]: what
//!   a host shows of its tools and lets run, from the three.
//! - [`runtime`]: running a tool in an embedded CPython when it is called, the host
//!   hooks and host-side management (SPEC §5–§6); the only code that touches pyo3.
//! - [`mcp`]: `lcp serve`, the tools over the Model Context Protocol, and the client of
//!   the MCP servers that are tool sources (SPEC §14); the only code that touches rmcp.
//! - `defined`: the config's `[[tools]]` as libraries, read by §3's rules.
//! - `testlane`: `lcp test`, each tool called once per representative payload (SPEC §13).
//! - [`search`]: tool search over what a host shows (SPEC §21).
//! - [`cli`]: the `lcp` command line (SPEC §7).
//! - `pymodule` (the `extension` feature): `lcp_tools._lcp`, lcp as the extension
//!   module of the Python package `lcp-tools` (SPEC §19; `python/lcp_tools/`).
//! - [`path_json`]: how a path (UTF-8 or not) is written in JSON, losslessly.
//!   `suggest`: the names near a name an unknown one is told.
//!
//! Every step returns its value plus [`diag::Diagnostic`]s: bad input is reported,
//! never a panic. Nothing in this crate runs Python while discovering tools: only
//! [`runtime`] does, when a tool or a prompt provider is asked for. The cargo feature
//! `python` (on by default) is what runs tools: `runtime`'s `Runtime`, `mcp` and
//! `testlane`; without it the crate discovers, checks and exports and links no Python.

#![deny(missing_docs)]

pub mod audit;
pub mod cli;
pub mod config;
pub mod default_tools;
pub mod diag;
pub(crate) mod docstring;
pub mod export;
pub mod extract;
pub mod fast_paths;
pub(crate) mod located;
#[cfg(feature = "python")]
pub mod mcp;
pub(crate) mod ordered;
pub mod path_json;
pub mod policy;
pub mod profile;
#[cfg(feature = "extension")]
mod pymodule;
pub mod registry;
pub mod runtime;
pub mod scan;
pub(crate) mod schema;
pub mod search;
pub(crate) mod shown;
pub mod source;
pub(crate) mod suggest;
mod sync;
pub(crate) mod table;
#[cfg(feature = "python")]
pub(crate) mod testlane;
pub mod text_safety;
pub mod view;
