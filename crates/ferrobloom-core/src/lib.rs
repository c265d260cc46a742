//! The pure-Rust core of ferrobloom: filters, hashing, scaling chains and their
//! encodings. Nothing in here knows about Redis; it is unit-tested with plain
//! `cargo test -p ferrobloom-core` and used by the Redis module (the `ferrobloom` crate)
//! and its fuzz targets.
//!
//! # Public API: filters outside a server
//!
//! Build a filter, add and look up items in batches, dump it to the chunks
//! `BF.SCANDUMP`/`CF.SCANDUMP` return (byte for byte the server's, for the same
//! parameters and items), load it back from chunks, merge filters, and read and
//! write the versioned file format: [`api`] lists the calls, [`file`]
//! documents the format, and `examples/local_filter.rs` runs them all
//! (`cargo run --release -p ferrobloom-core --example local_filter`).

pub mod accuracy;
pub mod api;
pub mod bits;
pub mod bloom;
pub mod cuckoo;
/// The former name of [`api`], kept for code that names it.
#[doc(hidden)]
pub use api as dump;
pub mod file;
pub mod filter;
#[cfg(test)]
#[path = "tests/fixtures.rs"]
mod fixture_tests;
pub mod hash;
mod kind;
pub mod payload;
#[cfg(test)]
#[path = "tests/plan.rs"]
mod plan_tests;
pub mod rdb;
#[cfg(test)]
#[path = "tests/readers.rs"]
mod reader_tests;
pub mod relocate;
#[cfg(test)]
#[path = "tests/relocate.rs"]
mod relocate_tests;
pub mod restore;
#[cfg(test)]
#[path = "tests/roundtrip.rs"]
mod roundtrip_tests;
/// The former name of [`accuracy`], kept for code that names it.
#[doc(hidden)]
pub use accuracy as stats;
#[cfg(test)]
#[path = "tests/rng.rs"]
pub(crate) mod test_rng;
pub mod window;
#[cfg(test)]
#[path = "tests/window_fp.rs"]
mod window_fp_tests;
