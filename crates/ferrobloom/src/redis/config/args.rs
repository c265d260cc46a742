//! The module's load-time arguments (`loadmodule libferrobloom.so ARG VALUE ...`):
//! RedisBloom's, ferrobloom's `merge-max-bytes` and valkey-bloom's settings.

use std::sync::atomic::Ordering::Relaxed;

use super::{valkey, Numeric, BF_ERROR_RATE, BF_INITIAL_SIZE, CF_MAX_EXPANSIONS, MERGE_MAX_BYTES};
use crate::cmd::parse::parse_i64;

/// Applies RedisBloom's load-time arguments. Returns an error message that
/// refuses the load.
pub fn apply_module_args(args: &[&[u8]]) -> Result<(), String> {
    let args = match args {
        [b""] => &[][..],
        a => a,
    };
    if args.len() % 2 != 0 {
        return Err("module arguments must come in name/value pairs".into());
    }
    for pair in args.chunks(2) {
        let (name, value) = match pair {
            [n, v] => (*n, *v),
            _ => continue,
        };
        let lname = String::from_utf8_lossy(name).to_ascii_lowercase();
        let bad = || {
            format!(
                "bad value for module argument {lname}: {}",
                String::from_utf8_lossy(value)
            )
        };
        match lname.as_str() {
            "error_rate" | "bf-error-rate" => {
                let v = BF_ERROR_RATE.parse(value).ok_or_else(bad)?;
                BF_ERROR_RATE.bits.store(v.to_bits(), Relaxed);
            }
            "initial_size" | "bf-initial-size" => {
                set_checked(&BF_INITIAL_SIZE, value).ok_or_else(bad)?
            }
            "cf_max_expansions" | "cf-max-expansions" => {
                set_checked(&CF_MAX_EXPANSIONS, value).ok_or_else(bad)?
            }
            "merge-max-bytes" => set_checked(&MERGE_MAX_BYTES, value).ok_or_else(bad)?,
            other => match valkey::module_arg(other, value) {
                Some(Ok(())) => {}
                Some(Err(())) => return Err(bad()),
                None => return Err(format!("unknown module argument: {lname}")),
            },
        }
    }
    Ok(())
}

fn set_checked(n: &Numeric, value: &[u8]) -> Option<()> {
    let v = parse_i64(value).filter(|v| (n.min..=n.max).contains(v))?;
    n.set(v);
    Some(())
}
