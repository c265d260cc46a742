//! Command-level logic that needs no Redis: argument parsing with RedisBloom's
//! syntax and the single catalogue of error replies. The Redis layer
//! (`crate::redis`) feeds it the arguments and sends what it returns; the fuzz
//! targets and unit tests call it directly.

pub mod bf;
pub mod cf;
pub mod errors;
pub mod lenient;
pub mod merge;
pub mod parse;

pub use errors::CmdError;
pub use parse::ArgList;
