//! Integration tests: one module per SPEC section or concern, one test per rule,
//! each named after the rule it checks. Fixtures live in `fixtures/`, one folder
//! per behaviour.

mod support;

mod audit;
mod auth;
mod call;
mod callers;
mod cli;
mod discovery;
mod docstrings;
mod exports;
mod extraction;
mod fuzz;
#[cfg(feature = "external")]
mod gateway;
#[cfg(feature = "external")]
mod gateway_members;
mod host_objects;
mod idioms;
mod interop;
mod isolation;
mod layers;
mod mcp;
mod mcp_host;
mod members;
mod mutate;
mod new_user_serving;
mod new_user_types;
mod policy;
mod profiles;
#[cfg(feature = "external")]
mod python_package;
mod python_reference;
#[cfg(feature = "external")]
mod replicas;
mod rescan;
mod robustness;
mod runtime;
mod sandbox;
mod sandbox_escape;
mod search;
mod security;
mod sources;
mod testlane;
mod types;
mod upstream_safety;
