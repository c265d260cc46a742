//! The pure-Rust core of ferrobloom: filters, hashing, scaling chains and their
//! encodings. Nothing in here knows about Redis; it is unit-tested with plain
//! `cargo test -p ferrobloom-core` and used by the Redis module (the `ferrobloom` crate)
//! and its fuzz targets.

pub mod bits;
pub mod bloom;
pub mod cuckoo;
pub mod filter;
#[cfg(test)]
#[path = "tests/fixtures.rs"]
mod fixture_tests;
pub mod hash;
pub mod payload;
pub mod rdb;
#[cfg(test)]
#[path = "tests/roundtrip.rs"]
mod roundtrip_tests;
#[cfg(test)]
#[path = "tests/rng.rs"]
pub(crate) mod test_rng;
pub mod window;
#[cfg(test)]
#[path = "tests/window_fp.rs"]
mod window_fp_tests;
