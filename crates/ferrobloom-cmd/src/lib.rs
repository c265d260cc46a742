//! Command-level logic that needs no Redis: argument parsing with RedisBloom's
//! syntax and the single catalogue of error replies. The Redis layer
//! (`crate::redis`) feeds it the arguments and sends what it returns; the fuzz
//! targets and unit tests call it directly.
//!
//! Dependencies point one way: `bf` and `cf` (the strict parsers) use
//! `lenient` (RedisBloom 2.x's parse); `bf` also uses `options` (the BF option
//! table) and `params` (what a BF creation is made of); `lenient` uses
//! `params`, `options` uses `params` and `format`; these and `merge` use
//! `parse` and `errors`; `parse` uses `errors`; `errors`, `format` and
//! `params` use nothing here.

pub mod bf;
pub mod cf;
pub mod cf_options;
pub mod create;
pub mod defaults;
pub mod errors;
pub mod format;
pub mod info;
pub mod lenient;
pub mod merge;
pub mod options;
pub mod params;
pub mod parse;

pub use errors::CmdError;
pub use parse::ArgList;
