//! What a host makes of its tools: its configuration, the profiles and kits it
//! chooses from, what each tool's code can do, and what it shows of its tools and
//! lets run (SPEC §11, §12, §20, §21).
//!
//! - [`config`]: the `--config` file, read with serde, every problem located.
//! - [`profile`]: profiles and kits (SPEC §11).
//! - [`audit`]: what each tool's code can do, read from the code (SPEC §20).
//! - [`view`]: what a host shows of its tools and lets run, from the config, the
//!   profile and the policy (`crate::policy`).
//! - [`search`]: tool search over what a host shows (SPEC §21).
//! - `text_safety`: what lcp relays or says of an upstream server, kept safe.
//!
//! Must never: run a tool, or name a module of a layer above it (`export`, `runtime`,
//! `mcp`, `cli`).

pub mod audit;
pub mod config;
pub mod profile;
pub mod search;
pub(crate) mod text_safety;
pub mod view;
