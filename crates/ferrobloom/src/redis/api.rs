//! The module API surface command handlers use, in one import: the command
//! context and arguments (`ctx.rs`), module strings (`ffi.rs`) and typed keys
//! (`key.rs`), all safe. The modules below it import each other directly,
//! never through this one.

pub(crate) use super::ctx::{Args, Ctx};
pub(crate) use super::ffi::RStr;
pub(crate) use super::key::{Key, KeyState, Lookup, ModuleType};
