//! The thin Redis layer: argument access, replies, key lookup, the data types'
//! callbacks, configuration and command registration. Logic lives in
//! `crate::cmd` (parsing, error texts) and `ferrobloom_core` (filters, encodings).

pub mod alloc;
pub mod api;
pub mod bf;
pub mod cf;
pub mod commands;
pub mod config;
pub mod ctx;
pub mod defrag;
pub mod ffi;
pub mod guard;
pub mod handler;
pub mod info;
pub mod io;
pub mod key;
pub mod load;
pub mod membership;
pub mod merge;
pub mod reclaim;
pub mod server;
pub mod shapes;
pub mod stats;
pub mod trust;
pub mod types;
pub mod value;
pub mod window;

/// Everything OnLoad does after `RedisModule_Init`. An `Err` refuses the load
/// (the message goes to the server log).
pub fn on_load(ctx: &redis_module::Context, args: &[&[u8]]) -> Result<(), String> {
    let ctx = load::LoadCtx::new(ctx);
    guard::record_main_pid();
    server::declare_options(ctx);
    config::apply_module_args(args)?;
    types::create_types(ctx)?;
    config::register(ctx)?;
    commands::register(ctx)?;
    info::register(ctx);
    trust::watch_trust(ctx);
    ctx.log(
        c"notice",
        &format!(
            "ferrobloom {} loaded (module 'bf', API level {})",
            crate::VERSION,
            crate::MODULE_VERSION
        ),
    );
    Ok(())
}
