//! The module API surface command handlers use, in one import: raw access
//! (`ffi.rs`), the command context and arguments (`ctx.rs`), typed keys
//! (`key.rs`) and the server log. The modules below it import each other
//! directly, never through this one.

pub(crate) use super::ctx::{Args, Ctx};
pub(crate) use super::ffi::api;
pub(crate) use super::key::{Key, KeyState, Lookup, ModuleType};
