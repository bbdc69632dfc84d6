//! Discovery: Python tool libraries read without running them (SPEC §1–§3), the layer
//! every other stands on.
//!
//! - [`scan`]: folders and files → the tool files, in discovery order (SPEC §1).
//! - [`source`]: a file's bytes → normalised text, or why it cannot be read safely.
//! - [`extract`]: text → a [`extract::Library`] with its tools, providers, metadata and
//!   hooks (SPEC §2), using `docstring` and `schema` (SPEC §3).
//! - [`registry`]: the whole pipeline over many files, in parallel, with the
//!   first-wins rule for tool names.
//! - [`default_tools`]: where the built-in tool libraries live.
//!
//! Must never: run Python, or name a module of a layer above it (`host`, `export`,
//! `runtime`, `mcp`, `cli`): what it needs of them it takes as values.

pub mod default_tools;
pub(crate) mod docstring;
pub mod extract;
pub mod registry;
pub mod scan;
pub(crate) mod schema;
pub mod source;
