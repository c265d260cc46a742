//! ferrobloom: scalable Bloom filters and Cuckoo filters for Redis, a drop-in
//! replacement for RedisBloom's BF.* and CF.* commands.
//!
//! - `ferrobloom_core` (its own crate): the filters, hashing and encodings, in pure Rust.
//! - `ferrobloom_cmd` (its own crate, `cmd` here): argument parsing, defaults and
//!   error texts, in pure Rust, shared with the bindings.
//! - `redis`: the thin layer that registers commands and data types.

pub use ferrobloom_cmd as cmd;
// Fuzz entry points (cargo fuzz sets `cfg(fuzzing)`; `cargo test` replays the corpus).
// Never compiled into the module: their invariant checks panic on purpose.
#[cfg(any(test, fuzzing))]
#[doc(hidden)]
pub mod fuzzing;
mod redis;

/// ferrobloom's own version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The version reported in MODULE LIST: the RedisBloom API level implemented
/// (2.8.20 -> 20820), which clients compare to decide what the module supports.
pub const MODULE_VERSION: i32 = 20820;

// The module uses Redis' allocator (this is the only crate that sets one). Unit tests and
// fuzz targets (`cfg(fuzzing)`, set by cargo fuzz) run outside Redis and use the system
// allocator.
#[cfg(not(any(test, fuzzing)))]
type Allocator = redis::alloc::FerroAlloc;
#[cfg(not(any(test, fuzzing)))]
const ALLOCATOR: Allocator = redis::alloc::FerroAlloc;
#[cfg(any(test, fuzzing))]
type Allocator = std::alloc::System;
#[cfg(any(test, fuzzing))]
const ALLOCATOR: Allocator = std::alloc::System;

fn init(ctx: &redis_module::Context, args: &[redis_module::RedisString]) -> redis_module::Status {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
    match redis::guard::guard("module load", Err("panic during load".into()), || {
        redis::on_load(ctx, &args)
    }) {
        Ok(()) => redis_module::Status::Ok,
        Err(why) => {
            ctx.log_warning(&format!("ferrobloom: refusing to load: {why}"));
            redis_module::Status::Err
        }
    }
}

redis_module::redis_module! {
    name: "bf",
    version: MODULE_VERSION,
    allocator: (Allocator, ALLOCATOR),
    data_types: [],
    init: init,
}
